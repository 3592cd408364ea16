//! [`GuardedUpdate`]: how a guarded UPDATE runs on an async connection and reports what
//! it wrote.

use std::future::Future;

use diesel::query_builder::UpdateStatement;
use diesel::{QueryResult, QuerySource};
use diesel_async::AsyncConnection;
use diesel_async::methods::{ExecuteDsl, LoadQuery};

use crate::statement::{BatchUpdates, MAX_UPDATES_PER_STATEMENT, count_written, one_statement};

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

    /// Runs the statements of a batch save, in the batch's transaction: the twin of
    /// the blocking `GuardedUpdate::run_guarded_batch`. One statement after the other
    /// unless the implementation can do better ([`CachedUpdate`] on PostgreSQL: one
    /// statement for the whole batch).
    ///
    /// [`CachedUpdate`]: crate::statement::CachedUpdate
    #[doc(hidden)]
    fn run_guarded_batch(
        batch: Vec<(Self, Tok)>,
        conn: &mut Conn,
        distinct: impl FnOnce() -> bool + Send,
    ) -> impl Future<Output = QueryResult<Vec<(usize, Tok)>>> + Send
    where
        Self: Sized + Send,
        Tok: Send,
        Conn: AsyncConnection,
    {
        let _ = distinct;
        one_by_one(batch, conn)
    }
}

/// The statements of a batch, one after the other.
async fn one_by_one<S, Conn, Tok>(
    batch: Vec<(S, Tok)>,
    conn: &mut Conn,
) -> QueryResult<Vec<(usize, Tok)>>
where
    S: GuardedUpdate<Conn, Tok> + Send,
    Tok: Send,
    Conn: AsyncConnection,
{
    let mut written = Vec::with_capacity(batch.len());
    for (statement, fresh) in batch {
        written.push(statement.run_guarded(conn, fresh).await?);
    }
    Ok(written)
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
    Conn::Backend: 'static,
    Tok: Send,
    Self: ExecuteDsl<Conn> + Send + 'static,
    BatchUpdates<Self>: LoadQuery<'static, Conn, i32>,
{
    async fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        Ok((ExecuteDsl::execute(self, conn).await?, fresh))
    }

    /// On PostgreSQL, one statement per 64 entities (see the blocking impl).
    async fn run_guarded_batch(
        batch: Vec<(Self, Tok)>,
        conn: &mut Conn,
        distinct: impl FnOnce() -> bool + Send,
    ) -> QueryResult<Vec<(usize, Tok)>> {
        if !(one_statement::<Conn::Backend>(batch.len()) && distinct()) {
            return one_by_one(batch, conn).await;
        }
        let (statements, fresh): (Vec<Self>, Vec<Tok>) = batch.into_iter().unzip();
        let mut written = vec![0; statements.len()];
        let mut statements = statements.into_iter();
        for part in written.chunks_mut(MAX_UPDATES_PER_STATEMENT) {
            let chunk: Vec<Self> = statements.by_ref().take(part.len()).collect();
            let positions: Vec<i32> =
                diesel_async::RunQueryDsl::load(BatchUpdates::new(chunk), conn).await?;
            count_written(part, &positions);
        }
        Ok(written.into_iter().zip(fresh).collect())
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
