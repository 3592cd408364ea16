//! `GuardedUpdate`: how a guarded UPDATE runs on an async connection and reports what
//! it wrote.

use std::future::Future;

use diesel::query_builder::UpdateStatement;
use diesel::{QueryResult, QuerySource};
use diesel_async::AsyncConnection;
use diesel_async::methods::ExecuteDsl;

use crate::derive_support::{ReturningStatement, ReturningUpdate};

/// A guarded UPDATE on an async connection: the twin of
/// [`diesel_occ::statement::GuardedUpdate`](crate::statement::GuardedUpdate). Runs it and says how many rows
/// it wrote and which token they hold now.
#[diagnostic::on_unimplemented(
    message = "this checked UPDATE cannot run on `{Conn}`",
    label = "not a guarded UPDATE for this connection",
    note = "an entity with `#[occ(version, generated)]` reads its new token back with RETURNING, \
            which diesel-occ supports on PostgreSQL only; on MySQL and SQLite let the \
            application assign the token (an integer or UUID `#[occ(version)]`)"
)]
pub trait GuardedUpdate<Conn, Tok> {
    /// Runs the statement: the number of rows written, and the token they now hold
    /// (`fresh` when nothing came back).
    fn run_guarded(
        self,
        conn: &mut Conn,
        fresh: Tok,
    ) -> impl Future<Output = QueryResult<(usize, Tok)>> + Send;
}

impl<T, U, V, Conn, Tok> GuardedUpdate<Conn, Tok> for UpdateStatement<T, U, V>
where
    T: QuerySource,
    Conn: AsyncConnection,
    Tok: Send,
    Self: ExecuteDsl<Conn> + Send,
{
    async fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        Ok((ExecuteDsl::execute(self, conn).await?, fresh))
    }
}

impl<Target, Changes, Conn, Tok> GuardedUpdate<Conn, Tok>
    for crate::statement::CachedUpdate<Target, Changes>
where
    Target: diesel::query_builder::IntoUpdateTarget,
    Changes: diesel::query_builder::AsChangeset,
    Conn: AsyncConnection,
    Tok: Send,
    Self: ExecuteDsl<Conn> + Send + 'static,
{
    async fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        Ok((ExecuteDsl::execute(self, conn).await?, fresh))
    }
}

/// PostgreSQL only, as the blocking impl.
#[cfg(feature = "postgres")]
impl<S, Conn, Tok> GuardedUpdate<Conn, Tok> for crate::statement::GeneratedUpdate<S>
where
    Conn: AsyncConnection<Backend = diesel::pg::Pg>,
    Tok: Send + 'static,
    S: diesel_async::methods::LoadQuery<'static, Conn, Tok> + Send + 'static,
{
    async fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        let mut rows: Vec<Tok> = diesel_async::RunQueryDsl::load(self.into_inner(), conn).await?;
        let written = rows.len();
        Ok((written, rows.pop().unwrap_or(fresh)))
    }
}

/// The async twin of [`ReturnsToken`](crate::__private::ReturnsToken): a backend that
/// reads a generated token back with `RETURNING`, PostgreSQL only.
#[diagnostic::on_unimplemented(
    message = "this checked UPDATE cannot run on `{Conn}`",
    label = "not a guarded UPDATE for this connection",
    note = "an entity with `#[occ(version, generated)]` reads its new token back with \
            RETURNING, which diesel-occ supports on PostgreSQL only; on MySQL and SQLite \
            let the application assign the token (an integer or UUID `#[occ(version)]`)"
)]
pub trait ReturnsTokenAsync<E: ReturningStatement<W>, W, Conn, Tok> {
    /// Runs the statement and returns the tokens of the rows it wrote.
    fn load_tokens(
        statement: E::Statement,
        conn: &mut Conn,
    ) -> impl Future<Output = QueryResult<Vec<Tok>>> + Send;
}

#[cfg(feature = "postgres")]
impl<E, W, Conn, Tok> ReturnsTokenAsync<E, W, Conn, Tok> for diesel::pg::Pg
where
    E: ReturningStatement<W>,
    Conn: AsyncConnection<Backend = diesel::pg::Pg>,
    Tok: Send + 'static,
    E::Statement: diesel_async::methods::LoadQuery<'static, Conn, Tok> + Send + 'static,
{
    async fn load_tokens(statement: E::Statement, conn: &mut Conn) -> QueryResult<Vec<Tok>> {
        diesel_async::RunQueryDsl::load(statement, conn).await
    }
}

/// The derived entity's `UPDATE ... RETURNING`: the token the database assigned.
impl<E, W, Conn, Tok> GuardedUpdate<Conn, Tok> for ReturningUpdate<E, W>
where
    E: ReturningStatement<W>,
    E::Statement: Send,
    Conn: AsyncConnection,
    Conn::Backend: ReturnsTokenAsync<E, W, Conn, Tok>,
    Tok: Send,
{
    async fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        let mut rows = <Conn::Backend as ReturnsTokenAsync<E, W, Conn, Tok>>::load_tokens(
            self.into_inner(),
            conn,
        )
        .await?;
        let written = rows.len();
        Ok((written, rows.pop().unwrap_or(fresh)))
    }
}
