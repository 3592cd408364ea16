//! The async twins of what comes after the conflict: tracked saves and merge, batch
//! saves, force increment and checked soft delete, with the same names, statements,
//! semantics and errors as the blocking [`TrackedDsl`](crate::TrackedDsl),
//! [`BatchDsl`](crate::BatchDsl) and [`AggregateDsl`](crate::AggregateDsl).

use std::future::Future;

use diesel::associations::HasTable;
use diesel::dsl::{AsSelect, Select};
use diesel::query_builder::{AsChangeset, AsQuery, IntoUpdateTarget, QueryId, UpdateStatement};
use diesel::query_dsl::methods::SelectDsl;
use diesel::{QueryResult, QuerySource, Selectable, Table};
use diesel_async::AsyncConnection;
use diesel_async::methods::{ExecuteDsl, LoadQuery};

use super::transaction::OpenTransaction;
use super::{CheckedDsl, classify, settle, usable};
use crate::batch::BatchConflict;
use crate::checked::{self, CurrentToken};
use crate::error::{ConflictState, Error, InvalidToken, Operation};
use crate::parts::VersionedParts;
use crate::tracked::{SaveOutcome, Tracked, Tracking};
use crate::versioned::Versioned;

/// A guarded UPDATE on an async connection: the twin of
/// [`diesel_occ::GuardedUpdate`](crate::GuardedUpdate). Runs it and says how many rows
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

impl<Target, Changes, Conn, Tok> GuardedUpdate<Conn, Tok> for crate::CachedUpdate<Target, Changes>
where
    Target: diesel::query_builder::IntoUpdateTarget,
    Changes: diesel::query_builder::AsChangeset,
    Conn: AsyncConnection,
    Tok: Send,
    Self: ExecuteDsl<Conn> + Send,
{
    async fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        Ok((ExecuteDsl::execute(self, conn).await?, fresh))
    }
}

/// PostgreSQL only, as the blocking impl.
#[cfg(feature = "postgres")]
impl<S, Conn, Tok> GuardedUpdate<Conn, Tok> for crate::parts::GeneratedUpdate<S>
where
    Conn: AsyncConnection<Backend = diesel::pg::Pg>,
    Tok: Send + 'static,
    S: LoadQuery<'static, Conn, Tok> + Send + 'static,
{
    async fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        let mut rows: Vec<Tok> = diesel_async::RunQueryDsl::load(self.into_inner(), conn).await?;
        let written = rows.len();
        Ok((written, rows.pop().unwrap_or(fresh)))
    }
}

/// Checked saves of a [`Tracked`] entity on an async connection: the twin of the
/// blocking [`TrackedDsl`](crate::TrackedDsl), with the same names and semantics.
///
/// ```
/// # include!("../tracked_doctest_setup.rs");
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
/// use diesel_occ::{SaveOutcome, Tracked};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut conn: SyncConnectionWrapper<SqliteConnection> = SyncConnectionWrapper::new(connection());
/// let mut mine = Tracked::new(Article::find(&mut conn, 1).await?);
/// let mut theirs = Tracked::new(Article::find(&mut conn, 1).await?);
/// theirs.body = "Their body".into();
/// theirs.save_checked(&mut conn).await?;
///
/// mine.title = "My title".into();
/// let outcome = mine.save_merging(&mut conn).await?;
/// assert!(matches!(outcome, SaveOutcome::Merged { .. }));
/// assert_eq!(mine.version, 3);
/// # Ok(())
/// # }
/// ```
pub trait TrackedDsl<Conn: AsyncConnection> {
    /// The tracked entity.
    type Entity: Tracking;

