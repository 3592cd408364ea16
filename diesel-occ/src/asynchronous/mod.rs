//! The async API, on [`diesel_async::AsyncConnection`] (feature `async`): the same
//! checked operations and retry helper as the blocking API, with the same names and
//! the same errors. Pick one by import, as with Diesel's and diesel-async's
//! `RunQueryDsl`: `use diesel_occ::asynchronous::prelude::*`.
//!
//! It works with `AsyncPgConnection`, `AsyncMysqlConnection` and
//! `SyncConnectionWrapper<SqliteConnection>`, and with pooled connections: a deadpool,
//! bb8 or mobc object derefs to its connection, so pass `&mut *pooled` (or
//! `&mut pooled` where auto-deref applies). Every future is `Send`.
//!
//! # Blocking item -> async item
//!
//! [`blocking`](crate::blocking) and this module hold the same items under the same
//! names; what both share ([`RetryPolicy`](crate::retry::RetryPolicy),
//! [`Attempt`](crate::retry::Attempt), [`HotRows`](crate::retry::HotRows),
//! [`OwnedConnection`](crate::retry::OwnedConnection), the errors, the tokens) is at the
//! top of the crate, once.
//!
//! | blocking | async |
//! |---|---|
//! | [`diesel_occ::prelude`](crate::prelude) | [`asynchronous::prelude`](prelude) |
//! | [`blocking::CheckedDsl`](crate::blocking::CheckedDsl) | [`CheckedDsl`] |
//! | [`blocking::BatchDsl`](crate::blocking::BatchDsl) | [`BatchDsl`] |
//! | [`blocking::TrackedDsl`](crate::blocking::TrackedDsl) | [`TrackedDsl`] |
//! | [`blocking::transaction`](crate::blocking::transaction) | [`transaction`] (closure: [`TransactionFn`]) |
//! | [`blocking::retry`](crate::blocking::retry) | [`retry`] (closure: [`AsyncAttemptFn`]) |
//! | [`blocking::AttemptDsl`](crate::blocking::AttemptDsl) | [`AttemptDsl`] |
//! | [`blocking::ConnectionSource`](crate::blocking::ConnectionSource) (r2d2 pool with `r2d2`) | [`AsyncConnectionSource`] (deadpool pool with `deadpool`, bb8 pool with `bb8`: see `pool`) |
//! | [`blocking::LockingConnection`](crate::blocking::LockingConnection) | [`AsyncLockingConnection`] |
//! | `blocking::Combiner`, `blocking::Combinable` (feature `combine`) | `Combiner`, `Combinable` |
//! | `blocking::retry_with_standby`, `blocking::StandbyConnections` (feature `standby`) | `retry_with_standby`, `StandbyConnections` |
//! | [`SchemaCheck::run`](crate::schema_check::SchemaCheck::run) | `SchemaCheck::run_async` |
//!
//! Only here: the adapters of feature `async-tuning` (`BlockInPlace`,
//! `retry_in_blocking_task`, `verify_when_idle`), which a blocking caller has no use for.
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel_async::{AsyncConnection, TransactionManager};
//! use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
//! use diesel_occ::asynchronous::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let (url, _keep) = shared_database("asynchronous_module_doc");
//! let mut conn = SyncConnectionWrapper::<SqliteConnection>::establish(&url).await?;
//! let mut mine = Stock::find(&mut conn, 1).await?;
//! let mut theirs = Stock::find(&mut conn, 1).await?;
//!
//! theirs.available -= 1;
//! theirs.save_checked(&mut conn).await?;
//!
//! mine.available -= 2;
//! let error = mine.save_checked(&mut conn).await.unwrap_err();
//! assert_eq!(error.as_conflict().unwrap().current::<i32>(), Some(theirs.version));
//! assert_eq!(mine.version, 1); // untouched
//! # Ok(())
//! # }
//! ```
//!
//! # Cancellation
//!
//! Dropping a future of this module (a timeout, a client that went away) never leaves a
//! half-applied write:
//!
//! - [`save_checked`](CheckedDsl::save_checked) and
//!   [`delete_checked`](EntityDsl::delete_checked) write with ONE statement in
//!   autocommit mode (the conflict path adds a read). The database applies it entirely
//!   or not at all; if the future was dropped after the statement was sent, the caller
//!   cannot know which, and a re-read tells (the token changed or it did not).
//! - A transaction is another matter. diesel-async does not roll a transaction back
//!   when its future is dropped: `AsyncConnection::transaction` leaves it open on the
//!   connection, whose transaction manager still records it. A diesel-async pool
//!   notices at the next checkout of that connection (`PoolableConnection::is_broken`
//!   is true while a transaction is open) and closes it instead of handing it out, and
//!   closing a connection makes the server roll back. Until then the transaction and
//!   its locks live on. The [`retry`] helper does not wait for that: when its future is
//!   dropped during an attempt, the attempt's connection is
//!   [discarded](AsyncConnectionSource::discard) at once (a deadpool object is
//!   detached from its pool and dropped), which closes it, so the server rolls back an
//!   escalated attempt's transaction and releases its row locks (or SQLite's write
//!   lock) right away. The closure's own writes in that transaction are never
//!   committed.
//! - A transaction this module opens on your connection
//!   ([`save_all_checked`](BatchDsl::save_all_checked), [`transaction`]) and whose
//!   future is dropped before it ended marks the connection's transaction manager
//!   broken. The connection then fails loudly instead of writing into a transaction
//!   that will never commit: every later checked write and every `transaction` on it
//!   returns [`Error::Database`], and a pool closes it. Drop it (closing it makes the
//!   server roll back). Plain Diesel queries you run on it yourself are not checked.
//!
//! # Setting up for speed
//!
//! How to set up the pool (deadpool's queue mode and recycling method), the runtime and
//! SQLite's wrapper for the async helper, with measured figures:
//! [`guide::tuning`](crate::guide::tuning).
//!
//! The backoff between attempts sleeps on Tokio's timer, whose resolution is a
//! millisecond; a pause shorter than that is slept on the runtime's blocking pool
//! instead, so that it lasts what the policy drew, as `thread::sleep` does for the
//! blocking helper.

