//! [`Attempt`]: what one run of a retried closure knows about its place in the loop.

use crate::retry::hot_rows::HotRows;
use crate::versioned::Versioned;
use std::time::{Duration, Instant};

/// What the closure of a retry helper learns about the attempt it runs.
///
/// ```
/// use diesel_occ::retry::{Attempt, RetryPolicy};
/// # let _ = |attempt: Attempt| {
/// if attempt.is_escalated() {
///     // this attempt runs in a transaction; read with `attempt.find(...)`
///     // (AttemptDsl) so the row stays locked until the save
/// }
/// # };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attempt {
    pub(super) number: u32,
    pub(super) max_attempts: u32,
    pub(super) conflicts: u32,
    pub(super) escalated: bool,
    pub(super) deadline: Option<Instant>,
    /// The policy's memory, when this attempt runs in the helper's transaction because
    /// the memory held a hot row as it started.
    pub(super) hot_rows: Option<HotRows>,
}

impl Attempt {
    /// The attempt's number, from 1.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// True for the first attempt.
    pub fn is_first(&self) -> bool {
        self.number == 1
    }

    /// True when no attempt follows this one, whatever happens (the attempt limit; a
    /// deadline may end the loop sooner).
    pub fn is_last(&self) -> bool {
        self.number >= self.max_attempts
    }

    /// How many earlier attempts met a conflict.
    pub fn conflicts(&self) -> u32 {
        self.conflicts
    }

    /// The time left before the policy's [deadline](super::RetryPolicy::deadline), zero once it
    /// has passed; `None` without a deadline. The helper bounds its own waits with it;
    /// a closure can bound its own slow work the same way.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel_occ::blocking;
    /// use diesel_occ::retry::RetryPolicy;
    /// # use diesel::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let source = || SqliteConnection::establish(":memory:");
    /// let policy = RetryPolicy::new().deadline(Duration::from_secs(2));
    /// let left = blocking::retry(&source, &policy, |_conn, attempt| Ok(attempt.remaining()))?;
    /// assert!(left.is_some_and(|left| left <= Duration::from_secs(2)));
    ///
    /// let unbounded = blocking::retry(&source, &RetryPolicy::new(), |_conn, attempt| Ok(attempt.remaining()))?;
    /// assert_eq!(unbounded, None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn remaining(&self) -> Option<Duration> {
        crate::retry::deadline::remaining(self.deadline)
    }

    /// When the policy's deadline falls, if it has one.
    #[cfg(feature = "async")]
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// True when this attempt runs escalated, after the policy's
    /// [`escalate_after`](super::RetryPolicy::escalate_after) conflicts: inside a transaction
    /// opened with the backend's [`BEGIN_LOCKED`](crate::backend::LockingBackend::BEGIN_LOCKED)
    /// (`BEGIN IMMEDIATE` on SQLite), committed when the closure returns `Ok` and rolled
    /// back when it returns `Err`. The closure should then read with `AttemptDsl::find`
    /// ([`blocking::AttemptDsl`](crate::blocking::AttemptDsl) or its async twin),
    /// which adds `FOR UPDATE` on PostgreSQL and MySQL, so that no other writer can
    /// change the row between the read and the save.
    ///
    /// An attempt that is not escalated may still lock a [hot row](super::RetryPolicy::escalate_hot_rows)
    /// when it reads it: [`locks_row`](Self::locks_row) tells.
    pub fn is_escalated(&self) -> bool {
        self.escalated
    }

    /// True when the helper runs this attempt inside a transaction that it opens
    /// before the closure and ends after it: committed when the closure returns `Ok`,
    /// rolled back when it returns `Err`, so that everything the attempt wrote lands
    /// together or not at all. That is the case for an escalated attempt, and for every
    /// attempt of a [hot-row](super::RetryPolicy::escalate_hot_rows) policy that starts while
    /// the policy's memory holds a hot row (only such a transaction can keep a hot
    /// row's lock until the save). Any other attempt runs without a transaction of the
    /// helper's: the closure owns its atomicity (see [the rule](crate::retry#atomicity)).
    ///
    /// The transaction opens with the backend's
    /// [`BEGIN_LOCKED`](crate::backend::LockingBackend::BEGIN_LOCKED) (`BEGIN IMMEDIATE`
    /// on SQLite, whose lock is the whole database). When the connection is already
    /// inside a transaction of the caller's, the helper opens a savepoint instead and
    /// releases or rolls back only that: the caller's transaction stays open.
    pub fn runs_in_transaction(&self) -> bool {
        self.escalated || self.hot_rows.is_some()
    }

    /// True when `AttemptDsl::find` of this row locks it: the attempt is escalated, or
    /// it [runs in a transaction](Self::runs_in_transaction) of a hot-row policy and
    /// this row met its policy's conflicts within the window.
    pub fn locks_row<T: Versioned>(&self, key: &T::Key) -> bool {
        self.escalated
            || self
                .hot_rows
                .as_ref()
                .is_some_and(|memory| memory.is_hot::<T>(key))
    }
}
