//! The async retry helper, its connection sources, and how an escalated attempt takes
//! its lock on an async connection.

use std::future::Future;
use std::ops::DerefMut;
use std::time::{Duration, Instant};

use diesel::result::QueryResult;
#[cfg(feature = "sqlite")]
use diesel_async::sync_connection_wrapper::{
    SpawnBlocking, SyncConnectionWrapper, SyncTransactionManagerWrapper,
};
use diesel_async::{AsyncConnection, TransactionManager};
use tracing::Instrument;

use super::EntityDsl;
use crate::backend::LockingBackend;
use crate::error::{DatabaseError, Error, PoolError};
use crate::observe;
use crate::outcome;
use crate::retry::lost_session::{connection_lost, unexplained};
use crate::retry::{Attempt, OwnedConnection, RetryLoop, RetryPolicy, Step, deadline};

/// Where the async retry helper gets a connection for each attempt.
///
/// Implemented for diesel-async's deadpool `Pool<C>` (feature `deadpool`) and bb8
/// `Pool<C>` (feature `bb8`; both in [`pool`](super::pool)), and for any closure
/// `Fn() -> impl Future<Output = Result<C, E>>` where `E: Into<PoolError>` (such as
/// `|| AsyncPgConnection::establish(url)`, which connects once per attempt). For
/// another pool (mobc, your own), implement it: `checkout` gets a connection, and
/// `discard` gets rid of one that must not be reused.
///
/// ```
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::AsyncConnectionSource;
/// use diesel_occ::retry::OwnedConnection;
/// use diesel_occ::PoolError;
///
/// type Conn = SyncConnectionWrapper<diesel::SqliteConnection>;
///
/// /// Connects for every attempt.
/// struct Connector(String);
///
/// impl AsyncConnectionSource for Connector {
///     type Connection = Conn;
///     type Pooled<'a> = OwnedConnection<Conn>;
///
///     async fn checkout(&self) -> Result<OwnedConnection<Conn>, PoolError> {
///         Ok(OwnedConnection::new(Conn::establish(&self.0).await?))
///     }
/// }
/// ```
pub trait AsyncConnectionSource: Sync {
    /// The connection an attempt works with.
    type Connection: AsyncConnection;

    /// What a checkout hands out: a pooled connection that goes back to its pool when
    /// dropped, or an owned one.
    type Pooled<'a>: DerefMut<Target = Self::Connection> + Send
    where
        Self: 'a;

    /// Checks a connection out for one attempt. The helper drops it when the attempt
    /// ends, before it sleeps.
    fn checkout(&self) -> impl Future<Output = Result<Self::Pooled<'_>, PoolError>> + Send;

    /// Checks a connection out, waiting at most `remaining` (the time left before the
    /// policy's [deadline](RetryPolicy::deadline); `None` without one); the helper
    /// calls this. Running out of time is a [`PoolErrorKind::Timeout`](crate::PoolErrorKind::Timeout).
    ///
    /// The default drops the [`checkout`](Self::checkout) future when the time is up
    /// (Tokio's timer), which suits every checkout that leaves nothing behind when
    /// dropped before it hands out a connection: a pool's wait, or a connection being
    /// opened.
    fn checkout_within(
        &self,
        remaining: Option<Duration>,
    ) -> impl Future<Output = Result<Self::Pooled<'_>, PoolError>> + Send {
        deadline::checkout_within(self.checkout(), remaining)
    }

    /// Gets rid of a connection whose state is unknown, so that it is never handed out
    /// again: its attempt was cancelled (the helper's future was dropped) or its
    /// transaction could not be committed or rolled back. Runs synchronously, from a
    /// destructor.
    ///
    /// The default drops it, which closes an owned connection; closing is what makes
    /// the server roll back an open transaction and release its locks at once. A pool
    /// whose dropped objects go back to the pool should detach the object instead, as
    /// the deadpool implementation does; otherwise the open transaction lingers until
    /// the pool's recycle check catches it.
    fn discard(&self, pooled: Self::Pooled<'_>) {
        drop(pooled);
    }
}