mod arguments;
mod batch;
#[cfg(feature = "async-tuning")]
mod block_in_place;
#[cfg(feature = "async-tuning")]
mod blocking_task;
#[cfg(feature = "combine")]
mod combine;
pub(crate) mod guarded_update;
mod insert;
#[cfg(any(feature = "deadpool", feature = "bb8"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "deadpool", feature = "bb8"))))]
pub mod pool;
#[cfg(all(feature = "async-tuning", feature = "deadpool"))]
mod recycle;
mod retry;
mod schema_check;
#[cfg(feature = "standby")]
mod standby;
#[cfg(test)]
mod tests;
mod tracked;
mod transaction;

use std::future::Future;
use std::time::Duration;

use diesel::associations::HasTable;
use diesel::dsl::{AsSelect, Select};
use diesel::query_builder::{AsChangeset, AsQuery, IntoUpdateTarget, QueryId};
use diesel::query_dsl::methods::{FilterDsl, SelectDsl};
use diesel::{OptionalExtension, Selectable, SelectableHelper, Table};
use diesel_async::methods::{ExecuteDsl, LoadQuery};
use diesel_async::{AsyncConnection, TransactionManager};

pub use self::arguments::{CheckedChanges, CheckedPredicate, InsertableForm};
pub use self::batch::BatchDsl;
#[cfg(feature = "async-tuning")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-tuning")))]
pub use self::block_in_place::BlockInPlace;
#[cfg(feature = "async-tuning")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-tuning")))]
pub use self::blocking_task::retry_in_blocking_task;
#[cfg(feature = "combine")]
#[cfg_attr(docsrs, doc(cfg(feature = "combine")))]
pub use self::combine::{Combinable, Combiner};
pub use self::guarded_update::GuardedUpdate;
pub use self::insert::AsyncUpsertBackend;
pub use self::insert::InsertDsl;
#[cfg(all(feature = "async-tuning", feature = "deadpool"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "async-tuning", feature = "deadpool"))))]
pub use self::recycle::verify_when_idle;
pub use self::retry::{
    AsyncAttemptFn, AsyncConnectionSource, AsyncLockingConnection, AsyncLockingTransactionManager,
    AttemptDsl, retry,
};
#[cfg(feature = "standby")]
#[cfg_attr(docsrs, doc(cfg(feature = "standby")))]
pub use self::standby::{StandbyConnections, retry_with_standby};
pub use self::tracked::TrackedDsl;
pub use self::transaction::{TransactionFn, transaction};

use crate::backend::LockedRead;
use crate::error::{Error, InvalidToken, Operation};
use crate::observe;
use crate::outcome;
use crate::statement::CurrentToken;
use crate::token::VersionToken;
use crate::versioned::Versioned;
use crate::versioned::{KeyGuarded, TokenIs, VersionedParts, key_guarded};

