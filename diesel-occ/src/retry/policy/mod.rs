//! [`RetryPolicy`], [`Attempt`] and the decision the blocking and async loops share: after
//! an attempt, stop with its result, give up, or sleep and try again.

use std::time::Duration;

use super::hot_rows::{Heat, HotRows};

/// How often and how patiently a retry helper tries again.
///
/// A helper retries only an attempt that failed with a retryable error
/// ([`Error::is_retryable`](crate::Error::is_retryable)): a [`ConcurrencyConflict`](crate::ConcurrencyConflict) at
/// write time, or a transient database error ([`Error::is_transient`](crate::Error::is_transient)). Anything else,
/// and every `Ok`, ends the loop at once.
///
/// - **Attempts**: at most [`max_attempts`](Self::max_attempts) (default 5), the first
///   included.
/// - **Backoff**: before retry `n` (1 for the second attempt) the helper sleeps a random
///   duration between zero and `min(max, initial * 2^(n-1))` ("full jitter"), so
///   writers that collided spread out instead of colliding again. Default: initial
///   10 ms, max 500 ms.
/// - **Deadline** (default none): a time budget for the whole loop, measured from the
///   call. The first attempt always runs; no later attempt starts after the deadline,
///   and when a backoff would reach it the helper gives up at once instead of sleeping.
///   It also bounds the waits the helper starts inside an attempt: the checkout and the
///   lock wait of a locking read (see [`deadline`](Self::deadline)). Other statements
///   of a running attempt are not interrupted (an async caller can wrap the future in a
///   timeout: see the cancellation notes in `diesel_occ::asynchronous`).
/// - **Escalation** (default off): after [`escalate_after(n)`](Self::escalate_after)
///   conflicts, the remaining attempts run in a transaction that locks what they read,
///   so a hot row stops losing races: see [`Attempt::is_escalated`].
/// - **Hot rows** (default off): with [`escalate_hot_rows(n, window)`](Self::escalate_hot_rows),
///   a row that met `n` conflicts within `window` is locked by every attempt that reads
///   it during the next `window`, from the first attempt of an operation on: a row that
///   stays hot costs what a lock costs, and while no row is hot nothing costs more.
/// - **No backoff before a lock**: a retry after a conflict that will take the row's
///   lock (escalated, or a hot row) starts at once; waiting for the lock spaces the
///   writers out instead.
/// - **A deleted row**: a conflict that found the row deleted
///   ([`ConcurrencyConflict::is_deleted`](crate::ConcurrencyConflict::is_deleted)) is retried at once, without a backoff and
///   without counting towards escalation: no other writer needs to be waited out, and
///   a lock cannot help. The retry's re-read finds nothing ([`Error::NotFound`](crate::Error::NotFound), which
///   ends the loop) unless the row was created again, so the closure decides what a
///   missing row means: an error, a domain outcome, or a new row. Conflicts inside a
///   batch ([`Error::Batch`](crate::Error::Batch)) count like one conflict, and each stale row of it is
///   remembered as a hot-row conflict.
///
/// Cloning a policy is cheap; a clone shares the policy's [`HotRows`] memory.
///
/// ```
/// use std::time::Duration;
/// use diesel_occ::retry::RetryPolicy;
///
/// let policy = RetryPolicy::new()
///     .max_attempts(8)
///     .backoff(Duration::from_millis(5), Duration::from_millis(200))
///     .deadline(Duration::from_secs(2))
///     .escalate_after(3);
/// assert_eq!(policy.attempt_limit(), 8);
/// assert_eq!(policy.escalation_threshold(), Some(3));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[must_use]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    deadline: Option<Duration>,
    escalate_after: Option<u32>,
    hot_rows: Option<HotRowPolicy>,
}

/// When rows turn hot, and the memory that counts their conflicts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct HotRowPolicy {
    heat: Heat,
    memory: HotRows,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(500),
            deadline: None,
            escalate_after: None,
            hot_rows: None,
        }
    }
}