impl<F, Fut, C, E> AsyncConnectionSource for F
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = Result<C, E>> + Send,
    C: AsyncConnection,
    E: Into<PoolError>,
{
    type Connection = C;
    type Pooled<'a>
        = OwnedConnection<C>
    where
        Self: 'a;

    fn checkout(&self) -> impl Future<Output = Result<OwnedConnection<C>, PoolError>> + Send {
        let connecting = self();
        async move {
            connecting
                .await
                .map(OwnedConnection::new)
                .map_err(Into::into)
        }
    }
}

#[cfg(feature = "deadpool")]
impl<C> AsyncConnectionSource for diesel_async::pooled_connection::deadpool::Pool<C>
where
    C: diesel_async::pooled_connection::PoolableConnection + Send + 'static,
    diesel_async::pooled_connection::AsyncDieselConnectionManager<C>: deadpool::managed::Manager<Type = C, Error = diesel_async::pooled_connection::PoolError>
        + Send
        + Sync,
{
    type Connection = C;
    type Pooled<'a> = diesel_async::pooled_connection::deadpool::Object<C>;

    async fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        self.get().await.map_err(deadpool_error)
    }

    /// Detaches the object from the pool and drops the connection, closing it.
    fn discard(&self, pooled: Self::Pooled<'_>) {
        drop(deadpool::managed::Object::take(pooled));
    }
}

#[cfg(feature = "deadpool")]
fn deadpool_error(error: diesel_async::pooled_connection::deadpool::PoolError) -> PoolError {
    use crate::PoolErrorKind;
    use deadpool::managed::PoolError as E;
    let kind = match &error {
        E::Timeout(_) => PoolErrorKind::Timeout,
        E::Closed => PoolErrorKind::Closed,
        E::Backend(_) | E::PostCreateHook(_) => PoolErrorKind::Connect,
        _ => PoolErrorKind::Other,
    };
    PoolError::new(kind, error)
}

/// An async connection that can open an escalated retry attempt's transaction: the
/// twin of [`LockingConnection`].
///
/// Implemented for every connection whose transaction manager implements
/// `AsyncLockingTransactionManager`: `AsyncPgConnection` and `AsyncMysqlConnection`
/// (diesel-async's `AnsiTransactionManager`), and, with feature `sqlite`,
/// `SyncConnectionWrapper<C>` of a blocking [`LockingConnection`] (so SQLite's
/// `BEGIN IMMEDIATE` through the wrapper).
/// The transaction is committed or rolled back through the connection's own
/// `TransactionManager`.
///
/// [`LockingConnection`]: crate::blocking::LockingConnection
pub trait AsyncLockingConnection: AsyncConnection {
    /// Opens the transaction with `LockingBackend::BEGIN_LOCKED`. Fails with
    /// `AlreadyInTransaction` when a transaction is open.
    fn begin_locked_transaction(&mut self) -> impl Future<Output = QueryResult<()>> + Send;

    /// Opens the transaction with `LockingBackend::begin_locked_within`: the twin of
    /// [`LockingConnection::begin_locked_transaction_within`](crate::blocking::LockingConnection::begin_locked_transaction_within).
    fn begin_locked_transaction_within(
        &mut self,
        remaining: Option<Duration>,
    ) -> impl Future<Output = QueryResult<()>> + Send;
}

impl<C> AsyncLockingConnection for C
where
    C: AsyncConnection,
    C::TransactionManager: AsyncLockingTransactionManager<C>,
{
    fn begin_locked_transaction(&mut self) -> impl Future<Output = QueryResult<()>> + Send {
        <C::TransactionManager as AsyncLockingTransactionManager<C>>::begin_locked_transaction(self)
    }

    fn begin_locked_transaction_within(
        &mut self,
        remaining: Option<Duration>,
    ) -> impl Future<Output = QueryResult<()>> + Send {
        <C::TransactionManager as AsyncLockingTransactionManager<C>>::begin_locked_transaction_within(
            self, remaining,
        )
    }
}

/// How an async connection's transaction manager opens a locking transaction; what
/// [`AsyncLockingConnection`] dispatches on (per transaction manager, because
/// `SyncConnectionWrapper` has its own).
#[doc(hidden)]
pub trait AsyncLockingTransactionManager<Conn: AsyncConnection>: TransactionManager<Conn> {
    /// Opens the transaction with the backend's `LockingBackend::BEGIN_LOCKED`.
    fn begin_locked_transaction(conn: &mut Conn) -> impl Future<Output = QueryResult<()>> + Send;

