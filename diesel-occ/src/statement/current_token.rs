//! [`CurrentToken`]: the read that classifies a zero-row write.

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};

use crate::dialect::Dialect;

/// The classifying read of a zero-row write: `SELECT token FROM t WHERE <key>`, with a
/// shared row lock on PostgreSQL (`FOR SHARE`) and MySQL (`LOCK IN SHARE MODE`) when
/// `lock` is set.
///
/// Inside a REPEATABLE READ transaction a plain SELECT reads the transaction's snapshot,
/// while the UPDATE that matched nothing read the latest committed row: the snapshot's
/// token can be the very token the caller expected. A locking read returns the latest
/// committed row on MySQL, and on PostgreSQL fails with a serialization failure when
/// the row changed after the snapshot (transient: a retry restarts the transaction).
/// SQLite has no row locks and needs none: its writer sees the latest row.
///
/// It appears in the bounds of the checked operations
/// (`CurrentToken<T::TokenQuery>: LoadQuery<..>`), which code generic over the
/// connection or the entity repeats; it is never built outside this crate.
#[derive(Debug, Clone, Copy)]
pub struct CurrentToken<Q> {
    query: Q,
    lock: bool,
}

impl<Q> CurrentToken<Q> {
    pub(crate) fn new(query: Q, lock: bool) -> Self {
        CurrentToken { query, lock }
    }
}

/// The locking clause `CurrentToken` appends on `DB`: empty where there is none.
fn locking_clause<DB: 'static>() -> &'static str {
    match Dialect::of::<DB>() {
        Some(Dialect::Postgres) => " FOR SHARE",
        // MariaDB does not accept MySQL 8's `FOR SHARE`; both accept this.
        Some(Dialect::Mysql) => " LOCK IN SHARE MODE",
        Some(Dialect::Sqlite) | None => "",
    }
}

impl<Q: Query> Query for CurrentToken<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, DB> QueryFragment<DB> for CurrentToken<Q>
where
    DB: Backend + 'static,
    Q: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.query.walk_ast(pass.reborrow())?;
        if self.lock {
            pass.push_sql(locking_clause::<DB>());
        }
        Ok(())
    }
}

impl<Q> QueryId for CurrentToken<Q> {
    // The SQL depends on `lock`: cached by its text, not by type.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q, Conn> RunQueryDsl<Conn> for CurrentToken<Q> {}

#[cfg(test)]
mod tests {
    use diesel::mysql::Mysql;
    use diesel::pg::Pg;
    use diesel::sqlite::Sqlite;
    use diesel::{QueryDsl, debug_query};

    use super::CurrentToken;

    diesel::table! { stock (id) { id -> Integer, version -> Integer } }

    macro_rules! sql {
        ($db:ty) => {
            debug_query::<$db, _>(&CurrentToken::new(
                stock::table.find(1).select(stock::version),
                true,
            ))
            .to_string()
        };
    }

    /// The lock that makes a REPEATABLE READ transaction see the latest committed token
    /// is chosen by the backend type alone: this build has every backend's types,
    /// whichever of our features are on.
    #[test]
    fn the_classifying_read_locks_by_the_backend_type() {
        let (pg, mysql, sqlite) = (sql!(Pg), sql!(Mysql), sql!(Sqlite));
        assert!(pg.ends_with(" FOR SHARE -- binds: [1]"), "{pg}");
        assert!(
            mysql.ends_with(" LOCK IN SHARE MODE -- binds: [1]"),
            "{mysql}"
        );
        assert!(sqlite.ends_with("= ?) -- binds: [1]"), "{sqlite}");
    }
}