/// The async traits and the derives, for `use diesel_occ::asynchronous::prelude::*`:
/// the twins of [`crate::prelude`]'s traits, and the same `Versioned`, `VersionToken`
/// and (with `derive`) `#[derive(ChangesetColumns)]`.
///
/// ```
/// use diesel::prelude::*;
/// use diesel_occ::asynchronous::prelude::*;
///
/// diesel::table! {
///     stock (id) { id -> Integer, available -> Integer, version -> Integer }
/// }
///
/// #[derive(AsChangeset, ChangesetColumns)]
/// #[diesel(table_name = stock)]
/// pub struct Restock {
///     pub available: i32,
/// }
/// ```
pub mod prelude {
    pub use super::VersionColumnDsl;
    pub use super::{AttemptDsl, BatchDsl, CheckedDsl, EntityDsl, InsertDsl, TrackedDsl};
    pub use super::{CheckedChanges, CheckedPredicate, InsertableForm};
    #[cfg(feature = "derive")]
    pub use crate::ChangesetColumns;
    pub use crate::{VersionToken, Versioned};
}

/// Checked loads on an async Diesel connection: the twin of the blocking
/// [`EntityDsl`](crate::blocking::EntityDsl).
///
/// Implemented for every entity deriving [`Versioned`] and Diesel's `Selectable`,
/// whatever its token; in the [`prelude`].
///
/// ```
/// use diesel_async::AsyncConnection;
/// use diesel_occ::asynchronous::prelude::*;
///
/// async fn load<T: EntityDsl<C>, C: AsyncConnection>(conn: &mut C, key: T::Key)
///     -> Result<T, diesel_occ::Error> {
///     T::find(conn, key).await
/// }
/// ```
pub trait EntityDsl<Conn: AsyncConnection>: Versioned + Send + 'static {
    /// Loads the row with this key, or [`Error::NotFound`].
    fn find(conn: &mut Conn, key: Self::Key) -> impl Future<Output = Result<Self, Error>> + Send;

    /// Loads the row with this key and checks that it still holds the token a client
    /// sent (an HTTP `If-Match`, a form field), before any edit.
    ///
    /// A nil or otherwise invalid token is [`Error::InvalidToken`] without a query; a
    /// missing row is [`Error::NotFound`]; a stale token is [`Error::Conflict`] with the
    /// current token. The client's token is never replaced by the loaded one.
    fn find_checked(
        conn: &mut Conn,
        key: Self::Key,
        expected: &Self::Token,
    ) -> impl Future<Output = Result<Self, Error>> + Send;

    /// Deletes the row with `DELETE ... WHERE <key> AND token = <original>`.
    ///
    /// When no row matches, returns [`Error::Conflict`] (stale or already deleted).
    fn delete_checked(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;

    /// Loads the row with this key, locking it until the transaction ends: the read of
    /// an escalated retry attempt ([`AttemptDsl::find`]).
    #[doc(hidden)]
    fn find_locked(
        conn: &mut Conn,
        key: Self::Key,
        remaining: Option<Duration>,
    ) -> impl Future<Output = diesel::QueryResult<Option<Self>>> + Send;
}