    /// Opens the transaction with the backend's `LockingBackend::begin_locked_within`,
    /// so that its lock waits end within `remaining` where the backend bounds them at
    /// the start of a transaction.
    fn begin_locked_transaction_within(
        conn: &mut Conn,
        remaining: Option<Duration>,
    ) -> impl Future<Output = QueryResult<()>> + Send;
}

impl<C> AsyncLockingTransactionManager<C> for diesel_async::AnsiTransactionManager
where
    C: AsyncConnection<TransactionManager = Self>,
    C::Backend: LockingBackend,
{
    fn begin_locked_transaction(conn: &mut C) -> impl Future<Output = QueryResult<()>> + Send {
        Self::begin_locked_transaction_within(conn, None)
    }

    fn begin_locked_transaction_within(
        conn: &mut C,
        remaining: Option<Duration>,
    ) -> impl Future<Output = QueryResult<()>> + Send {
        let begin = <C::Backend as LockingBackend>::begin_locked_within(remaining);
        async move { Self::begin_transaction_sql(conn, &begin).await }
    }
}

/// A blocking connection in diesel-async's `SyncConnectionWrapper` (SQLite's way onto
/// the async API) takes its lock on the wrapper's blocking thread. With feature
/// `sqlite`, which turns the wrapper on.
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
impl<T, C, S> AsyncLockingTransactionManager<SyncConnectionWrapper<C, S>>
    for SyncTransactionManagerWrapper<T>
where
    SyncConnectionWrapper<C, S>: AsyncConnection<TransactionManager = Self>,
    C: crate::blocking::LockingConnection + 'static,
    S: SpawnBlocking + Send,
    T: diesel::connection::TransactionManager<C> + Send,
{
    fn begin_locked_transaction(
        conn: &mut SyncConnectionWrapper<C, S>,
    ) -> impl Future<Output = QueryResult<()>> + Send {
        Self::begin_locked_transaction_within(conn, None)
    }

    fn begin_locked_transaction_within(
        conn: &mut SyncConnectionWrapper<C, S>,
        remaining: Option<Duration>,
    ) -> impl Future<Output = QueryResult<()>> + Send {
        conn.spawn_blocking(move |conn| conn.begin_locked_transaction_within(remaining))
    }
}

/// The closures the async [`retry`] accepts: an async closure
/// `async |conn: &mut C, attempt: Attempt| -> Result<T, Error>` whose future is `Send`.
///
/// Implemented for every such closure; you never implement or name it. It exists, as
/// diesel-async's own helper for `transaction` does, because `AsyncFnOnce` alone cannot
/// say that the returned future is `Send`.
pub trait AsyncAttemptFn<C, R>:
    AsyncFnOnce(C, Attempt) -> R + FnOnce(C, Attempt) -> <Self as AsyncAttemptFn<C, R>>::Fut
{
    /// The closure's future.
    type Fut: Future<Output = R>;
}

impl<F, C, R, Fut> AsyncAttemptFn<C, R> for F
where
    F: AsyncFnOnce(C, Attempt) -> R + FnOnce(C, Attempt) -> Fut,
    Fut: Future<Output = R>,
{
    type Fut = Fut;
}

