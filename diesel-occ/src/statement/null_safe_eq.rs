//! [`NullSafeEq`]: `a IS NOT DISTINCT FROM b`, the comparison of a check column
//! (`#[occ(check)]`) with the value that was read, true when both are NULL.

use diesel::backend::Backend;
use diesel::expression::{AppearsOnTable, Expression, ValidGrouping, is_aggregate};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::Bool;
use diesel::{QueryResult, SelectableExpression};

use crate::dialect::Dialect;

/// `left IS NOT DISTINCT FROM right`: equal, or both NULL. Each backend spells it its
/// own way: `IS NOT DISTINCT FROM` on PostgreSQL, `<=>` on MySQL and MariaDB, `IS` on
/// SQLite. A plain `=` is never true when a side is NULL, so a check column that was
/// NULL when read would make every checked write conflict.
///
/// `#[derive(Versioned)]` compares each check column of a versionless entity this way
/// (a non-null column too), through a predicate that writes this operator and, on
/// SQLite, also matches the other text forms of a timestamp value, as a timestamp
/// token's predicate does.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::dsl::sql;
/// use diesel::sql_types::{Integer, Nullable};
/// use diesel_occ::statement::NullSafeEq;
///
/// # fn main() -> diesel::QueryResult<()> {
/// let mut conn = connection();
/// let null = || sql::<Nullable<Integer>>("NULL");
/// let one = || sql::<Nullable<Integer>>("1");
/// let both_null: bool = diesel::select(NullSafeEq::new(null(), null())).get_result(&mut conn)?;
/// let one_null: bool = diesel::select(NullSafeEq::new(one(), null())).get_result(&mut conn)?;
/// assert_eq!((both_null, one_null), (true, false));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NullSafeEq<L, R> {
    left: L,
    right: R,
}

impl<L, R> NullSafeEq<L, R>
where
    L: Expression,
    R: Expression<SqlType = L::SqlType>,
{
    /// The predicate `left IS NOT DISTINCT FROM right`.
    pub fn new(left: L, right: R) -> Self {
        NullSafeEq { left, right }
    }
}

impl<L, R> Expression for NullSafeEq<L, R> {
    type SqlType = Bool;
}

impl<L, R, QS> AppearsOnTable<QS> for NullSafeEq<L, R>
where
    L: AppearsOnTable<QS>,
    R: AppearsOnTable<QS>,
{
}

impl<L, R, QS> SelectableExpression<QS> for NullSafeEq<L, R>
where
    L: SelectableExpression<QS>,
    R: SelectableExpression<QS>,
{
}

impl<L, R> ValidGrouping<()> for NullSafeEq<L, R> {
    type IsAggregate = is_aggregate::Never;
}

/// A connection has one backend, so one operator: the type identifies the text.
impl<L: QueryId, R: QueryId> QueryId for NullSafeEq<L, R> {
    type QueryId = NullSafeEq<L::QueryId, R::QueryId>;
    const HAS_STATIC_QUERY_ID: bool = L::HAS_STATIC_QUERY_ID && R::HAS_STATIC_QUERY_ID;
}

/// The operator on `DB`; the SQL standard's where the backend is not one of ours.
pub(super) fn operator<DB: 'static>() -> &'static str {
    match Dialect::of::<DB>() {
        Some(Dialect::Mysql) => " <=> ",
        Some(Dialect::Sqlite) => " IS ",
        Some(Dialect::Postgres) | None => " IS NOT DISTINCT FROM ",
    }
}

/// One impl for every backend, as for `TokenEq`, so that code generic over the backend
/// (Diesel's `MultiConnection`) compiles; the backend is recognised by its type.
impl<L, R, DB> QueryFragment<DB> for NullSafeEq<L, R>
where
    DB: Backend + 'static,
    L: QueryFragment<DB>,
    R: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_sql("(");
        self.left.walk_ast(out.reborrow())?;
        out.push_sql(operator::<DB>());
        self.right.walk_ast(out.reborrow())?;
        out.push_sql(")");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use diesel::debug_query;
    use diesel::dsl::sql;
    use diesel::sql_types::{Integer, Nullable};

    use super::NullSafeEq;

    type Side = diesel::expression::SqlLiteral<Nullable<Integer>>;

    fn predicate() -> NullSafeEq<Side, Side> {
        NullSafeEq::new(sql("a"), sql("b"))
    }

    #[test]
    fn each_backend_gets_its_own_null_safe_operator() {
        let pg = debug_query::<diesel::pg::Pg, _>(&predicate()).to_string();
        let mysql = debug_query::<diesel::mysql::Mysql, _>(&predicate()).to_string();
        let sqlite = debug_query::<diesel::sqlite::Sqlite, _>(&predicate()).to_string();
        assert!(pg.starts_with("(a IS NOT DISTINCT FROM b)"), "{pg}");
        assert!(mysql.starts_with("(a <=> b)"), "{mysql}");
        assert!(sqlite.starts_with("(a IS b)"), "{sqlite}");
    }
}
