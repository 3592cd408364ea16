//! The async [`retry_with_standby`]: the twin of
//! [`blocking::retry_with_standby`](crate::blocking::retry_with_standby).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};

use super::retry::{
    AsyncAttemptFn, AsyncConnectionSource, AsyncLockingConnection, alive,
    begin_attempt_transaction, drive, end_attempt_transaction,
};
use crate::error::Error;
use crate::retry::{Attempt, RetryPolicy, lost_session};
use crate::standby::{conflicted, lost_connection};

/// The connections of one attempt of the async [`retry_with_standby`]: the twin of
/// [`blocking::StandbyConnections`](crate::blocking::StandbyConnections), with `async`
/// [`read`](Self::read) and [`write`](Self::write) returning `&mut C`.
///
/// Each connection is checked out the first time it is asked for and dropped with its
/// attempt, before the backoff sleep. When the attempt is cancelled (the helper's
/// future dropped), the connections it holds are discarded, not returned to their
/// pools, as the async [`retry`](super::retry) does with its own.
///
/// It names only the connection type, not the sources (unlike the blocking twin): the
/// future of your closure, which holds it, is then `Send` whatever sources you use,
/// also closures that borrow their URL. Each `read` and `write` call costs one small
/// allocation.
pub struct StandbyConnections<'h, C> {
    leases: &'h mut (dyn Lazy<C> + Send),
    reads_primary: bool,
}

impl<C: Send> StandbyConnections<'_, C> {
    /// The connection to read from: the standby's, unless this attempt reads from the
    /// primary ([`reads_from_primary`](Self::reads_from_primary)), when it is the same
    /// connection as [`write`](Self::write)'s. Checked out on the first call (within
    /// the policy's deadline); a checkout failure is [`Error::Pool`].
    pub async fn read(&mut self) -> Result<&mut C, Error> {
        self.leases.read().await
    }

    /// The primary's connection, for the checked saves (and for reads that must see
    /// the latest committed state). Checked out on the first call; on an attempt that
    /// [runs in a transaction](Attempt::runs_in_transaction) the helper's transaction
    /// opens on it then, and ends when the attempt ends.
    pub async fn write(&mut self) -> Result<&mut C, Error> {
        self.leases.write().await
    }

    /// True when [`read`](Self::read) goes to the primary: on every attempt after one
    /// that met a conflict, and on every attempt that
    /// [runs in a transaction](Attempt::runs_in_transaction).
    pub fn reads_from_primary(&self) -> bool {
        self.reads_primary
    }
}

impl<C> fmt::Debug for StandbyConnections<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StandbyConnections")
            .field("reads_from_primary", &self.reads_primary)
            .finish_non_exhaustive()
    }
}

/// A boxed `Send` future lending a connection.
type Lending<'a, C> = Pin<Box<dyn Future<Output = Result<&'a mut C, Error>> + Send + 'a>>;

/// What [`StandbyConnections`] calls: [`Leases`] with its sources out of sight.
trait Lazy<C> {
    fn read(&mut self) -> Lending<'_, C>;
    fn write(&mut self) -> Lending<'_, C>;
}

impl<P, S> Lazy<P::Connection> for Leases<'_, P, S>
where
    P: AsyncConnectionSource + ?Sized,
    S: AsyncConnectionSource<Connection = P::Connection> + ?Sized,
    P::Connection: AsyncLockingConnection + Send,
{
    fn read(&mut self) -> Lending<'_, P::Connection> {
        Box::pin(Leases::read(self))
    }

    fn write(&mut self) -> Lending<'_, P::Connection> {
        Box::pin(Leases::write(self))
    }
}

/// The connections an attempt checked out, from which sources, and what it may read.
struct Leases<'s, P, S>
where
    P: AsyncConnectionSource + ?Sized,
    S: AsyncConnectionSource<Connection = P::Connection> + ?Sized,
{
    primary_source: &'s P,
    standby_source: &'s S,
    attempt: Attempt,
    reads_primary: bool,
    primary: Option<PrimaryLease<P::Pooled<'s>>>,
    standby: Option<S::Pooled<'s>>,
}

