//! [`retry_with_standby`]: attempts that read from a standby (a read replica, possibly
//! stale) and save to the primary, and re-read from the primary once a save conflicted.

use std::fmt;

use super::ConnectionSource;
use super::retry::{begin_attempt_transaction, drive, end_attempt_transaction};
use crate::blocking::LockingConnection;
use crate::error::Error;
use crate::retry::{Attempt, RetryPolicy, lost_session};
use crate::standby::{conflicted, lost_connection};

/// The connections of one attempt of [`retry_with_standby`]: [`read`](Self::read) for
/// the reads, [`write`](Self::write) for the checked saves. Each is checked out the
/// first time it is asked for and dropped when the attempt ends, before the backoff
/// sleep.
pub struct StandbyConnections<'s, P, S>
where
    P: ConnectionSource + ?Sized,
    S: ConnectionSource<Connection = P::Connection> + ?Sized,
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
    /// False once opening the helper's transaction failed: the connection's state is
    /// unknown.
    usable: bool,
}

impl<'s, P, S> StandbyConnections<'s, P, S>
where
    P: ConnectionSource + ?Sized,
    S: ConnectionSource<Connection = P::Connection> + ?Sized,
    P::Connection: LockingConnection,
{
    fn new(primary: &'s P, standby: &'s S, attempt: Attempt, after_conflict: bool) -> Self {
        StandbyConnections {
            primary_source: primary,
            standby_source: standby,
            reads_primary: after_conflict || attempt.runs_in_transaction(),
            attempt,
            primary: None,
            standby: None,
        }
    }

    /// The connection to read from: the standby's, unless this attempt reads from the
    /// primary ([`reads_from_primary`](Self::reads_from_primary)), when it is the same
    /// connection as [`write`](Self::write)'s. Checked out on the first call (within
    /// the policy's deadline); a checkout failure is [`Error::Pool`].
    pub fn read(&mut self) -> Result<&mut P::Connection, Error> {
        if self.reads_primary {
            return self.write();
        }
        if self.standby.is_none() {
            let pooled = self
                .standby_source
                .checkout_within(self.attempt.remaining())?;
            self.standby = Some(pooled);
        }
        self.standby.as_deref_mut().ok_or_else(lost_connection)
    }

    /// The primary's connection, for the checked saves (and for reads that must see
    /// the latest committed state). Checked out on the first call; on an attempt that
    /// [runs in a transaction](Attempt::runs_in_transaction) the helper's transaction
    /// opens on it then, and ends when the attempt ends.
    pub fn write(&mut self) -> Result<&mut P::Connection, Error> {
        if self.primary.is_none() {
            let pooled = self
                .primary_source
                .checkout_within(self.attempt.remaining())?;
            let mut lease = PrimaryLease {
                pooled,
                outer: None,
                usable: true,
            };
            let begun = if self.attempt.runs_in_transaction() {
                begin_attempt_transaction(&mut *lease.pooled, &self.attempt).map(Some)
            } else {
                Ok(None)
            };
            let begun = begun.map(|outer| lease.outer = outer);
            lease.usable = begun.is_ok();
            self.primary = Some(lease);
            begun?;
        }
        match self.primary.as_mut() {
            Some(lease) if lease.usable => Ok(&mut *lease.pooled),
            _ => Err(lost_connection()),
        }
    }

    /// True when [`read`](Self::read) goes to the primary: on every attempt after one
    /// that met a conflict, and on every attempt that
    /// [runs in a transaction](Attempt::runs_in_transaction) (escalated, or a hot-row
    /// policy's while a row is hot), whose reads must lock on the primary.
    pub fn reads_from_primary(&self) -> bool {
        self.reads_primary
    }

    /// Ends the attempt: ends the helper's transaction on the primary's connection,
    /// drops each connection that is clean and alive, and discards the rest.
    fn finish<T>(mut self, result: Result<T, Error>) -> Result<T, Error> {
        // A lost session may be either connection's: after such an error each is
        // returned only if it still answers (one round trip).
        let suspect = lost_session::suspect(&result);
        if let Some(mut standby) = self.standby.take() {
            if suspect && !lost_session::alive(&mut *standby) {
                self.standby_source.discard(standby);
            }
        }
        let Some(mut lease) = self.primary.take() else {
            return result;
        };
        let (result, clean) = match lease.outer {
            Some(outer) if lease.usable => {
                end_attempt_transaction(&mut *lease.pooled, outer, result)
            }
            _ => (result, lease.usable),
        };
        if !clean || suspect && !lost_session::alive(&mut *lease.pooled) {
            self.primary_source.discard(lease.pooled);
        }
        result
    }
}

impl<P, S> fmt::Debug for StandbyConnections<'_, P, S>
where
    P: ConnectionSource + ?Sized,
    S: ConnectionSource<Connection = P::Connection> + ?Sized,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StandbyConnections")
            .field("attempt", &self.attempt.number())
            .field("reads_from_primary", &self.reads_primary)
            .field("primary_checked_out", &self.primary.is_some())
            .field("standby_checked_out", &self.standby.is_some())
            .finish()
    }
}