/// Checked saves on an async Diesel connection: the twin of the blocking
/// [`CheckedDsl`](crate::CheckedDsl), with the same names, statements, semantics and
/// errors; the loads and the checked delete are [`EntityDsl`]'s.
///
/// Implemented for every [`Versioned`] entity whose save is one guarded UPDATE (not
/// `#[occ(check)]` columns); `T: CheckedDsl<Conn>` is the bound of a generic function
/// that saves. Bring it into scope with
/// `use diesel_occ::asynchronous::prelude::*`. Every method returns a `Send` future.
/// See the [module documentation](self) for an example and for what dropping a future
/// does.
pub trait CheckedDsl<Conn: AsyncConnection>: Versioned + Send + 'static {
    /// Writes the entity with `UPDATE ... WHERE <key> AND token = <original>`, assigning
    /// a fresh token: one statement when it succeeds.
    ///
    /// On success the entity holds the fresh token. When no row matches, returns
    /// [`Error::Conflict`] saying whether the row is stale (with its current token) or
    /// deleted, at the cost of one more query, and leaves the entity exactly as it was.
    /// Dropping the future before it completes leaves the entity as it was, too.
    ///
    /// Inside a transaction, use [`transaction`]: it gives the entity its token back
    /// if the transaction rolls back (see [`crate::CheckedDsl::save_checked`]).
    fn save_checked(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;

    /// [`save_checked`](Self::save_checked) with one more condition of the caller's in
    /// the `WHERE`. See [`crate::CheckedDsl::save_checked_where`].
    fn save_checked_where<Predicate: CheckedPredicate<Self, Conn>>(
        &mut self,
        conn: &mut Conn,
        predicate: Predicate,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// Checked writes that need a version column the application assigns, on an async
/// connection: the twin of the blocking
/// [`VersionColumnDsl`](crate::blocking::VersionColumnDsl), with the same names,
/// statements and errors.
///
/// Implemented for every entity deriving [`Versioned`] with `#[occ(version)]` (not for
/// `#[occ(check)]` columns nor for a token the database generates); in the
/// [`prelude`]. `T: VersionColumnDsl<Conn>` is the one bound a generic function needs to
/// make these writes.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
///
/// async fn remove<T, C>(conn: &mut C, key: T::Key, etag: &T::Token) -> Result<(), diesel_occ::Error>
/// where
///     T: VersionColumnDsl<C>,
///     C: AsyncConnection,
/// {
///     T::delete_by_key(conn, key, etag).await
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (url, _keep) = shared_database("async_version_column_doc");
/// let mut conn = SyncConnectionWrapper::<SqliteConnection>::establish(&url).await?;
/// remove::<Stock, _>(&mut conn, 1, &1).await?;
/// assert!(Stock::find(&mut conn, 1).await.unwrap_err().is_not_found());
/// # Ok(())
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no version column the application assigns on `{Conn}`",
    label = "no write by key, token-only write or soft delete for this entity",
    note = "`update_by_key`, `delete_by_key`, `force_increment` and `soft_delete_checked` need \
            `#[occ(version)]` on a token the application assigns: an entity with `#[occ(check)]` \
            columns has no token for a client, and a generated token (`xmin`) needs a loaded \
            entity (`find`, then `save_checked` / `delete_checked`)"
)]
pub trait VersionColumnDsl<Conn: AsyncConnection>: Versioned + Send {
    /// Writes `changes` to the row with `key` if it still holds the token a client sent,
    /// in one statement and without loading it; returns the fresh token, to hand to the
    /// client only once the write has committed. See [`crate::VersionColumnDsl::update_by_key`].
    fn update_by_key<Changes: CheckedChanges<Self, Conn>>(
        conn: &mut Conn,
        key: Self::Key,
        expected: &Self::Token,
        changes: Changes,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send;

    /// Deletes the row with `key` if it still holds the token a client sent, in one
    /// statement and without loading it. See [`crate::VersionColumnDsl::delete_by_key`].
    fn delete_by_key(
        conn: &mut Conn,
        key: Self::Key,
        expected: &Self::Token,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `UPDATE t SET token = <fresh> WHERE <key> AND token = <original>`. See
    /// [`crate::VersionColumnDsl::force_increment`].
    fn force_increment(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `UPDATE t SET <marker>, token = <fresh> WHERE <key> AND token = <original>`. See
    /// [`crate::VersionColumnDsl::soft_delete_checked`].
    /// `marker` never assigns or reads the token column: a compile error, as there.
    fn soft_delete_checked<M: CheckedChanges<Self, Conn>>(
        &mut self,
        conn: &mut Conn,
        marker: M,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

impl<T, Conn> EntityDsl<Conn> for T
where
    T: Versioned + Selectable<Conn::Backend> + Send + 'static,
    T::SelectExpression: QueryId,
    T::FindQuery: SelectDsl<AsSelect<T, Conn::Backend>>,
    Select<T::FindQuery, AsSelect<T, Conn::Backend>>: LoadQuery<'static, Conn, T> + Send + 'static,
    LockedRead<Select<T::FindQuery, AsSelect<T, Conn::Backend>>>: LoadQuery<'static, Conn, T>,
    Conn: AsyncConnection,
    T::DeleteStatement: ExecuteDsl<Conn> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    fn find(conn: &mut Conn, key: T::Key) -> impl Future<Output = Result<T, Error>> + Send {
        let query = T::find_query(key.clone()).select(T::as_select());
        async move {
            diesel_async::RunQueryDsl::get_result(query, conn)
                .await
                .optional()?
                .ok_or_else(|| outcome::not_found::<T>(&key))
        }
    }

    fn find_checked(
        conn: &mut Conn,
        key: T::Key,
        expected: &T::Token,
    ) -> impl Future<Output = Result<T, Error>> + Send {
        let expected = expected.clone();
        async move {
            let result = match expected.validate() {
                Ok(()) => match Self::find(conn, key).await {
                    Ok(row) => outcome::check_client_token(row, &expected),
                    Err(error) => Err(error),
                },
                Err(invalid) => Err(invalid.into()),
            };
            observe::read_checked::<Conn::Backend, _>(T::sql_table_name(), "find_checked", &result);
            result
        }
    }

    fn delete_checked(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        let statement = self.delete_statement();
        let key = self.key();
        let expected = self.token().clone();
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "delete_checked");
        observe::in_write_span_async(span, async move {
            usable(conn)?;
            let affected = ExecuteDsl::execute(statement, conn).await?;
            settle::<T, Conn>(conn, key, &expected, Operation::Delete, affected).await
        })
    }

    fn find_locked(
        conn: &mut Conn,
        key: T::Key,
        remaining: Option<Duration>,
    ) -> impl Future<Output = diesel::QueryResult<Option<T>>> + Send {
        let query = LockedRead::new(T::find_query(key).select(T::as_select())).within(remaining);
        async move {
            diesel_async::RunQueryDsl::get_result(query, conn)
                .await
                .optional()
        }
    }
}

impl<T, Conn> CheckedDsl<Conn> for T
where
    T: Versioned + Send + 'static,
    Conn: AsyncConnection,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    fn save_checked(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        let prepared = self
            .fresh_token()
            .map(|fresh| (self.update_statement(&fresh), fresh));
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_checked");
        observe::in_write_span_async(span, async move {
            let (statement, fresh) = prepared?;
            usable(conn)?;
            // A generated token (`xmin`) comes back from `RETURNING`.
            let (affected, fresh) = statement.run_guarded(conn, fresh).await?;
            settle::<T, Conn>(conn, self.key(), self.token(), Operation::Update, affected).await?;
            self.set_token(fresh);
            Ok(())
        })
    }

    fn save_checked_where<Predicate: CheckedPredicate<T, Conn>>(
        &mut self,
        conn: &mut Conn,
        predicate: Predicate,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let prepared = self.fresh_token().map(|fresh| {
            (
                predicate.narrow_update(self.update_statement(&fresh)),
                fresh,
            )
        });
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_checked_where");
        observe::in_write_span_async(span, async move {
            let (statement, fresh) = prepared?;
            usable(conn)?;
            let (affected, fresh) = statement.run_guarded(conn, fresh).await?;
            settle::<T, Conn>(conn, self.key(), self.token(), Operation::Update, affected).await?;
            self.set_token(fresh);
            Ok(())
        })
    }
}

impl<T, Conn> VersionColumnDsl<Conn> for T
where
    T: VersionedParts + Send,
    Conn: AsyncConnection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget,
    <KeyGuarded<T> as HasTable>::Table: Table,
    T::TokenAssignment: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    diesel::dsl::Update<KeyGuarded<T>, T::TokenAssignment>: AsQuery + ExecuteDsl<Conn> + Send,
    diesel::dsl::delete<KeyGuarded<T>>: ExecuteDsl<Conn> + Send,
{
    fn update_by_key<Changes: CheckedChanges<T, Conn>>(
        conn: &mut Conn,
        key: T::Key,
        expected: &T::Token,
        changes: Changes,
    ) -> impl Future<Output = Result<T::Token, Error>> + Send {
        let expected = expected.clone();
        let prepared = expected
            .validate()
            .and_then(|()| expected.try_next_token_at(T::TOKEN_PRECISION))
            .map(|fresh| (changes.by_key(key.clone(), &expected, &fresh), fresh));
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "update_by_key");
        observe::in_write_span_async(span, async move {
            let (statement, fresh) = prepared?;
            usable(conn)?;
            let affected = ExecuteDsl::execute(statement, conn).await?;
            let operations = (Operation::Update, Operation::ClientToken);
            settle_as::<T, Conn>(conn, key, &expected, operations, affected).await?;
            Ok(fresh)
        })
    }

    fn delete_by_key(
        conn: &mut Conn,
        key: T::Key,
        expected: &T::Token,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let expected = expected.clone();
        let prepared = expected
            .validate()
            .map(|()| diesel::delete(key_guarded::<T>(key.clone(), &expected)));
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "delete_by_key");
        observe::in_write_span_async(span, async move {
            let statement = prepared?;
            usable(conn)?;
            let affected = ExecuteDsl::execute(statement, conn).await?;
            let operations = (Operation::Delete, Operation::ClientToken);
            settle_as::<T, Conn>(conn, key, &expected, operations, affected).await
        })
    }

