//! The blocking retry helper, [`retry`], and what it runs on: [`ConnectionSource`],
//! [`AttemptDsl`] and [`LockingConnection`]. Its contract is in [`crate::retry`].

use std::time::{Duration, Instant};

use diesel::connection::{AnsiTransactionManager, Connection, TransactionManager};
use diesel::result::QueryResult;
use std::ops::DerefMut;

use super::EntityDsl;
use crate::backend::LockingBackend;
use crate::error::{Error, PoolError};
use crate::observe;
use crate::outcome;
use crate::retry::{
    Attempt, OwnedConnection, RetryLoop, RetryPolicy, Step, deadline, lost_session,
};

/// A blocking connection that can open an escalated retry attempt's transaction.
///
/// Implemented for every connection of a `LockingBackend` that uses Diesel's
/// `AnsiTransactionManager`: `PgConnection`, `MysqlConnection` and `SqliteConnection`.
/// The transaction is committed or rolled back through the connection's own
/// `TransactionManager`, as any Diesel transaction.
pub trait LockingConnection: Connection {
    /// Opens the transaction with `LockingBackend::BEGIN_LOCKED`. Fails with
    /// `AlreadyInTransaction` when a transaction is open.
    fn begin_locked_transaction(&mut self) -> QueryResult<()> {
        self.begin_locked_transaction_within(None)
    }

    /// Opens the transaction with `LockingBackend::begin_locked_within`, so that its
    /// lock waits end within `remaining` where the backend bounds them at the start of
    /// a transaction (PostgreSQL). Fails with `AlreadyInTransaction` when a transaction
    /// is open.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel::prelude::*;
    /// use diesel::connection::{AnsiTransactionManager, TransactionManager};
    /// use diesel_occ::blocking::LockingConnection;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut conn = SqliteConnection::establish(":memory:")?;
    /// conn.begin_locked_transaction_within(Some(Duration::from_millis(300)))?;
    /// AnsiTransactionManager::commit_transaction(&mut conn)?;
    /// # Ok(())
    /// # }
    /// ```
    fn begin_locked_transaction_within(&mut self, remaining: Option<Duration>) -> QueryResult<()>;
}

impl<C> LockingConnection for C
where
    C: Connection<TransactionManager = AnsiTransactionManager>,
    C::Backend: LockingBackend,
{
    fn begin_locked_transaction_within(&mut self, remaining: Option<Duration>) -> QueryResult<()> {
        let begin = C::Backend::begin_locked_within(remaining);
        AnsiTransactionManager::begin_transaction_sql(self, &begin)
    }
}

/// Where the blocking retry helper gets a connection for each attempt.
///
/// Implemented for Diesel's r2d2 `Pool<ConnectionManager<C>>` (feature `r2d2`) and for
/// any closure `Fn() -> Result<C, E>` where `E: Into<PoolError>` (such as
/// `|| SqliteConnection::establish(url)`, which connects once per attempt). For another
/// pool, implement it:
///
/// ```
/// use diesel::prelude::*;
/// use diesel_occ::blocking::ConnectionSource;
/// use diesel_occ::{PoolError, PoolErrorKind};
///
/// /// A pool of one, for the sake of the example.
/// struct OnlyOne(std::sync::Mutex<Option<SqliteConnection>>);
///
/// /// Puts the connection back when dropped.
/// struct Lease<'a>(&'a OnlyOne, Option<SqliteConnection>);
///
/// impl std::ops::Deref for Lease<'_> {
///     type Target = SqliteConnection;
///     fn deref(&self) -> &SqliteConnection { self.1.as_ref().unwrap() }
/// }
/// impl std::ops::DerefMut for Lease<'_> {
///     fn deref_mut(&mut self) -> &mut SqliteConnection { self.1.as_mut().unwrap() }
/// }
/// impl Drop for Lease<'_> {
///     fn drop(&mut self) { *self.0.0.lock().unwrap() = self.1.take(); }
/// }
///
/// impl ConnectionSource for OnlyOne {
///     type Connection = SqliteConnection;
///     type Pooled<'a> = Lease<'a>;
///
///     fn checkout(&self) -> Result<Lease<'_>, PoolError> {
///         let conn = self.0.lock().unwrap().take();
///         match conn {
///             Some(conn) => Ok(Lease(self, Some(conn))),
///             None => Err(PoolError::from_kind(PoolErrorKind::Timeout)),
///         }
///     }
/// }
/// ```
pub trait ConnectionSource {
    /// The connection an attempt works with.
    type Connection: Connection;