impl RetryPolicy {
    /// The default policy: 5 attempts, backoff from 10 ms up to 500 ms with full jitter,
    /// no deadline, no escalation.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `attempts` attempts, the first included. Zero counts as one.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The backoff ceiling starts at `initial` and doubles with each retry up to `max`
    /// (`max` below `initial` counts as `initial`). `Duration::ZERO` for both retries at
    /// once, which suits tests.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Gives up once `budget` has passed since the helper was called.
    ///
    /// The deadline bounds every wait of the helper: no attempt starts after it, no
    /// backoff sleeps past it, a checkout waits at most the time left (running out of it
    /// is [`Error::Pool`](crate::Error::Pool) with [`PoolErrorKind::Timeout`](crate::PoolErrorKind::Timeout)
    /// on the first attempt, and on a retry [`Error::RetriesExhausted`](crate::Error::RetriesExhausted) with the retried
    /// error, as if the retry had not started), and a locking read
    /// ([`Attempt::locks_row`]) waits for the row lock at most the time left (a lock
    /// that comes too late ends the loop with [`Error::RetriesExhausted`](crate::Error::RetriesExhausted), whose
    /// [`deadline_reached`](crate::RetriesExhausted::deadline_reached) is true).
    ///
    /// The lock wait is bounded on the server, which needs a server that answers. The
    /// async helpers also bound the locking read on the client: a read still unanswered
    /// half a second after the time left (a node that died without closing its sockets,
    /// or hangs) is abandoned, its connection discarded, and the loop ends with the
    /// deadline reached. The blocking helpers cannot: Diesel's blocking connections
    /// have no read timeout.
    ///
    /// How each backend bounds the lock wait is in [`backend`](crate::backend); a
    /// source of your own bounds its checkout by implementing
    /// `checkout_within` ([`ConnectionSource`](crate::blocking::ConnectionSource)).
    pub fn deadline(mut self, budget: Duration) -> Self {
        self.deadline = Some(budget);
        self
    }

    /// Removes the deadline.
    pub fn no_deadline(mut self) -> Self {
        self.deadline = None;
        self
    }

    /// After `conflicts` conflicts, run every further attempt in a transaction that
    /// locks what it reads ([`Attempt::is_escalated`]). `0` locks from the first
    /// attempt on, which is plain pessimistic locking. Only conflicts count, not
    /// transient errors.
    pub fn escalate_after(mut self, conflicts: u32) -> Self {
        self.escalate_after = Some(conflicts);
        self
    }

    /// Escalate per row: once a row has met `conflicts` conflicts within `window`, every
    /// attempt under this policy that reads it with `AttemptDsl::find` during the next
    /// `window` locks it ([`Attempt::is_escalated`] explains the lock), the first
    /// attempt of an operation included. `0` conflicts counts as 1.
    ///
    /// The conflicts are counted in a fresh [`HotRows`] memory that this policy and its
    /// clones share, so every worker holding a clone learns from the others' conflicts,
    /// and a row that stays quiet for `window` goes back to optimistic reads. Nothing
    /// else sees it: another policy, a policy for another database, a parallel test. To
    /// share a memory between policies on purpose, use
    /// [`escalate_hot_rows_with`](Self::escalate_hot_rows_with).
    ///
    /// While the memory holds a hot row, every attempt runs in a transaction that the
    /// helper opens before the closure and commits when it returns `Ok` (rolls back on
    /// `Err`): see [`Attempt::runs_in_transaction`]. While no row is hot, an attempt
    /// runs as under a plain policy, and asking the memory costs one atomic load.
    ///
    /// [`escalate_after`](Self::escalate_after) escalates one operation after its own
    /// conflicts, so on a row that is always hot every operation still loses one
    /// optimistic attempt first. The threshold keeps rows that conflict now and then
    /// optimistic: a lock costs a transaction on every write, which an occasional retry
    /// does not. Choosing the threshold and window: [`guide::tuning`](crate::guide::tuning).
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel_occ::retry::RetryPolicy;
    ///
    /// let policy = RetryPolicy::new().escalate_hot_rows(3, Duration::from_secs(1));
    /// assert_eq!(policy.hot_row_rule(), Some((3, Duration::from_secs(1))));
    /// // A clone shares the memory; another policy has its own.
    /// assert_eq!(policy.clone().hot_row_memory(), policy.hot_row_memory());
    /// let other = RetryPolicy::new().escalate_hot_rows(3, Duration::from_secs(1));
    /// assert_ne!(other.hot_row_memory(), policy.hot_row_memory());
    /// assert_eq!(policy.never_escalate().hot_row_rule(), None);
    /// ```
    pub fn escalate_hot_rows(self, conflicts: u32, window: Duration) -> Self {
        self.escalate_hot_rows_with(&HotRows::new(), conflicts, window)
    }

