//! Bounded retries: re-read, decide, save, and again on a conflict. What the blocking
//! helper, [`blocking::retry`](crate::blocking::retry), and its async twin share: the
//! [`RetryPolicy`] that bounds them, the [`Attempt`] each run of the closure gets, the
//! [`HotRows`] memory and [`OwnedConnection`]; the contract below holds for both.
//!
//! [`blocking::retry`] runs a closure until it succeeds, fails for good or the [`RetryPolicy`]
//! gives up. Each attempt gets a FRESH connection from a [`ConnectionSource`] (an r2d2
//! pool, a closure that connects, or your own pool), so the closure re-reads the row
//! and never works from what an earlier attempt saw. The async twin is
//! `diesel_occ::asynchronous::retry`.
//!
//! The closure returns `Result<T, diesel_occ::Error>`:
//!
//! - `Ok(value)` ends the loop with `Ok(value)`. A domain decision ("sold out") is a
//!   value too: return `Ok(Err(SoldOut))` with `T = Result<_, SoldOut>`, and the loop
//!   ends with it, as it should: retrying cannot change the answer.
//! - `Err(error)` with a [retryable](crate::Error::is_retryable) error (a conflict at
//!   write time, a deadlock, a serialization failure, a lock wait timeout, a busy
//!   SQLite) runs another attempt after a backoff; any other error ends the loop with
//!   it. `?` works on Diesel's own errors, which convert into [`Error`].
//! - When the policy gives up, the result is [`Error::RetriesExhausted`] with the
//!   number of attempts and the last error.
//! - A conflict of a write that takes the token as an argument (`update_by_key`,
//!   `delete_by_key`, `upsert_checked`: a client's `If-Match`) is a client-token
//!   conflict ([`Operation::ClientToken`](crate::Operation::ClientToken)): running the
//!   same call again meets the same row, so it ends the loop at once and does not count
//!   the row as hot. Read the entity in the attempt and save it with `save_checked` for
//!   a write that a re-read can fix.
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel_occ::prelude::*;
//! use diesel_occ::blocking;
//! use diesel_occ::retry::RetryPolicy;
//!
//! #[derive(Debug, PartialEq)]
//! struct SoldOut;
//!
//! # fn main() -> Result<(), diesel_occ::Error> {
//! # let (url, _keep) = shared_database("retry_module_doc");
//! // Any `Fn() -> Result<Connection, _>` is a source; so is an r2d2 pool (feature `r2d2`).
//! let source = || SqliteConnection::establish(&url);
//! let policy = RetryPolicy::new().max_attempts(5).escalate_after(2);
//!
//! let reserve = |quantity: i32| {
//!     blocking::retry(&source, &policy, |conn, attempt| {
//!         let mut stock: Stock = attempt.find(conn, 1)?; // fresh read, every attempt
//!         if stock.available < quantity {
//!             return Ok(Err(SoldOut)); // a decision, not a failure: no retry
//!         }
//!         stock.available -= quantity;
//!         stock.save_checked(conn)?; // a conflict here retries
//!         Ok(Ok(stock.available))
//!     })
//! };
//! assert_eq!(reserve(4)?, Ok(6));
//! assert_eq!(reserve(7)?, Err(SoldOut));
//! # Ok(())
//! # }
//! ```
//!
//! # Escalation
//!
//! Under heavy contention on one row, optimistic attempts keep losing. With
//! [`RetryPolicy::escalate_after`], the attempts after that many conflicts run inside a
//! transaction, and [`AttemptDsl::find`] reads with `SELECT ... FOR UPDATE` on
//! PostgreSQL and MySQL, or inside `BEGIN IMMEDIATE` on SQLite: the row is locked from
//! the read to the commit, so the save cannot conflict. Attempts before that, and all
//! attempts of work that does not collide, take no lock.
//!
//! That escalates one operation after its own conflicts. When some rows are hot and
//! most are not, [`RetryPolicy::escalate_hot_rows`] escalates per row instead: once a
//! row has met a few conflicts within a window, every attempt that reads it with
//! [`AttemptDsl::find`] locks it for a while, the first attempt of an operation
//! included, while reads of other rows stay lock-free. The conflicts are counted in a
//! [`HotRows`] memory that belongs to the policy (and its clones), never to the
//! process: two policies, two pools on two databases, two tests running side by side
//! never see each other's hot rows, unless they share a memory on purpose
//! ([`RetryPolicy::escalate_hot_rows_with`]).
//!
//! A lock makes every writer of a hot row wait its turn across several round trips.
//! When the change depends on the row alone, a `Combiner` (feature `combine`) does
//! better: the changes the threads of one process make to the row at the same time
//! share one read and one checked save.
//!
//! # Atomicity
//!
//! **An attempt's writes are all-or-nothing exactly as far as a transaction encloses
//! them: put a change to several rows in `conn.transaction(..)` inside the closure and
//! it lands whole or not at all on every kind of attempt, because a transaction the
//! helper opens always encloses the whole closure, is committed only when the closure
//! returns `Ok`, and turns yours into a savepoint.**
//!
//! - An optimistic attempt runs in no transaction of the helper's: each statement the
//!   closure runs outside a transaction of its own commits on its own.
//! - An escalated attempt, and every attempt of a hot-row policy that starts while the
//!   policy's memory holds a hot row ([`Attempt::runs_in_transaction`]), runs inside a
//!   transaction the helper opens before the closure (`BEGIN`; `BEGIN IMMEDIATE` on
//!   SQLite) and commits when the closure returns `Ok` or rolls back when it returns
//!   `Err`: such an attempt is all-or-nothing even without a transaction of the
//!   closure's, and a hot row it reads stays locked to the end, also when the closure
//!   opens a transaction of its own.
//! - A transaction the database rolled back is never `Ok`: on PostgreSQL a failed
//!   statement the closure caught aborts the transaction, and the helper's commit then
//!   reports the abort as the attempt's error (the error is not retryable) instead of
//!   the `ROLLBACK` PostgreSQL answers to `COMMIT`; MySQL, MariaDB and SQLite roll back
//!   only the failed statement, and the attempt commits. The library's own outcomes to
//!   match on (a conflict, a taken key) leave the transaction usable on every backend.
//! - The helper ends only transactions it began. When a connection comes out of the
//!   source already inside a transaction (a test transaction, a `BEGIN; SET LOCAL ...`
//!   for row-level security), the helper's transaction is a savepoint, which it
//!   releases or rolls back: the caller's transaction stays open and uncommitted. On
//!   SQLite such a savepoint cannot take the write lock up front, so a hot row read
//!   inside the caller's transaction is not locked (the token check still decides the
//!   save).
//!
//! [`blocking::retry`]: crate::blocking::retry
//! [`ConnectionSource`]: crate::blocking::ConnectionSource
//! [`AttemptDsl::find`]: crate::blocking::AttemptDsl::find
//! [`Error`]: crate::Error
//! [`Error::RetriesExhausted`]: crate::Error::RetriesExhausted

