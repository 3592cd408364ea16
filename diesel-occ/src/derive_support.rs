//! The pieces the code of `#[derive(Versioned)]` names besides the public traits, so
//! that the generated code defines no helper items of its own and names no Diesel
//! internals: a column check, a bind-parameter type, and the guarded
//! `UPDATE ... RETURNING` of an entity whose token the database generates.
//! Reached through `diesel_occ::__private`; not public API.

pub use crate::sql_name::{RenderedTableName, TableName};
use diesel::QueryResult;
use diesel::connection::Connection;
use diesel::dsl::SqlTypeOf;
use diesel::expression::{AsExpression, Expression, TypedExpressionType};
use diesel::sql_types::SqlType;

/// `T` as a bind parameter of the SQL type of `Col`: the very type
/// `T: AsExpression<SqlTypeOf<Col>>` produces for the types Diesel maps (what Diesel's
/// own `AsExpression` derive names).
///
/// The SQL type comes from the column, not from `T: AsExpression<_>`, so the generated
/// types stay well-formed when `T` does not fit the column, and that mistake is reported
/// once, by [`check_column`], instead of by every statement that binds it.
pub type Bound<Col, T> = diesel::internal::derives::as_expression::Bound<SqlTypeOf<Col>, T>;

/// The value of an `Option<T>` field whose `None` leaves the column `Col` alone, in a
/// batch's `VALUES` row: [`Bound`]'s twin for
/// [`Skippable`](crate::statement::Skippable).
pub type SkippableOf<Col, T> = crate::statement::Skippable<SqlTypeOf<Col>, T>;

/// A value of type `Self` fits the column `Col`. Implemented for every type Diesel can
/// bind as the column's SQL type; its purpose is the message when one cannot.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not match the SQL type of the column `{Col}`",
    label = "this field's type does not fit its column",
    note = "use the Rust type Diesel maps the column's SQL type to, such as `i32` for \
            `Integer`, `i64` for `BigInt`, `String` for `Text` or `Option<_>` for `Nullable<_>`"
)]
pub trait ColumnValue<Col> {}

impl<T, Col> ColumnValue<Col> for T
where
    Col: Expression,
    Col::SqlType: SqlType + TypedExpressionType,
    T: AsExpression<Col::SqlType>,
{
}

/// Compiles when a field of type `T` fits its column `Col`. The derive calls it once per
/// bound column, spanned on the field's type, so a mismatch is reported there.
pub fn check_column<T: ColumnValue<Col>, Col>() {}

/// The key's parts as text, for a conflict's `key` (each part's `Debug`).
pub fn key_values(parts: &[&dyn std::fmt::Debug]) -> Vec<String> {
    parts.iter().map(|part| format!("{part:?}")).collect()
}

/// The check that a versioned entity (or a reference to it) is not also Diesel's
/// `AsChangeset`: Diesel's `save_changes` and `update(&entity).set(&entity)` would write
/// it without the token check and store the token it read, winding the row's token back.
///
/// The derive calls `<Entity as this<_>>::check()`, which resolves to the first impl for
/// every type and is ambiguous (a compile error naming this trait, which names
/// `save_checked`) when the second applies too.
#[allow(non_camel_case_types)]
pub trait versioned_entities_are_written_with_save_checked_not_AsChangeset<Refused> {
    /// Compiles for a type that is not `AsChangeset`.
    fn check() {}
}

impl<T: ?Sized> versioned_entities_are_written_with_save_checked_not_AsChangeset<()> for T {}

/// The second impl's marker: the type is Diesel's `AsChangeset`.
#[derive(Debug)]
pub struct DieselAsChangeset;

impl<T: ?Sized + diesel::query_builder::AsChangeset>
    versioned_entities_are_written_with_save_checked_not_AsChangeset<DieselAsChangeset> for T
{
}

/// Which guarded `UPDATE ... RETURNING` of an entity: [`AllFields`] for a checked save,
/// [`ChosenFields`] for a tracked save of the fields chosen at run time.
pub trait ReturningStatement<Which> {
    /// `UPDATE ... SET ... WHERE <key> AND token = <original> RETURNING token`.
    type Statement;
}

/// The checked save's `UPDATE ... RETURNING`, which writes every field.
#[derive(Debug, Clone, Copy)]
pub enum AllFields {}

/// The tracked save's `UPDATE ... RETURNING`, which writes the fields chosen at run time.
#[derive(Debug, Clone, Copy)]
pub enum ChosenFields {}

/// The guarded UPDATE of entity `E` with a database-generated token
/// (`#[occ(version, generated)]`): `UPDATE ... RETURNING token`, run with a load so the
/// token the database assigned is read back in the same statement.
///
/// Named by the entity rather than by the statement, so that a compile error about it
/// names `ReturningUpdate<Document>`, not the whole statement type. It is not a Diesel
/// query of its own: only `GuardedUpdate` runs it, so a code
/// path that would ignore the returned token does not compile.
pub struct ReturningUpdate<E: ReturningStatement<W>, W = AllFields>(E::Statement);