    /// What a checkout hands out: a pooled connection that goes back to its pool when
    /// dropped, or an owned one.
    type Pooled<'a>: DerefMut<Target = Self::Connection>
    where
        Self: 'a;

    /// Checks a connection out for one attempt. The helper drops it when the attempt
    /// ends, before it sleeps.
    fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError>;

    /// Checks a connection out, waiting at most `remaining` (the time left before the
    /// policy's [deadline](RetryPolicy::deadline); `None` without one); the helper
    /// calls this. Running out of time is a [`PoolErrorKind::Timeout`](crate::PoolErrorKind::Timeout).
    ///
    /// The default calls [`checkout`](Self::checkout), whose wait a blocking call cannot
    /// cut short: override it when your pool can bound a wait, as the r2d2
    /// implementation does with `Pool::get_timeout`. A closure source connects without
    /// a bound of ours (the driver's connect timeout applies).
    fn checkout_within(&self, remaining: Option<Duration>) -> Result<Self::Pooled<'_>, PoolError> {
        let _ = remaining;
        self.checkout()
    }

    /// Gets rid of a connection whose state is unknown (its transaction could not be
    /// committed or rolled back) or whose session is gone, so that it is not used
    /// again. The default drops it, which is right for owned connections; a pool must
    /// not take it back (the r2d2 implementation marks it broken first, so that
    /// Diesel's `ConnectionManager` closes it).
    fn discard(&self, pooled: Self::Pooled<'_>) {
        drop(pooled);
    }
}

impl<F, C, E> ConnectionSource for F
where
    F: Fn() -> Result<C, E>,
    C: Connection,
    E: Into<PoolError>,
{
    type Connection = C;
    type Pooled<'a>
        = OwnedConnection<C>
    where
        Self: 'a;

    fn checkout(&self) -> Result<OwnedConnection<C>, PoolError> {
        self().map(OwnedConnection::new).map_err(Into::into)
    }
}

#[cfg(feature = "r2d2")]
impl<C> ConnectionSource for diesel::r2d2::Pool<diesel::r2d2::ConnectionManager<C>>
where
    C: diesel::r2d2::R2D2Connection + Send + 'static,
{
    type Connection = C;
    type Pooled<'a> = diesel::r2d2::PooledConnection<diesel::r2d2::ConnectionManager<C>>;

    /// `Pool::get`. r2d2 reports every checkout failure as a timeout (it keeps retrying
    /// to connect until its `connection_timeout`).
    fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        self.checkout_within(None)
    }

    /// `Pool::get_timeout` with the pool's `connection_timeout` or the time left,
    /// whichever is shorter.
    fn checkout_within(&self, remaining: Option<Duration>) -> Result<Self::Pooled<'_>, PoolError> {
        self.get_timeout(deadline::pool_wait(self.connection_timeout(), remaining))
            .map_err(|error| PoolError::new(crate::PoolErrorKind::Timeout, error))
    }

    /// Marks the connection's transaction manager as in error before dropping it, so
    /// that r2d2 (through `ConnectionManager::has_broken`) closes it instead of pooling
    /// it again: a dead session is not in a transaction, and a pool built with
    /// `test_on_check_out(false)` would hand it out untested.
    fn discard(&self, mut pooled: Self::Pooled<'_>) {
        C::TransactionManager::transaction_manager_status_mut(&mut pooled).set_in_error();
        drop(pooled);
    }
}