/// Runs `attempt` until it succeeds, fails with an error that is not worth retrying,
/// or `policy` gives up ([`Error::RetriesExhausted`]): the twin of
/// [`blocking::retry`](crate::blocking::retry), with the same contract (see
/// [`crate::retry`]).
///
/// The closure is an async closure, `async |conn, attempt| { ... }`, run once per
/// attempt on a clone of it: it may borrow from its surroundings (request data, a
/// quantity) but not mutate them; per-attempt state comes from [`Attempt`]. Every
/// attempt checks a fresh connection out of `source` and drops it before the backoff
/// sleep (Tokio's timer: call it inside a Tokio runtime with time enabled). The
/// returned future is `Send`; dropping it cancels the running attempt safely (see
/// [Cancellation](super#cancellation)).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
/// use diesel_occ::asynchronous;
/// use diesel_occ::retry::RetryPolicy;
///
/// #[derive(Debug, PartialEq)]
/// struct SoldOut;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// # let (url, _keep) = shared_database("asynchronous_retry_doc");
/// // A deadpool `Pool` works the same (feature `deadpool`).
/// let source = || SyncConnectionWrapper::<SqliteConnection>::establish(&url);
/// let policy = RetryPolicy::new().escalate_after(2);
/// let quantity = 4;
///
/// let outcome = asynchronous::retry(&source, &policy, async |conn, attempt| {
///     let mut stock: Stock = attempt.find(conn, 1).await?;
///     if stock.available < quantity {
///         return Ok(Err(SoldOut));
///     }
///     stock.available -= quantity;
///     stock.save_checked(conn).await?;
///     Ok(Ok(stock.available))
/// })
/// .await?;
/// assert_eq!(outcome, Ok(6));
/// # Ok(())
/// # }
/// ```
// Not an `async fn`: the signature promises a `Send` future, checked here once rather
// than at every call site.
#[allow(clippy::manual_async_fn)]
pub fn retry<'s, S, T, F>(
    source: &'s S,
    policy: &'s RetryPolicy,
    attempt: F,
) -> impl Future<Output = Result<T, Error>> + Send + 's
where
    S: AsyncConnectionSource + ?Sized,
    S::Connection: AsyncLockingConnection,
    for<'c> F: AsyncFnOnce(&'c mut S::Connection, Attempt) -> Result<T, Error>
        + AsyncAttemptFn<&'c mut S::Connection, Result<T, Error>, Fut: Send>
        + Clone
        + Send
        + 's,
    T: Send + 's,
{
    drive(policy, move |current| {
        run_attempt(source, current, attempt.clone())
    })
}

/// The loop every async helper runs: the next [`Attempt`] of `policy`, the future `run`
/// makes for it in its span, then stop with its result or sleep and go on, as
/// [`RetryLoop`] decides.
pub(super) async fn drive<T, R>(
    policy: &RetryPolicy,
    mut run: impl FnMut(Attempt) -> R,
) -> Result<T, Error>
where
    R: Future<Output = Result<T, Error>>,
{
    let started = Instant::now();
    let mut state = RetryLoop::new(policy);
    let span = observe::retry_span();
    let attempts = async {
        loop {
            let current = state.next_attempt();
            let span = observe::attempt_span(current.number(), current.is_escalated());
            let result = run(current).instrument(span).await;
            match state.after(result, started.elapsed()) {
                Step::Done(result) => return result,
                Step::Retry(backoff) if backoff.is_zero() => {}
                Step::Retry(backoff) => pause(backoff).await,
            }
        }
    };
    let result = attempts.instrument(span.clone()).await;
    observe::retry_ended(&span, state.attempts(), &result);
    result
}

/// Sleeps a retry backoff as long as the policy drew it, as `thread::sleep` does for the
/// blocking helper.
///
/// Tokio's timer counts whole milliseconds and rounds every deadline up to the next
/// one, so `sleep(d)` lasts from `d` to more than `d + 1 ms`, which stretches a
/// sub-millisecond backoff several times over (figures in `guide::tuning`). So a
/// backoff shorter than the tick is slept by a thread of the runtime's blocking pool
/// (`spawn_blocking`), with the operating system's precision, while the task waits for
/// it without holding a worker; a longer one asks the timer for half a tick less. Dropping the pause leaves that thread to finish its sleep.
pub(super) async fn pause(backoff: Duration) {
    const TICK: Duration = Duration::from_millis(1);
    const HALF_TICK: Duration = Duration::from_micros(500);
    if backoff >= TICK {
        tokio::time::sleep(backoff.saturating_sub(HALF_TICK)).await;
    } else if tokio::task::spawn_blocking(move || std::thread::sleep(backoff))
        .await
        .is_err()
    {
        // The runtime is shutting down its blocking pool: do not wait at all.
        tokio::task::yield_now().await;
    }
}

/// A checked-out connection that is discarded, not returned, unless its attempt ended
/// cleanly: also when the attempt's future is dropped.
pub(super) struct Checkout<'s, S: AsyncConnectionSource + ?Sized> {
    pub(super) source: &'s S,
    pub(super) pooled: Option<S::Pooled<'s>>,
    pub(super) clean: bool,
}