/// The primary's connection of an attempt, and the transaction the helper opened on it.
struct PrimaryLease<C> {
    pooled: C,
    /// The transaction depth outside the helper's transaction, when it opened one.
    outer: Option<u32>,
    /// False until the helper's transaction (when the attempt needs one) is open.
    usable: bool,
}

impl<'s, P, S> Leases<'s, P, S>
where
    P: AsyncConnectionSource + ?Sized,
    S: AsyncConnectionSource<Connection = P::Connection> + ?Sized,
    P::Connection: AsyncLockingConnection,
{
    fn new(primary: &'s P, standby: &'s S, attempt: Attempt, after_conflict: bool) -> Self {
        Leases {
            primary_source: primary,
            standby_source: standby,
            reads_primary: after_conflict || attempt.runs_in_transaction(),
            attempt,
            primary: None,
            standby: None,
        }
    }

    /// [`StandbyConnections::read`].
    async fn read(&mut self) -> Result<&mut P::Connection, Error> {
        if self.reads_primary {
            return self.write().await;
        }
        if self.standby.is_none() {
            let pooled = self
                .standby_source
                .checkout_within(self.attempt.remaining())
                .await?;
            self.standby = Some(pooled);
        }
        self.standby.as_deref_mut().ok_or_else(lost_connection)
    }

    /// [`StandbyConnections::write`].
    async fn write(&mut self) -> Result<&mut P::Connection, Error> {
        if self.primary.is_none() {
            let pooled = self
                .primary_source
                .checkout_within(self.attempt.remaining())
                .await?;
            // Held here while the transaction opens: a cancelled attempt discards it.
            let lease = self.primary.insert(PrimaryLease {
                pooled,
                outer: None,
                usable: false,
            });
            if self.attempt.runs_in_transaction() {
                lease.outer =
                    Some(begin_attempt_transaction(&mut *lease.pooled, &self.attempt).await?);
            }
            lease.usable = true;
        }
        match self.primary.as_mut() {
            Some(lease) if lease.usable => Ok(&mut *lease.pooled),
            _ => Err(lost_connection()),
        }
    }

    /// Ends the attempt: ends the helper's transaction on the primary's connection,
    /// and returns each connection that is clean and alive. What is left is discarded
    /// when `self` drops.
    async fn finish<T>(mut self, result: Result<T, Error>) -> Result<T, Error> {
        // A lost session may be either connection's: after such an error each is
        // returned only if it still answers (one round trip).
        let suspect = lost_session::suspect(&result);
        if let Some(standby) = self.standby.as_deref_mut() {
            if !suspect || alive(standby).await {
                drop(self.standby.take());
            }
        }
        let (result, clean) = match self.primary.as_mut() {
            None => return result,
            Some(lease) => match lease.outer {
                Some(outer) if lease.usable => {
                    end_attempt_transaction(&mut *lease.pooled, outer, result).await
                }
                _ => (result, lease.usable),
            },
        };
        if let Some(lease) = self.primary.as_mut() {
            if clean && (!suspect || alive(&mut *lease.pooled).await) {
                drop(self.primary.take());
            }
        }
        result
    }
}

impl<P, S> Drop for Leases<'_, P, S>
where
    P: AsyncConnectionSource + ?Sized,
    S: AsyncConnectionSource<Connection = P::Connection> + ?Sized,
{
    /// Discards what the attempt still holds: it was cancelled, or its state is unknown.
    fn drop(&mut self) {
        if let Some(pooled) = self.standby.take() {
            tracing::debug!(target: "diesel_occ", "occ standby attempt cancelled or its standby connection lost; discarding it");
            self.standby_source.discard(pooled);
        }
        if let Some(lease) = self.primary.take() {
            tracing::debug!(target: "diesel_occ", "occ standby attempt did not end cleanly; discarding its primary connection");
            self.primary_source.discard(lease.pooled);
        }
    }
}