/// Runs `attempt` until it succeeds, fails with an error that is not worth retrying,
/// or `policy` gives up ([`Error::RetriesExhausted`]).
///
/// Every attempt checks a fresh connection out of `source` and drops it before the
/// backoff sleep ([discards](ConnectionSource::discard) it when its session was lost
/// or its transaction could not be ended); a checkout failure ends the loop with
/// [`Error::Pool`]. An attempt
/// that [runs in a transaction](Attempt::runs_in_transaction) (escalated, or a hot-row
/// policy's while a row is hot) gets one opened with the backend's
/// [`BEGIN_LOCKED`](crate::backend::LockingBackend::BEGIN_LOCKED) before the closure
/// (a savepoint inside a caller's transaction), committed on `Ok` and rolled back on
/// `Err`; a failed commit (such as a serialization failure) is retried like any
/// transient error. See the [`retry` module](crate::retry) for the closure's contract,
/// the [atomicity rule](crate::retry#atomicity) and an example.
///
/// The closure is `FnMut`; the async helper takes an async closure instead.
pub fn retry<S, T, F>(source: &S, policy: &RetryPolicy, mut attempt: F) -> Result<T, Error>
where
    S: ConnectionSource + ?Sized,
    S::Connection: LockingConnection,
    F: FnMut(&mut S::Connection, Attempt) -> Result<T, Error>,
{
    drive(policy, |current| run_attempt(source, current, &mut attempt))
}

/// The loop every blocking helper runs: the next [`Attempt`] of `policy`, `run` it in
/// its span, then stop with its result or sleep and go on, as [`RetryLoop`] decides.
pub(super) fn drive<T>(
    policy: &RetryPolicy,
    mut run: impl FnMut(Attempt) -> Result<T, Error>,
) -> Result<T, Error> {
    let started = Instant::now();
    let mut state = RetryLoop::new(policy);
    let span = observe::retry_span();
    let _in_span = span.enter();
    loop {
        let current = state.next_attempt();
        let result = {
            let _span = observe::attempt_span(current.number(), current.is_escalated()).entered();
            run(current)
        };
        match state.after(result, started.elapsed()) {
            Step::Done(result) => {
                observe::retry_ended(&span, state.attempts(), &result);
                return result;
            }
            Step::Retry(backoff) => std::thread::sleep(backoff),
        }
    }
}

/// One attempt on a fresh connection, which is dropped on return, or discarded when its
/// state is unknown or its session is gone.
fn run_attempt<S, T, F>(source: &S, attempt: Attempt, f: &mut F) -> Result<T, Error>
where
    S: ConnectionSource + ?Sized,
    S::Connection: LockingConnection,
    F: FnMut(&mut S::Connection, Attempt) -> Result<T, Error>,
{
    let mut pooled = source.checkout_within(attempt.remaining())?;
    let (result, clean) = attempt_on(&mut *pooled, attempt, f);
    if !clean || lost_session::dead_after(&mut *pooled, &result) {
        source.discard(pooled);
    }
    result
}

/// One attempt on a connection already checked out: inside the attempt's transaction
/// when it [runs in one](Attempt::runs_in_transaction). Also says whether the
/// connection is clean. The async helper for wrapped blocking connections runs this on
/// the blocking pool.
pub(crate) fn attempt_on<C, T, F>(
    conn: &mut C,
    attempt: Attempt,
    f: &mut F,
) -> (Result<T, Error>, bool)
where
    C: LockingConnection,
    F: FnMut(&mut C, Attempt) -> Result<T, Error>,
{
    if attempt.runs_in_transaction() {
        in_attempt_transaction(conn, attempt, f)
    } else {
        (f(conn, attempt), true)
    }
}

/// The closure inside the attempt's transaction, which opens before it: a locking
/// transaction, or a savepoint when the caller's transaction is open on the connection.
/// Also says whether the connection is clean.
fn in_attempt_transaction<C, T, F>(
    conn: &mut C,
    attempt: Attempt,
    f: &mut F,
) -> (Result<T, Error>, bool)
where
    C: LockingConnection,
    F: FnMut(&mut C, Attempt) -> Result<T, Error>,
{
    let outer = match begin_attempt_transaction(conn, &attempt) {
        Ok(outer) => outer,
        Err(error) => return (Err(error), false),
    };
    let result = f(conn, attempt);
    end_attempt_transaction(conn, outer, result)
}