    fn force_increment(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let prepared = self.fresh_token().map(|fresh| {
            let target = key_guarded::<T>(self.key(), self.token());
            (
                diesel::update(target).set(T::token_assignment(&fresh)),
                fresh,
            )
        });
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "force_increment");
        observe::in_write_span_async(
            span,
            guarded_write(self, conn, prepared, Operation::ForceIncrement),
        )
    }

    fn soft_delete_checked<M: CheckedChanges<T, Conn>>(
        &mut self,
        conn: &mut Conn,
        marker: M,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let prepared = self.fresh_token().map(|fresh| {
            let statement = marker.by_key(self.key(), self.token(), &fresh);
            (statement, fresh)
        });
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "soft_delete_checked");
        observe::in_write_span_async(
            span,
            guarded_write(self, conn, prepared, Operation::SoftDelete),
        )
    }
}

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

/// The end of every guarded write on an async connection: `Ok` (and the event) when it
/// wrote exactly the row, else the conflict that explains the zero-row write. The twin
/// of the blocking one.
pub(crate) async fn settle<T, Conn>(
    conn: &mut Conn,
    key: T::Key,
    expected: &T::Token,
    operation: Operation,
    affected: usize,
) -> Result<(), Error>
where
    T: Versioned,
    Conn: AsyncConnection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    settle_as::<T, Conn>(conn, key, expected, (operation, operation), affected).await
}