impl<S: AsyncConnectionSource + ?Sized> Drop for Checkout<'_, S> {
    fn drop(&mut self) {
        if let Some(pooled) = self.pooled.take() {
            if !self.clean {
                tracing::debug!(
                    target: "diesel_occ",
                    "occ attempt did not end cleanly; discarding its connection"
                );
                self.source.discard(pooled);
            }
        }
    }
}

/// One attempt on a fresh connection.
async fn run_attempt<S, T, F>(source: &S, attempt: Attempt, f: F) -> Result<T, Error>
where
    S: AsyncConnectionSource + ?Sized,
    S::Connection: AsyncLockingConnection,
    for<'c> F: AsyncFnOnce(&'c mut S::Connection, Attempt) -> Result<T, Error>
        + AsyncAttemptFn<&'c mut S::Connection, Result<T, Error>, Fut: Send>
        + Send,
    T: Send,
{
    let pooled = source.checkout_within(attempt.remaining()).await?;
    let mut checkout = Checkout {
        source,
        pooled: None,
        clean: false,
    };
    let conn: &mut S::Connection = checkout.pooled.insert(pooled);
    let (result, clean) = if attempt.runs_in_transaction() {
        in_attempt_transaction(conn, attempt, f).await
    } else {
        (f(conn, attempt).await, true)
    };
    let lost = connection_lost(&result) || clean && unexplained(&result) && !alive(conn).await;
    checkout.clean = clean && !lost;
    result
}

/// True when the connection still answers a query.
pub(super) async fn alive<C: AsyncConnection>(conn: &mut C) -> bool {
    conn.batch_execute("SELECT 1").await.is_ok()
}

/// The closure inside the attempt's transaction, which opens before it: a locking
/// transaction, or a savepoint when the caller's transaction is open on the connection.
/// Also says whether the connection is clean.
async fn in_attempt_transaction<C, T, F>(
    conn: &mut C,
    attempt: Attempt,
    f: F,
) -> (Result<T, Error>, bool)
where
    C: AsyncLockingConnection,
    for<'c> F: AsyncFnOnce(&'c mut C, Attempt) -> Result<T, Error>
        + AsyncAttemptFn<&'c mut C, Result<T, Error>, Fut: Send>
        + Send,
    T: Send,
{
    let outer = match begin_attempt_transaction(conn, &attempt).await {
        Ok(outer) => outer,
        Err(error) => return (Err(error), false),
    };
    let result = f(&mut *conn, attempt).await;
    end_attempt_transaction(conn, outer, result).await
}

/// Opens the attempt's transaction: a locking transaction, or a savepoint when the
/// caller's transaction is open on the connection. Returns the depth outside it; on an
/// error the connection's state is unknown.
pub(super) async fn begin_attempt_transaction<C: AsyncLockingConnection>(
    conn: &mut C,
    attempt: &Attempt,
) -> Result<u32, Error> {
    let outer = transaction_depth(conn)?;
    // Inside the caller's transaction diesel-async's begin is a savepoint, which the
    // helper can end without ending the caller's transaction.
    if outer == 0 {
        conn.begin_locked_transaction_within(attempt.remaining())
            .await?;
    } else {
        C::TransactionManager::begin_transaction(conn).await?;
    }
    Ok(outer)
}

/// Ends the transaction [`begin_attempt_transaction`] opened above depth `outer`:
/// commits it after `Ok`, rolls it back after `Err`, and says whether the connection is
/// clean (not when the closure left the depth changed).
pub(super) async fn end_attempt_transaction<C: AsyncConnection, T>(
    conn: &mut C,
    outer: u32,
    result: Result<T, Error>,
) -> (Result<T, Error>, bool) {
    match transaction_depth(conn) {
        Ok(depth) if Some(depth) == outer.checked_add(1) => end_transaction(conn, result).await,
        // A locking read that got no answer marked the connection broken: its error
        // stands, and no statement (not even the ROLLBACK) goes to that server again.
        Err(_) if result.as_ref().err().is_some_and(abandoned_read) => (result, false),
        depth => (crate::retry::unbalanced(result, depth), false),
    }
}