/// Opens the attempt's transaction: a locking transaction, or a savepoint when the
/// caller's transaction is open on the connection. Returns the depth outside it; on an
/// error the connection's state is unknown.
pub(super) fn begin_attempt_transaction<C: LockingConnection>(
    conn: &mut C,
    attempt: &Attempt,
) -> Result<u32, Error> {
    let outer = transaction_depth(conn)?;
    // Inside the caller's transaction Diesel's begin is a savepoint, which the helper
    // can end without ending the caller's transaction.
    if outer == 0 {
        conn.begin_locked_transaction_within(attempt.remaining())?;
    } else {
        C::TransactionManager::begin_transaction(conn)?;
    }
    Ok(outer)
}

/// Ends the transaction [`begin_attempt_transaction`] opened above depth `outer`:
/// commits it after `Ok`, rolls it back after `Err`, and says whether the connection is
/// clean (not when the closure left the depth changed).
pub(super) fn end_attempt_transaction<C: Connection, T>(
    conn: &mut C,
    outer: u32,
    result: Result<T, Error>,
) -> (Result<T, Error>, bool) {
    match transaction_depth(conn) {
        Ok(depth) if Some(depth) == outer.checked_add(1) => end_transaction(conn, result),
        depth => (crate::retry::unbalanced(result, depth), false),
    }
}

/// How many transactions (the outermost and its savepoints) are open on `conn`.
pub(super) fn transaction_depth<C: Connection>(conn: &mut C) -> Result<u32, Error> {
    let status = C::TransactionManager::transaction_manager_status_mut(conn);
    Ok(status.transaction_depth()?.map_or(0, |depth| depth.get()))
}

/// Commits the attempt's transaction after `Ok`, rolls it back after `Err`. Also says
/// whether it ended cleanly.
fn end_transaction<C, T>(conn: &mut C, result: Result<T, Error>) -> (Result<T, Error>, bool)
where
    C: Connection,
{
    match result {
        Ok(value) => match super::transaction::commit(conn) {
            Ok(()) => (Ok(value), true),
            Err(error) => (Err(error.into()), false),
        },
        Err(error) => match C::TransactionManager::rollback_transaction(conn) {
            Ok(()) => (Err(error), true),
            Err(rollback) => {
                tracing::warn!(
                    target: "diesel_occ",
                    error = %crate::error::DatabaseError::from(rollback),
                    "occ escalated attempt could not roll back; discarding its connection"
                );
                (Err(error), false)
            }
        },
    }
}

/// Reads for a retry attempt: a plain read, or a locking one when the attempt is
/// escalated. Implemented for [`Attempt`]; in [`prelude`](crate::prelude).
///
/// The async twin is `diesel_occ::asynchronous::AttemptDsl`.
pub trait AttemptDsl<Conn: Connection> {
    /// Loads the row with this key, or [`Error::NotFound`].
    ///
    /// On an escalated attempt the read locks the row until the attempt's transaction
    /// ends: `SELECT ... FOR UPDATE` on PostgreSQL and MySQL; on SQLite the attempt's
    /// `BEGIN IMMEDIATE` already holds the write lock, so the read is plain. A
    /// [hot row](RetryPolicy::escalate_hot_rows) is read the same way when the attempt
    /// [runs in a transaction](Attempt::runs_in_transaction), which the helper opened
    /// before the closure ([`Attempt::locks_row`] tells). Otherwise it is
    /// [`EntityDsl::find`].
    fn find<T: EntityDsl<Conn>>(&self, conn: &mut Conn, key: T::Key) -> Result<T, Error>;
}

impl<Conn: LockingConnection> AttemptDsl<Conn> for Attempt {
    fn find<T: EntityDsl<Conn>>(&self, conn: &mut Conn, key: T::Key) -> Result<T, Error> {
        if !self.locks_row::<T>(&key) {
            return <T as EntityDsl<Conn>>::find(conn, key);
        }
        if !self.is_escalated() {
            observe::hot_row_locked(T::sql_table_name(), &key);
        }
        let remaining = self.remaining();
        T::find_locked(conn, key.clone(), remaining)
            .map_err(|error| deadline::locked_read_error(error, remaining))?
            .ok_or_else(|| outcome::not_found::<T>(&key))
    }
}

#[cfg(test)]
mod tests;