/// Runs `attempt` like [`retry`](super::retry), with reads from a standby and checked
/// saves on the primary: the repository pattern on a primary with read replicas.
///
/// Each attempt gets [`StandbyConnections`]: `conns.read()` is a connection to the
/// standby (from `standby`) and `conns.write()` one to the primary (from `primary`),
/// each checked out when first asked for, within the policy's deadline, and dropped
/// before the backoff sleep. Once an attempt of the operation has met a conflict, every
/// later attempt's `conns.read()` is the primary's connection (the same as
/// `conns.write()`), so the retry never loops on a stale standby. An attempt that
/// [runs in a transaction](Attempt::runs_in_transaction) (escalated, or under a hot-row
/// policy while a row is hot) reads from the primary too: its locking reads
/// (`AttemptDsl::find` on `conns.read()`) and its save run on the primary, inside the
/// helper's transaction, which opens when the primary's connection is checked out.
///
/// # The staleness contract
///
/// - **What a standby read may return:** the row as the standby has replayed it, which
///   can be older than the primary's (an older token, older values), a row the primary
///   has deleted since, or nothing for a row the primary has created since. Do not
///   decide anything final from a standby read alone.
/// - **Why no update is lost:** the save is checked on the primary. A save built on a
///   stale read carries the stale token, matches no row there and fails with a
///   [`ConcurrencyConflict`](crate::ConcurrencyConflict), as it would after any other
///   writer's update; nothing of it is written.
/// - **Bounded attempts:** that conflict switches the operation's reads to the primary,
///   so a standby costs an operation at most one extra conflict, however far it lags;
///   every later attempt is an ordinary attempt on the primary, bounded by the policy
///   like [`retry`](super::retry)'s. The conflict counts towards
///   [`escalate_after`](RetryPolicy::escalate_after) like any other.
/// - **A row the standby has not seen yet** reads as [`Error::NotFound`], which ends the
///   loop like any `NotFound`. Where a row may be younger than the standby's lag, read
///   it again from `conns.write()` before concluding it is missing (example below).
/// - **Domain decisions:** a decision made from a stale read that does not end in a
///   checked save ("sold out", returned as `Ok(..)`) ends the loop without reaching the
///   primary; make such a decision from `conns.write()`, or confirm it with a checked
///   write.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
/// use diesel_occ::blocking;
/// use diesel_occ::retry::RetryPolicy;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// # let (primary_url, _keep_primary) = shared_database("retry_with_standby_doc_primary");
/// # let (standby_url, _keep_standby) = shared_database("retry_with_standby_doc_standby");
/// // The primary has moved on (version 2, 7 left); the standby still shows version 1.
/// # diesel::sql_query("UPDATE stock SET available = 7, version = 2").execute(&mut SqliteConnection::establish(&primary_url).unwrap())?;
/// let primary = || SqliteConnection::establish(&primary_url); // or an r2d2 pool
/// let standby = || SqliteConnection::establish(&standby_url);
///
/// let (left, attempts) = blocking::retry_with_standby(&primary, &standby, &RetryPolicy::new(), |conns, attempt| {
///     let found: Result<Stock, _> = attempt.find(conns.read()?, 1);
///     let mut stock: Stock = match found {
///         // Perhaps too young for the standby: ask the primary before giving up.
///         Err(error) if error.is_not_found() && !conns.reads_from_primary() => {
///             attempt.find(conns.write()?, 1)?
///         }
///         found => found?,
///     };
///     stock.available -= 1;
///     stock.save_checked(conns.write()?)?; // checked on the primary
///     Ok((stock.available, attempt.number()))
/// })?;
/// // The first attempt read version 1 on the standby and its save conflicted; the
/// // second read the primary: 7 - 1, not the stale 10 - 1.
/// assert_eq!((left, attempts), (6, 2));
/// # Ok(())
/// # }
/// ```
///
/// The async twin is `diesel_occ::asynchronous::retry_with_standby`.
pub fn retry_with_standby<'s, P, S, T, F>(
    primary: &'s P,
    standby: &'s S,
    policy: &RetryPolicy,
    mut attempt: F,
) -> Result<T, Error>
where
    P: ConnectionSource + ?Sized,
    S: ConnectionSource<Connection = P::Connection> + ?Sized,
    P::Connection: LockingConnection,
    F: FnMut(&mut StandbyConnections<'s, P, S>, Attempt) -> Result<T, Error>,
{
    let mut after_conflict = false;
    drive(policy, |current| {
        let mut conns = StandbyConnections::new(primary, standby, current.clone(), after_conflict);
        let result = attempt(&mut conns, current);
        let result = conns.finish(result);
        after_conflict |= conflicted(&result);
        result
    })
}