    /// [`escalate_hot_rows`](Self::escalate_hot_rows), counting conflicts in `memory`:
    /// every policy given the same memory (or a clone of it) locks the rows that any of
    /// them found hot. Each policy keeps its own threshold and window; a row is hot
    /// until the latest window one of its conflicts opened.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel_occ::retry::{HotRows, RetryPolicy};
    ///
    /// let memory = HotRows::new();
    /// let reserve = RetryPolicy::new().escalate_hot_rows_with(&memory, 3, Duration::from_secs(1));
    /// let restock = RetryPolicy::new()
    ///     .max_attempts(10)
    ///     .escalate_hot_rows_with(&memory, 1, Duration::from_secs(5));
    /// assert_eq!(reserve.hot_row_memory(), restock.hot_row_memory());
    /// ```
    pub fn escalate_hot_rows_with(
        mut self,
        memory: &HotRows,
        conflicts: u32,
        window: Duration,
    ) -> Self {
        self.hot_rows = Some(HotRowPolicy {
            heat: Heat {
                conflicts: conflicts.max(1),
                window,
            },
            memory: memory.clone(),
        });
        self
    }

    /// Never escalate (the default): neither after conflicts nor on hot rows.
    pub fn never_escalate(mut self) -> Self {
        self.escalate_after = None;
        self.hot_rows = None;
        self
    }

    /// The attempt limit.
    pub fn attempt_limit(&self) -> u32 {
        self.max_attempts
    }

    /// The first and the largest backoff ceiling.
    pub fn backoff_bounds(&self) -> (Duration, Duration) {
        (self.initial_backoff, self.max_backoff)
    }

    /// The deadline, if any.
    pub fn time_budget(&self) -> Option<Duration> {
        self.deadline
    }

    /// The escalation threshold, if any.
    pub fn escalation_threshold(&self) -> Option<u32> {
        self.escalate_after
    }

    /// When hot rows escalate: the conflicts that make a row hot, and the window they
    /// must fall in (also how long the row then stays hot).
    pub fn hot_row_rule(&self) -> Option<(u32, Duration)> {
        self.hot_rows
            .as_ref()
            .map(|hot| (hot.heat.conflicts, hot.heat.window))
    }

    /// The memory hot rows are counted in, when hot rows escalate.
    pub fn hot_row_memory(&self) -> Option<&HotRows> {
        self.hot_rows.as_ref().map(|hot| &hot.memory)
    }

    /// The largest sleep before retry `retry` (1 before the second attempt):
    /// `min(max, initial * 2^(retry-1))`. The helpers sleep a uniformly random duration
    /// between zero and this.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel_occ::retry::RetryPolicy;
    ///
    /// let policy = RetryPolicy::new().backoff(Duration::from_millis(10), Duration::from_millis(50));
    /// assert_eq!(policy.backoff_ceiling(1), Duration::from_millis(10));
    /// assert_eq!(policy.backoff_ceiling(3), Duration::from_millis(40));
    /// assert_eq!(policy.backoff_ceiling(4), Duration::from_millis(50));
    /// ```
    pub fn backoff_ceiling(&self, retry: u32) -> Duration {
        let doublings = retry.saturating_sub(1).min(63);
        let factor = 1_u64 << doublings;
        let nanos = self
            .initial_backoff
            .as_nanos()
            .saturating_mul(u128::from(factor));
        let max = self.max_backoff.as_nanos();
        let nanos = nanos.min(max);
        // `max` came from a Duration, so `nanos` fits one again.
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

mod attempt;
mod retry_loop;
#[cfg(test)]
mod tests;

pub use attempt::Attempt;
pub(crate) use retry_loop::{RetryLoop, Step};