/// [`settle`], reported as `(written, conflict)`: the operation of its event when it
/// wrote, and of its conflict when it did not ([`Operation::ClientToken`] for a write
/// that compared a token the caller passed in). The twin of the blocking one.
pub(crate) async fn settle_as<T, Conn>(
    conn: &mut Conn,
    key: T::Key,
    expected: &T::Token,
    (written, conflict): (Operation, Operation),
    affected: usize,
) -> Result<(), Error>
where
    T: Versioned,
    Conn: AsyncConnection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    if outcome::written_key::<T>(&key, affected)? {
        outcome::trace_written_key::<T>(&key, written);
        Ok(())
    } else {
        Err(classify::<T, Conn>(key, expected, conflict, conn).await)
    }
}

/// The conflict behind a zero-row write: one query for the row's current token, a
/// locking read inside a transaction (see [`CurrentToken`] for why). The twin of the
/// blocking classification.
pub(crate) async fn classify<T, Conn>(
    key: T::Key,
    expected: &T::Token,
    operation: Operation,
    conn: &mut Conn,
) -> Error
where
    T: Versioned,
    Conn: AsyncConnection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    let in_transaction = !matches!(
        Conn::TransactionManager::transaction_manager_status_mut(conn).transaction_depth(),
        Ok(None)
    );
    let query = CurrentToken::new(T::token_query(key.clone()), in_transaction);
    let mut current = diesel_async::RunQueryDsl::get_result::<T::Token>(query, &mut *conn)
        .await
        .optional();
    // A transaction opened with plain SQL is invisible to diesel-async: a token equal to
    // the expected one may come from its snapshot, so read again, locking.
    if !in_transaction && matches!(&current, Ok(Some(token)) if token == expected) {
        let query = CurrentToken::new(T::token_query(key.clone()), true);
        current = diesel_async::RunQueryDsl::get_result::<T::Token>(query, &mut *conn)
            .await
            .optional();
    }
    match current {
        Ok(current) => outcome::conflict::<T>(&key, operation, expected, current).into(),
        Err(error) => error.into(),
    }
}

/// Refuses a connection whose transaction manager is broken: the state a dropped
/// [`BatchDsl::save_all_checked`] or [`transaction`] future leaves behind while a
/// transaction it opened is still open on the server. A write there would report
/// `Ok` inside a transaction that can never commit. Costs no round trip.
pub(crate) fn usable<Conn: AsyncConnection>(conn: &mut Conn) -> Result<(), Error> {
    Conn::TransactionManager::transaction_manager_status_mut(conn).transaction_depth()?;
    Ok(())
}