impl<E: ReturningStatement<W>, W> ReturningUpdate<E, W> {
    /// Wraps `UPDATE ... RETURNING token`.
    pub fn new(statement: E::Statement) -> Self {
        ReturningUpdate(statement)
    }

    /// The wrapped statement.
    pub fn into_inner(self) -> E::Statement {
        self.0
    }
}

impl<E: ReturningStatement<W>, W> std::fmt::Debug for ReturningUpdate<E, W>
where
    E::Statement: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ReturningUpdate").field(&self.0).finish()
    }
}

impl<E: ReturningStatement<W>, W> Clone for ReturningUpdate<E, W>
where
    E::Statement: Clone,
{
    fn clone(&self) -> Self {
        ReturningUpdate(self.0.clone())
    }
}

/// A backend that reads a generated token back with `RETURNING` on a blocking
/// connection: PostgreSQL only.
///
/// The bound that rejects any other backend sits on the backend alone, so that saving
/// such an entity on MySQL or SQLite fails with this message, once, instead of with
/// Diesel's "`ReturningClause` is no valid SQL fragment" and the statement's type.
#[diagnostic::on_unimplemented(
    message = "this checked UPDATE cannot run on `{Conn}`",
    label = "not a guarded UPDATE for this connection",
    note = "an entity with `#[occ(version, generated)]` reads its new token back with RETURNING, \
            which diesel-occ supports on PostgreSQL only; on MySQL and SQLite let the \
            application assign the token (an integer or UUID `#[occ(version)]`)"
)]
pub trait ReturnsToken<E: ReturningStatement<W>, W, Conn, Tok> {
    /// Runs the statement and returns the tokens of the rows it wrote.
    fn load_tokens(statement: E::Statement, conn: &mut Conn) -> QueryResult<Vec<Tok>>;
}

#[cfg(feature = "postgres")]
impl<E, W, Conn, Tok> ReturnsToken<E, W, Conn, Tok> for diesel::pg::Pg
where
    E: ReturningStatement<W>,
    Conn: Connection<Backend = diesel::pg::Pg>,
    E::Statement:
        diesel::query_dsl::RunQueryDsl<Conn> + diesel::query_dsl::LoadQuery<'static, Conn, Tok>,
{
    fn load_tokens(statement: E::Statement, conn: &mut Conn) -> QueryResult<Vec<Tok>> {
        diesel::query_dsl::RunQueryDsl::load(statement, conn)
    }
}

impl<E, W, Conn, Tok> crate::statement::GuardedUpdate<Conn, Tok> for ReturningUpdate<E, W>
where
    E: ReturningStatement<W>,
    Conn: Connection,
    Conn::Backend: ReturnsToken<E, W, Conn, Tok>,
{
    fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        let mut rows = <Conn::Backend as ReturnsToken<E, W, Conn, Tok>>::load_tokens(self.0, conn)?;
        let written = rows.len();
        Ok((written, rows.pop().unwrap_or(fresh)))
    }
}

/// A checked save with a caller's predicate narrows the entity's `UPDATE ... RETURNING`
/// into the generic wrapper: the statement's type then depends on the predicate.
impl<E, W, Predicate> crate::statement::Narrow<Predicate> for ReturningUpdate<E, W>
where
    E: ReturningStatement<W>,
    E::Statement: diesel::query_dsl::methods::FilterDsl<Predicate>,
{
    type Output = crate::statement::GeneratedUpdate<diesel::dsl::Filter<E::Statement, Predicate>>;

    fn narrow(self, predicate: Predicate) -> Self::Output {
        crate::statement::GeneratedUpdate::new(diesel::query_dsl::methods::FilterDsl::filter(
            self.0, predicate,
        ))
    }
}

/// The SQL names of the derived entity's table, with its schema (`app.stock`): Diesel's
/// rendering of the table, so `#[sql_name]` and a schema in `table!` are honoured;
/// `rust_name` if Diesel renders it in an unexpected form. The derive keeps them in a
/// `static` of the entity's.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub fn render_table_name<T: crate::sql_name::SqlTable>(
    rust_name: &'static str,
) -> RenderedTableName {
    let rendered = T::sql_names().map(|(schema, table, _keys)| (schema, table));
    RenderedTableName::new(rendered, rust_name)
}

/// Without a backend feature no backend renders the table here: its Rust name.
#[cfg(not(any(feature = "postgres", feature = "mysql", feature = "sqlite")))]
pub fn render_table_name<T>(rust_name: &'static str) -> RenderedTableName {
    RenderedTableName::new(None, rust_name)
}