    /// Writes the fields edited since the values were read, and a fresh token, in one
    /// statement. See [`crate::TrackedDsl::save_checked`].
    fn save_checked(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;

    /// Loads the row as it is now, typed; [`Error::NotFound`] when it was deleted.
    fn load_current(
        &self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<Self::Entity, Error>> + Send;

    /// Saves, and on a stale-token conflict merges non-overlapping edits onto the
    /// current row and saves once more. See [`crate::TrackedDsl::save_merging`].
    fn save_merging(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<SaveOutcome<Self::Entity>, Error>> + Send;
}

impl<T, Conn> TrackedDsl<Conn> for Tracked<T>
where
    T: Tracking + Clone + Selectable<Conn::Backend> + Send + Sync + 'static,
    Conn: AsyncConnection,
    T::FieldsUpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
    T::SelectExpression: QueryId,
    T::FindQuery: SelectDsl<AsSelect<T, Conn::Backend>>,
    Select<T::FindQuery, AsSelect<T, Conn::Backend>>: LoadQuery<'static, Conn, T> + Send + 'static,
{
    type Entity = T;

    fn save_checked(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        let fields = self.fields_to_write();
        let prepared = self.fresh_token().map(|fresh| {
            (
                self.current().fields_update_statement(fields, &fresh),
                fresh,
            )
        });
        async move {
            let (statement, fresh) = prepared?;
            usable(conn)?;
            let (affected, fresh) = statement.run_guarded(conn, fresh).await?;
            let expected = self.original().token().clone();
            settle::<T, Conn>(conn, self.key(), &expected, Operation::Update, affected).await?;
            self.saved(fresh);
            Ok(())
        }
    }

    fn load_current(&self, conn: &mut Conn) -> impl Future<Output = Result<T, Error>> + Send {
        <T as CheckedDsl<Conn>>::find(conn, self.key())
    }

    async fn save_merging(&mut self, conn: &mut Conn) -> Result<SaveOutcome<T>, Error> {
        let conflict = match TrackedDsl::save_checked(self, conn).await {
            Ok(()) => return Ok(SaveOutcome::Saved),
            Err(Error::Conflict(conflict))
                if matches!(conflict.state(), ConflictState::Stale { .. }) =>
            {
                conflict
            }
            Err(error) => return Err(error),
        };
        let theirs = match TrackedDsl::load_current(self, conn).await {
            Ok(theirs) => theirs,
            Err(Error::NotFound(_)) => return Err(conflict.into()),
            Err(error) => return Err(error),
        };
        match self.merge(theirs) {
            Ok(theirs) => {
                TrackedDsl::save_checked(self, conn).await?;
                Ok(SaveOutcome::Merged { theirs })
            }
            Err(overlap) => Ok(SaveOutcome::Overlap(overlap)),
        }
    }
}

/// Batch saves on an async connection: the twin of the blocking
/// [`BatchDsl`](crate::BatchDsl). Several entities in one transaction, one UPDATE each,
/// all or nothing, and [`Error::Batch`] naming every stale or deleted entity.
///
/// Dropping the future while its transaction is open (a timeout, a client that went
/// away) cannot roll it back: no statement can run in a destructor. It marks the
/// connection's transaction manager broken instead, so the connection fails loudly
/// rather than writing into a transaction that will never commit: every later checked
/// write and every `transaction` on it returns [`Error::Database`], and a diesel-async
/// pool closes it instead of handing it out. Drop the connection; closing it makes the
/// server roll the batch back.
///
/// ```
/// # include!("../tracked_doctest_setup.rs");
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn: SyncConnectionWrapper<SqliteConnection> = SyncConnectionWrapper::new(connection());
/// let mut batch = vec![Stock::find(&mut conn, 1).await?, Stock::find(&mut conn, 2).await?];
/// batch[0].available -= 1;
/// batch[1].available -= 1;
/// batch.save_all_checked(&mut conn).await?;
/// assert_eq!((batch[0].version, batch[1].version), (2, 2));
/// # Ok(())
/// # }
/// ```
pub trait BatchDsl<Conn: AsyncConnection> {
    /// See [`crate::BatchDsl::save_all_checked`].
    fn save_all_checked(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

impl<T, Conn> BatchDsl<Conn> for [T]
where
    T: Versioned + Send + Sync,
    Conn: AsyncConnection,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    async fn save_all_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
        usable(conn)?;
        // Dropped before it ends, the guard marks the connection broken.
        let mut open = OpenTransaction::begin(conn).await?;
        let outcome = write_all(&*self, open.conn()).await;
        let fresh = match outcome {
            Ok(fresh) => {
                open.commit().await?;
                fresh
            }
            Err(error) => {
                open.rollback().await?;
                return Err(error);
            }
        };
        for (entity, fresh) in self.iter_mut().zip(fresh) {
            entity.set_token(fresh);
            checked::trace_written(entity, Operation::Update);
        }
        Ok(())
    }
}

/// Every guarded UPDATE of a batch, inside its transaction: the fresh tokens, or the
/// conflicts of every stale or deleted entity.
async fn write_all<T, Conn>(entities: &[T], conn: &mut Conn) -> Result<Vec<T::Token>, Error>
where
    T: Versioned + Send + Sync,
    Conn: AsyncConnection,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    let mut fresh_tokens = Vec::with_capacity(entities.len());
    let mut conflicts = Vec::new();
    for (index, entity) in entities.iter().enumerate() {
        let fresh = entity.fresh_token()?;
        let statement = entity.update_statement(&fresh);
        let (affected, fresh) = statement.run_guarded(conn, fresh).await?;
        let key = entity.key();
        if checked::written_key::<T>(&key, affected)? {
            fresh_tokens.push(fresh);
        } else {
            match classify::<T, Conn>(key, entity.token(), Operation::Update, conn).await {
                Error::Conflict(conflict) => conflicts.push((index, conflict)),
                error => return Err(error),
            }
        }
    }
    if conflicts.is_empty() {
        Ok(fresh_tokens)
    } else {
        Err(Error::Batch(BatchConflict::new(entities.len(), conflicts)))
    }
}

/// Checked writes of the token alone or of a deleted marker, on an async connection:
/// the twin of the blocking [`AggregateDsl`](crate::AggregateDsl).
///
/// ```
/// # include!("../tracked_doctest_setup.rs");
/// use diesel::ExpressionMethods;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn: SyncConnectionWrapper<SqliteConnection> = SyncConnectionWrapper::new(connection());
/// let mut order = Stock::find(&mut conn, 1).await?;
/// order.force_increment(&mut conn).await?;
/// order.soft_delete_checked(&mut conn, stock::deleted.eq(true)).await?;
/// assert_eq!(order.version, 3);
/// assert!(Stock::find(&mut conn, 1).await?.deleted);
/// # Ok(())
/// # }
/// ```
pub trait AggregateDsl<Conn: AsyncConnection>: VersionedParts {
    /// `UPDATE t SET token = <fresh> WHERE <key> AND token = <original>`. See
    /// [`crate::AggregateDsl::force_increment`].
    fn force_increment(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send
    where
        Self: Send,
        Self::Guarded: IntoUpdateTarget,
        <Self::Guarded as HasTable>::Table: Table,
        Self::TokenAssignment: AsChangeset<Target = <Self::Guarded as HasTable>::Table>,
        diesel::dsl::Update<Self::Guarded, Self::TokenAssignment>:
            AsQuery + ExecuteDsl<Conn> + Send,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
        Self::TokenQuery: Send + 'static,
    {
        let prepared = self.fresh_token().map(|fresh| {
            let statement = diesel::update(self.guarded()).set(Self::token_assignment(&fresh));
            (statement, fresh)
        });
        guarded_write(self, conn, prepared, Operation::ForceIncrement)
    }

    /// `UPDATE t SET <marker>, token = <fresh> WHERE <key> AND token = <original>`. See
    /// [`crate::AggregateDsl::soft_delete_checked`].
    /// `marker` never assigns or reads the token column: a compile error, as there.
    fn soft_delete_checked<M>(
        &mut self,
        conn: &mut Conn,
        marker: M,
    ) -> impl Future<Output = Result<(), Error>> + Send
    where
        Self: Send,
        Self::Guarded: IntoUpdateTarget,
        <Self::Guarded as HasTable>::Table: Table,
        M: crate::NoTokenAssignment<Self::TokenColumn>,
        (M, Self::TokenAssignment): AsChangeset<Target = <Self::Guarded as HasTable>::Table>,
        diesel::dsl::Update<Self::Guarded, (M, Self::TokenAssignment)>:
            AsQuery + ExecuteDsl<Conn> + Send,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
        Self::TokenQuery: Send + 'static,
    {
        let prepared = self.fresh_token().map(|fresh| {
            let statement =
                diesel::update(self.guarded()).set((marker, Self::token_assignment(&fresh)));
            (statement, fresh)
        });
        guarded_write(self, conn, prepared, Operation::SoftDelete)
    }
}

impl<T: VersionedParts, Conn: AsyncConnection> AggregateDsl<Conn> for T {}

/// Runs a guarded UPDATE that assigns `fresh`; on success the entity takes it. Without
/// a fresh token (`prepared` is the error), nothing runs.
async fn guarded_write<T, Conn, S>(
    entity: &mut T,
    conn: &mut Conn,
    prepared: Result<(S, T::Token), InvalidToken>,
    operation: Operation,
) -> Result<(), Error>
where
    T: Versioned + Send,
    Conn: AsyncConnection,
    S: ExecuteDsl<Conn> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    let (statement, fresh) = prepared?;
    usable(conn)?;
    let affected = ExecuteDsl::execute(statement, conn).await?;
    settle::<T, Conn>(conn, entity.key(), entity.token(), operation, affected).await?;
    entity.set_token(fresh);
    Ok(())
}