/// Gives up on a locking read that got no answer in time. The read is still in flight:
/// no statement may follow on this connection (not even the ROLLBACK), so its
/// transaction state is marked broken and the helper discards it.
fn abandon_read<C: AsyncConnection>(conn: &mut C, table: &'static str) -> Error {
    C::TransactionManager::transaction_manager_status_mut(conn).set_in_error();
    tracing::warn!(
        target: "diesel_occ",
        table,
        "occ locking read got no answer within the retry deadline; discarding its connection"
    );
    deadline::no_answer()
}

/// Whether `error` is a locking read the helper abandoned ([`deadline::no_answer`]).
fn abandoned_read(error: &Error) -> bool {
    matches!(error, Error::Database(database) if matches!(
        database.diesel_error(),
        diesel::result::Error::DatabaseError(_, info) if info.message() == deadline::NO_ANSWER
    ))
}

/// How many transactions (the outermost and its savepoints) are open on `conn`.
pub(super) fn transaction_depth<C: AsyncConnection>(conn: &mut C) -> Result<u32, Error> {
    let status = C::TransactionManager::transaction_manager_status_mut(conn);
    Ok(status.transaction_depth()?.map_or(0, |depth| depth.get()))
}

/// Commits the attempt's transaction after `Ok`, rolls it back after `Err`. Also says
/// whether it ended cleanly.
async fn end_transaction<C, T>(conn: &mut C, result: Result<T, Error>) -> (Result<T, Error>, bool)
where
    C: AsyncConnection,
{
    match result {
        Ok(value) => match super::transaction::commit(conn).await {
            Ok(()) => (Ok(value), true),
            Err(error) => (Err(error.into()), false),
        },
        Err(error) => match C::TransactionManager::rollback_transaction(conn).await {
            Ok(()) => (Err(error), true),
            Err(rollback) => {
                tracing::warn!(
                    target: "diesel_occ",
                    error = %DatabaseError::from(rollback),
                    "occ escalated attempt could not roll back; discarding its connection"
                );
                (Err(error), false)
            }
        },
    }
}

/// Reads for a retry attempt on an async connection: the twin of
/// [`blocking::AttemptDsl`](crate::blocking::AttemptDsl). Implemented for [`Attempt`]; in
/// [`prelude`](super::prelude).
pub trait AttemptDsl<Conn: AsyncConnection> {
    /// Loads the row with this key, or [`Error::NotFound`].
    ///
    /// On an escalated attempt the read locks the row until the attempt's transaction
    /// ends: `SELECT ... FOR UPDATE` on PostgreSQL and MySQL; on SQLite the attempt's
    /// `BEGIN IMMEDIATE` already holds the write lock, so the read is plain. A
    /// [hot row](RetryPolicy::escalate_hot_rows) is read the same way when the attempt
    /// [runs in a transaction](Attempt::runs_in_transaction), which the helper opened
    /// before the closure ([`Attempt::locks_row`] tells). Otherwise it is
    /// [`EntityDsl::find`].
    fn find<T: EntityDsl<Conn>>(
        &self,
        conn: &mut Conn,
        key: T::Key,
    ) -> impl Future<Output = Result<T, Error>> + Send;
}

impl<Conn: AsyncLockingConnection> AttemptDsl<Conn> for Attempt {
    fn find<T: EntityDsl<Conn>>(
        &self,
        conn: &mut Conn,
        key: T::Key,
    ) -> impl Future<Output = Result<T, Error>> + Send {
        let locks = self.locks_row::<T>(&key);
        let escalated = self.is_escalated();
        let due = self.deadline();
        async move {
            if !locks {
                return <T as EntityDsl<Conn>>::find(conn, key).await;
            }
            if !escalated {
                observe::hot_row_locked(T::sql_table_name(), &key);
            }
            let remaining = deadline::remaining(due);
            let read = T::find_locked(conn, key.clone(), remaining);
            let found = match remaining {
                None => read.await,
                // The server ends the lock wait at `left`; this ends a wait for a server
                // that does not answer at all (a dead or cut-off node).
                Some(left) => {
                    let bound = left.saturating_add(deadline::NO_ANSWER_GRACE);
                    match tokio::time::timeout(bound, read).await {
                        Ok(found) => found,
                        Err(_elapsed) => return Err(abandon_read(conn, T::sql_table_name())),
                    }
                }
            };
            found
                .map_err(|error| deadline::locked_read_error(error, remaining))?
                .ok_or_else(|| outcome::not_found::<T>(&key))
        }
    }
}