/// Runs `attempt` like the async [`retry`](super::retry), with reads from a standby and
/// checked saves on the primary: the twin of
/// [`blocking::retry_with_standby`](crate::blocking::retry_with_standby), whose documentation
/// has the staleness contract (what a standby read may return, why the checked save
/// still loses no update, and why a standby costs an operation at most one extra
/// conflict).
///
/// The closure is an async closure `async |conns, attempt| { ... }` run once per attempt
/// on a clone of it; `conns.read().await?` and `conns.write().await?` give the
/// connections. The returned future is `Send`; dropping it discards the connections of
/// the running attempt.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_async::AsyncConnection;
/// use diesel_occ::asynchronous::prelude::*;
/// use diesel_occ::asynchronous;
/// use diesel_occ::retry::RetryPolicy;
///
/// type Conn = SyncConnectionWrapper<SqliteConnection>; // AsyncPgConnection in production
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// # let (primary_url, _keep_primary) = shared_database("async_retry_with_standby_doc_primary");
/// # let (standby_url, _keep_standby) = shared_database("async_retry_with_standby_doc_standby");
/// # diesel::sql_query("UPDATE stock SET available = 7, version = 2").execute(&mut SqliteConnection::establish(&primary_url).unwrap())?;
/// // The standby lags: it still shows version 1, the primary has version 2.
/// let primary = || Conn::establish(&primary_url); // or a deadpool pool
/// let standby = || Conn::establish(&standby_url);
///
/// let (left, attempts) = asynchronous::retry_with_standby(&primary, &standby, &RetryPolicy::new(), async |conns, attempt| {
///     let mut stock: Stock = attempt.find(conns.read().await?, 1).await?;
///     stock.available -= 1;
///     stock.save_checked(conns.write().await?).await?;
///     Ok((stock.available, attempt.number()))
/// })
/// .await?;
/// assert_eq!((left, attempts), (6, 2)); // the stale read conflicted once
/// # Ok(())
/// # }
/// ```
// Not an `async fn`: the signature promises a `Send` future, checked here once rather
// than at every call site.
#[allow(clippy::manual_async_fn)]
pub fn retry_with_standby<'s, P, S, T, F>(
    primary: &'s P,
    standby: &'s S,
    policy: &'s RetryPolicy,
    attempt: F,
) -> impl Future<Output = Result<T, Error>> + Send + 's
where
    P: AsyncConnectionSource + ?Sized,
    S: AsyncConnectionSource<Connection = P::Connection> + ?Sized,
    P::Connection: AsyncLockingConnection + Send,
    for<'c, 'h> F: AsyncFnOnce(&'c mut StandbyConnections<'h, P::Connection>, Attempt) -> Result<T, Error>
        + AsyncAttemptFn<&'c mut StandbyConnections<'h, P::Connection>, Result<T, Error>, Fut: Send>
        + Clone
        + Send
        + 's,
    T: Send + 's,
{
    async move {
        let after_conflict = AtomicBool::new(false);
        let after_conflict = &after_conflict;
        drive(policy, move |current| {
            run_attempt(primary, standby, current, after_conflict, attempt.clone())
        })
        .await
    }
}

/// One attempt with its [`StandbyConnections`]; notes in `after_conflict` that it met a
/// conflict.
async fn run_attempt<'s, P, S, T, F>(
    primary: &'s P,
    standby: &'s S,
    attempt: Attempt,
    after_conflict: &AtomicBool,
    f: F,
) -> Result<T, Error>
where
    P: AsyncConnectionSource + ?Sized,
    S: AsyncConnectionSource<Connection = P::Connection> + ?Sized,
    P::Connection: AsyncLockingConnection + Send,
    for<'c, 'h> F: AsyncFnOnce(&'c mut StandbyConnections<'h, P::Connection>, Attempt) -> Result<T, Error>
        + AsyncAttemptFn<&'c mut StandbyConnections<'h, P::Connection>, Result<T, Error>, Fut: Send>
        + Send,
    T: Send,
{
    let reads_primary = after_conflict.load(Ordering::Relaxed);
    let mut leases = Leases::new(primary, standby, attempt.clone(), reads_primary);
    let result = {
        let mut conns = StandbyConnections {
            reads_primary: leases.reads_primary,
            leases: &mut leases,
        };
        f(&mut conns, attempt).await
    };
    let result = leases.finish(result).await;
    if conflicted(&result) {
        after_conflict.store(true, Ordering::Relaxed);
    }
    result
}