pub(crate) mod deadline;
mod hot_rows;
pub(crate) mod lost_session;
mod policy;

use std::fmt;
use std::ops::{Deref, DerefMut};

pub use self::hot_rows::HotRows;
pub use self::policy::{Attempt, RetryPolicy};
pub(crate) use self::policy::{RetryLoop, Step};

/// A connection that a source made for one attempt; it closes when dropped.
pub struct OwnedConnection<C>(C);

impl<C> OwnedConnection<C> {
    /// Wraps a connection.
    pub fn new(connection: C) -> Self {
        OwnedConnection(connection)
    }

    /// Unwraps the connection.
    pub fn into_inner(self) -> C {
        self.0
    }
}

impl<C> Deref for OwnedConnection<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.0
    }
}

impl<C> DerefMut for OwnedConnection<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.0
    }
}

impl<C> fmt::Debug for OwnedConnection<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedConnection").finish_non_exhaustive()
    }
}

/// The result of an attempt whose closure committed, rolled back or left open a
/// transaction level of its own, so that the helper cannot tell what its own
/// transaction holds: never `Ok`, because its writes may be lost with the connection.
pub(crate) fn unbalanced<T>(
    result: Result<T, crate::Error>,
    depth: Result<u32, crate::Error>,
) -> Result<T, crate::Error> {
    tracing::warn!(
        target: "diesel_occ",
        "occ attempt's closure left the attempt's transaction unbalanced; discarding its connection"
    );
    match (result, depth) {
        (Err(error), _) | (Ok(_), Err(error)) => Err(error),
        (Ok(_), Ok(_)) => Err(diesel::result::Error::BrokenTransactionManager.into()),
    }
}
