//! [`RetryPolicy`], [`Attempt`] and the decision the sync and async loops share: after
//! an attempt, stop with its result, give up, or sleep and try again.

use std::time::{Duration, Instant};

use super::hot_rows::{Heat, HotRows};
use crate::error::{ConcurrencyConflict, Error, RetriesExhausted};
use crate::observe;
use crate::versioned::Versioned;

/// How often and how patiently a retry helper tries again.
///
/// A helper retries only an attempt that failed with a retryable error
/// ([`Error::is_retryable`]): a [`ConcurrencyConflict`](crate::ConcurrencyConflict) at
/// write time, or a transient database error ([`Error::is_transient`]). Anything else,
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
///   ([`ConcurrencyConflict::is_deleted`]) is retried at once, without a backoff and
///   without counting towards escalation: no other writer needs to be waited out, and
///   a lock cannot help. The retry's re-read finds nothing ([`Error::NotFound`], which
///   ends the loop) unless the row was created again, so the closure decides what a
///   missing row means: an error, a domain outcome, or a new row. Conflicts inside a
///   batch ([`Error::Batch`]) count like one conflict, and each stale row of it is
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
    /// is [`Error::Pool`] with [`PoolErrorKind::Timeout`](crate::PoolErrorKind::Timeout)
    /// on the first attempt, and on a retry [`Error::RetriesExhausted`] with the retried
    /// error, as if the retry had not started), and a locking read
    /// ([`Attempt::locks_row`]) waits for the row lock at most the time left (a lock
    /// that comes too late ends the loop with [`Error::RetriesExhausted`], whose
    /// [`deadline_reached`](crate::RetriesExhausted::deadline_reached) is true).
    ///
    /// How each backend bounds the lock wait is in [`backend`](crate::backend); a
    /// source of your own bounds its checkout by implementing
    /// `checkout_within` ([`ConnectionSource`](crate::retry::ConnectionSource)).
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
    /// optimistic: a lock costs a transaction on every write (on SQLite, where writers
    /// queue anyway, about a fifth of the throughput), which an occasional retry does
    /// not. A few conflicts within a second (`escalate_hot_rows(3, Duration::from_secs(1))`)
    /// suits most workloads; BENCHMARKS.md has figures.
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
    number: u32,
    max_attempts: u32,
    conflicts: u32,
    escalated: bool,
    deadline: Option<Instant>,
    /// The policy's memory, when this attempt runs in the helper's transaction because
    /// the memory held a hot row as it started.
    hot_rows: Option<HotRows>,
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

    /// The time left before the policy's [deadline](RetryPolicy::deadline), zero once it
    /// has passed; `None` without a deadline. The helper bounds its own waits with it;
    /// a closure can bound its own slow work the same way.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel_occ::retry::{self, RetryPolicy};
    /// # use diesel::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let source = || SqliteConnection::establish(":memory:");
    /// let policy = RetryPolicy::new().deadline(Duration::from_secs(2));
    /// let left = retry::retry(&source, &policy, |_conn, attempt| Ok(attempt.remaining()))?;
    /// assert!(left.is_some_and(|left| left <= Duration::from_secs(2)));
    ///
    /// let unbounded = retry::retry(&source, &RetryPolicy::new(), |_conn, attempt| Ok(attempt.remaining()))?;
    /// assert_eq!(unbounded, None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn remaining(&self) -> Option<Duration> {
        super::deadline::remaining(self.deadline)
    }

    /// When the policy's deadline falls, if it has one.
    #[cfg(feature = "async")]
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// True when this attempt runs escalated, after the policy's
    /// [`escalate_after`](RetryPolicy::escalate_after) conflicts: inside a transaction
    /// opened with the backend's [`BEGIN_LOCKED`](crate::backend::LockingBackend::BEGIN_LOCKED)
    /// (`BEGIN IMMEDIATE` on SQLite), committed when the closure returns `Ok` and rolled
    /// back when it returns `Err`. The closure should then read with `AttemptDsl::find`
    /// ([`retry::AttemptDsl`](crate::retry::AttemptDsl) or its async twin),
    /// which adds `FOR UPDATE` on PostgreSQL and MySQL, so that no other writer can
    /// change the row between the read and the save.
    ///
    /// An attempt that is not escalated may still lock a [hot row](RetryPolicy::escalate_hot_rows)
    /// when it reads it: [`locks_row`](Self::locks_row) tells.
    pub fn is_escalated(&self) -> bool {
        self.escalated
    }

    /// True when the helper runs this attempt inside a transaction that it opens
    /// before the closure and ends after it: committed when the closure returns `Ok`,
    /// rolled back when it returns `Err`, so that everything the attempt wrote lands
    /// together or not at all. That is the case for an escalated attempt, and for every
    /// attempt of a [hot-row](RetryPolicy::escalate_hot_rows) policy that starts while
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

/// What a loop does after an attempt.
#[derive(Debug)]
pub(crate) enum Step<T> {
    /// Return this.
    Done(Result<T, Error>),
    /// Sleep this long, then run another attempt.
    Retry(Duration),
}

/// The state of one retry loop; both helpers drive it the same way:
/// `next_attempt`, run it, `after`, and sleep on `Step::Retry`.
#[derive(Debug)]
pub(crate) struct RetryLoop<'p> {
    policy: &'p RetryPolicy,
    rng: fastrand::Rng,
    attempts: u32,
    conflicts: u32,
    deadline: Option<Instant>,
    /// The error of the attempt before, for a checkout the deadline cuts short.
    retried: Option<Error>,
}

impl<'p> RetryLoop<'p> {
    pub(crate) fn new(policy: &'p RetryPolicy) -> Self {
        Self::with_rng(policy, fastrand::Rng::new())
    }

    pub(crate) fn with_rng(policy: &'p RetryPolicy, rng: fastrand::Rng) -> Self {
        RetryLoop {
            policy,
            rng,
            attempts: 0,
            conflicts: 0,
            deadline: super::deadline::instant(policy.deadline),
            retried: None,
        }
    }

    fn escalated(&self) -> bool {
        self.policy
            .escalate_after
            .is_some_and(|after| self.conflicts >= after)
    }

    /// The attempt to run next.
    pub(crate) fn next_attempt(&mut self) -> Attempt {
        // At most `max_attempts`: the loop gives up before another attempt.
        self.attempts = self.attempts.saturating_add(1);
        // The memory is asked once, here: an attempt that started while no row was hot
        // runs optimistic to its end, so that it never locks halfway through.
        let hot_rows = self
            .policy
            .hot_rows
            .as_ref()
            .filter(|hot| hot.memory.any_hot())
            .map(|hot| hot.memory.clone());
        Attempt {
            number: self.attempts,
            max_attempts: self.policy.max_attempts,
            conflicts: self.conflicts,
            escalated: self.escalated(),
            deadline: self.deadline,
            hot_rows,
        }
    }

    /// What to do with the result of the attempt that just ran, `elapsed` after the
    /// helper was called.
    pub(crate) fn after<T>(&mut self, result: Result<T, Error>, elapsed: Duration) -> Step<T> {
        let error = match result {
            Ok(value) => {
                observe::succeeded(self.attempts);
                return Step::Done(Ok(value));
            }
            Err(error) if super::deadline::cut_checkout(&error, self.deadline) => {
                // The retry never ran: the deadline came first, as if the loop had not
                // started it.
                return match self.retried.take() {
                    Some(last) => {
                        self.attempts = self.attempts.saturating_sub(1);
                        self.give_up(last, true)
                    }
                    None => Step::Done(Err(error)),
                };
            }
            Err(error) if !error.is_retryable() => return Step::Done(Err(error)),
            Err(error) => error,
        };
        let conflicts = conflicts_of(&error);
        // A conflict on a row that is still there: another writer was first. One on a
        // row that was deleted has no writer to wait out and nothing to lock.
        let contended = conflicts.iter().any(|conflict| !conflict.is_deleted());
        let only_deleted = !conflicts.is_empty() && !contended;
        let mut hot_row = false;
        if contended {
            self.conflicts = self.conflicts.saturating_add(1);
            hot_row = self.remember_hot_rows(&conflicts);
        }
        if self.attempts >= self.policy.max_attempts {
            return self.give_up(error, false);
        }
        // The next attempt locks the row that conflicted: waiting for that lock spaces
        // the writers out, so a backoff would only add to it. After a deletion the
        // re-read finds nothing (or a new row) whenever it runs.
        let locks_next = hot_row || contended && self.escalated();
        let backoff = if locks_next || only_deleted {
            Duration::ZERO
        } else {
            jitter(&mut self.rng, self.policy.backoff_ceiling(self.attempts))
        };
        if let Some(deadline) = self.policy.deadline {
            if elapsed.saturating_add(backoff) >= deadline {
                return self.give_up(error, true);
            }
        }
        observe::retrying(
            &error,
            self.attempts,
            backoff,
            locks_next || self.escalated(),
        );
        self.retried = Some(error);
        Step::Retry(backoff)
    }

    /// Counts each conflict on a row that still exists in the policy's memory, when it
    /// escalates hot rows; true when one of those rows is hot now, so that the next
    /// attempt locks it.
    fn remember_hot_rows(&self, conflicts: &[&ConcurrencyConflict]) -> bool {
        let Some(hot) = &self.policy.hot_rows else {
            return false;
        };
        // Every row is remembered, so no short-circuiting `any`.
        let mut any_hot = false;
        for conflict in conflicts.iter().filter(|conflict| !conflict.is_deleted()) {
            any_hot |= hot
                .memory
                .remember(conflict.table(), conflict.key(), hot.heat);
        }
        any_hot
    }

    fn give_up<T>(&self, last: Error, deadline_reached: bool) -> Step<T> {
        observe::exhausted(&last, self.attempts, deadline_reached);
        Step::Done(Err(RetriesExhausted::new(
            self.attempts,
            deadline_reached,
            last,
        )
        .into()))
    }
}

/// The conflicts a retryable error carries: one, every conflict of a batch, or none.
fn conflicts_of(error: &Error) -> Vec<&ConcurrencyConflict> {
    match (error.as_conflict(), error.as_batch_conflict()) {
        (Some(conflict), _) => vec![conflict],
        (None, Some(batch)) => batch.conflicts().iter().map(|(_, c)| c).collect(),
        (None, None) => Vec::new(),
    }
}

/// A uniformly random duration in `[0, ceiling]`.
fn jitter(rng: &mut fastrand::Rng, ceiling: Duration) -> Duration {
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rng.u64(0..=nanos))
}

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind, Error as DieselError};

    use super::*;
    use crate::error::BatchConflict;
    use crate::error::{ConflictState, EntityKey, NotFound, Operation};
    use crate::token::VersionToken;

    const MS: Duration = Duration::from_millis(1);

    fn conflict(operation: Operation) -> Error {
        ConcurrencyConflict::new(
            "stock",
            EntityKey::new(&["id"], vec!["1".into()]),
            operation,
            1_i32.to_value(),
            ConflictState::Stale {
                current: 2_i32.to_value(),
            },
        )
        .into()
    }

    fn busy() -> Error {
        DieselError::DatabaseError(
            DatabaseErrorKind::Unknown,
            Box::new(String::from("database is locked")),
        )
        .into()
    }

    fn seeded(policy: &RetryPolicy) -> RetryLoop<'_> {
        RetryLoop::with_rng(policy, fastrand::Rng::with_seed(7))
    }

    #[test]
    fn backoff_ceiling_doubles_up_to_the_maximum() {
        let policy = RetryPolicy::new().backoff(10 * MS, 75 * MS);
        let ceilings: Vec<_> = (1..=6).map(|n| policy.backoff_ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [10 * MS, 20 * MS, 40 * MS, 75 * MS, 75 * MS, 75 * MS]
        );
        // No overflow for absurd retry numbers or durations.
        assert_eq!(policy.backoff_ceiling(u32::MAX), 75 * MS);
        let huge = RetryPolicy::new().backoff(Duration::MAX, Duration::MAX);
        assert_eq!(huge.backoff_ceiling(40), Duration::from_nanos(u64::MAX));
        // Zero means no sleep at all.
        let zero = RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO);
        assert_eq!(zero.backoff_ceiling(3), Duration::ZERO);
    }

    #[test]
    fn jitter_stays_within_zero_and_the_ceiling_and_spreads() {
        let mut rng = fastrand::Rng::with_seed(1);
        let ceiling = 40 * MS;
        let samples: Vec<_> = (0..2_000).map(|_| jitter(&mut rng, ceiling)).collect();
        assert!(samples.iter().all(|d| *d <= ceiling));
        // Full jitter: the whole range is used, not just the top.
        assert!(samples.iter().any(|d| *d < 4 * MS));
        assert!(samples.iter().any(|d| *d > 36 * MS));
        assert_eq!(jitter(&mut rng, Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn builder_clamps_nonsense() {
        let policy = RetryPolicy::new().max_attempts(0).backoff(20 * MS, 5 * MS);
        assert_eq!(policy.attempt_limit(), 1);
        assert_eq!(policy.backoff_bounds(), (20 * MS, 20 * MS));
        assert_eq!(
            RetryPolicy::new().deadline(MS).no_deadline().time_budget(),
            None
        );
    }

    #[test]
    fn success_and_final_errors_end_the_loop_at_once() {
        let policy = RetryPolicy::new();
        let mut state = seeded(&policy);
        state.next_attempt();
        assert!(matches!(
            state.after(Ok(7), Duration::ZERO),
            Step::Done(Ok(7))
        ));

        for error in [
            Error::from(DieselError::NotFound),
            NotFound {
                table: "stock",
                key: EntityKey::new(&["id"], vec!["1".into()]),
            }
            .into(),
            // A stale client token cannot become current by re-reading.
            conflict(Operation::ClientToken),
        ] {
            let mut state = seeded(&policy);
            state.next_attempt();
            match state.after::<()>(Err(error), Duration::ZERO) {
                Step::Done(Err(error)) => assert!(!error.is_retryable(), "{error:?}"),
                step => panic!("expected the error back, got {step:?}"),
            }
        }
    }

    #[test]
    fn conflicts_and_transient_errors_retry_until_the_attempt_limit() {
        let policy = RetryPolicy::new().max_attempts(3).backoff(MS, 4 * MS);
        let mut state = seeded(&policy);
        let errors = [
            conflict(Operation::Update),
            busy(),
            conflict(Operation::Delete),
        ];
        let mut steps = Vec::new();
        for error in errors {
            let attempt = state.next_attempt();
            steps.push((
                attempt.number(),
                state.after::<()>(Err(error), Duration::ZERO),
            ));
        }
        assert!(matches!(steps[0], (1, Step::Retry(d)) if d <= MS));
        assert!(matches!(steps[1], (2, Step::Retry(d)) if d <= 2 * MS));
        match &steps[2] {
            (3, Step::Done(Err(Error::RetriesExhausted(exhausted)))) => {
                assert_eq!(exhausted.attempts(), 3);
                assert!(!exhausted.deadline_reached());
                assert_eq!(
                    exhausted
                        .last_conflict()
                        .map(ConcurrencyConflict::operation),
                    Some(Operation::Delete)
                );
            }
            step => panic!("expected exhaustion after 3 attempts, got {step:?}"),
        }
    }

    #[test]
    fn the_deadline_stops_retries_instead_of_sleeping_past_it() {
        let policy = RetryPolicy::new()
            .max_attempts(100)
            .backoff(10 * MS, 10 * MS)
            .deadline(100 * MS);
        let mut state = seeded(&policy);
        state.next_attempt();
        // Well before the deadline, with room for any backoff up to 10 ms: retry.
        match state.after::<()>(Err(busy()), 50 * MS) {
            Step::Retry(backoff) => assert!(backoff <= 10 * MS),
            step => panic!("expected a retry, got {step:?}"),
        }
        // Past the deadline: give up, whatever the backoff.
        state.next_attempt();
        match state.after::<()>(Err(conflict(Operation::Update)), 100 * MS) {
            Step::Done(Err(Error::RetriesExhausted(exhausted))) => {
                assert_eq!(exhausted.attempts(), 2);
                assert!(exhausted.deadline_reached());
                assert!(exhausted.last_error().is_conflict());
            }
            step => panic!("expected the deadline to end the loop, got {step:?}"),
        }
    }

    #[test]
    fn a_checkout_the_deadline_cut_short_ends_the_loop_like_the_deadline() {
        use crate::error::{PoolError, PoolErrorKind};

        let timed_out = || Error::from(PoolError::from_kind(PoolErrorKind::Timeout));
        let policy = RetryPolicy::new()
            .backoff(Duration::ZERO, Duration::ZERO)
            .deadline(MS);
        // The first attempt's checkout: the pool error itself.
        let mut state = seeded(&policy);
        state.next_attempt();
        std::thread::sleep(2 * MS); // past the deadline
        match state.after::<()>(Err(timed_out()), Duration::ZERO) {
            Step::Done(Err(Error::Pool(error))) => assert_eq!(error.kind(), PoolErrorKind::Timeout),
            step => panic!("expected the pool error, got {step:?}"),
        }
        // A retry's checkout: the deadline came first, with the conflict that was
        // retried, after the one attempt that ran.
        let mut state = seeded(&policy);
        state.next_attempt();
        assert!(matches!(
            state.after::<()>(Err(conflict(Operation::Update)), Duration::ZERO),
            Step::Retry(_)
        ));
        state.next_attempt();
        std::thread::sleep(2 * MS);
        match state.after::<()>(Err(timed_out()), 2 * MS) {
            Step::Done(Err(Error::RetriesExhausted(exhausted))) => {
                assert_eq!(exhausted.attempts(), 1);
                assert!(exhausted.deadline_reached());
                assert!(exhausted.last_error().is_conflict(), "{exhausted:?}");
            }
            step => panic!("expected the deadline to end the loop, got {step:?}"),
        }
        // A pool that timed out on its own, with time left: the pool error.
        let roomy = policy.deadline(Duration::from_secs(3600));
        let mut state = seeded(&roomy);
        state.next_attempt();
        assert!(matches!(
            state.after::<()>(Err(conflict(Operation::Update)), Duration::ZERO),
            Step::Retry(_)
        ));
        state.next_attempt();
        assert!(matches!(
            state.after::<()>(Err(timed_out()), Duration::ZERO),
            Step::Done(Err(Error::Pool(_)))
        ));
    }

    #[test]
    fn a_backoff_that_would_reach_the_deadline_gives_up_now() {
        // Every backoff is exactly 30 ms (initial = max, and the jitter is drawn from
        // [0, 30 ms]; check the boundary with the largest draw by trying many seeds).
        let policy = RetryPolicy::new()
            .max_attempts(100)
            .backoff(30 * MS, 30 * MS)
            .deadline(100 * MS);
        let mut gave_up = 0;
        let mut retried = 0;
        for seed in 0..200 {
            let mut state = RetryLoop::with_rng(&policy, fastrand::Rng::with_seed(seed));
            state.next_attempt();
            match state.after::<()>(Err(busy()), 85 * MS) {
                Step::Retry(backoff) => {
                    assert!(85 * MS + backoff < 100 * MS, "slept past the deadline");
                    retried += 1;
                }
                Step::Done(Err(Error::RetriesExhausted(e))) if e.deadline_reached() => {
                    gave_up += 1;
                }
                step => panic!("unexpected {step:?}"),
            }
        }
        // About half of the draws fit in the 15 ms left.
        assert!(
            gave_up > 0 && retried > 0,
            "gave up {gave_up}, retried {retried}"
        );
    }

    #[test]
    fn escalation_starts_after_the_configured_number_of_conflicts() {
        let policy = RetryPolicy::new()
            .max_attempts(6)
            .backoff(Duration::ZERO, Duration::ZERO)
            .escalate_after(2);
        let mut state = seeded(&policy);
        let mut escalated = Vec::new();
        // A transient error does not count towards escalation; conflicts do.
        for error in [
            busy(),
            conflict(Operation::Update),
            busy(),
            conflict(Operation::Update),
            busy(),
        ] {
            let attempt = state.next_attempt();
            escalated.push((
                attempt.number(),
                attempt.conflicts(),
                attempt.is_escalated(),
            ));
            assert!(matches!(
                state.after::<()>(Err(error), Duration::ZERO),
                Step::Retry(_)
            ));
        }
        let last = state.next_attempt();
        escalated.push((last.number(), last.conflicts(), last.is_escalated()));
        assert!(last.is_last());
        assert_eq!(
            escalated,
            [
                (1, 0, false),
                (2, 0, false),
                (3, 1, false),
                (4, 1, false),
                (5, 2, true),
                (6, 2, true),
            ]
        );

        let always = RetryPolicy::new().escalate_after(0);
        assert!(seeded(&always).next_attempt().is_escalated());
        assert!(!seeded(&RetryPolicy::new()).next_attempt().is_escalated());
    }

    /// The backoff each of these errors gets, one after the other, on a fresh loop.
    fn backoffs(policy: &RetryPolicy, errors: Vec<Error>) -> Vec<Duration> {
        let mut state = seeded(policy);
        errors
            .into_iter()
            .map(|error| {
                state.next_attempt();
                match state.after::<()>(Err(error), Duration::ZERO) {
                    Step::Retry(backoff) => backoff,
                    step => panic!("expected a retry, got {step:?}"),
                }
            })
            .collect()
    }

    #[test]
    fn a_retry_that_will_take_the_lock_does_not_back_off() {
        let hour = Duration::from_secs(3600);
        let slow = RetryPolicy::new().max_attempts(10).backoff(hour, hour);
        let sleeps = |policy, errors| {
            backoffs(&policy, errors)
                .into_iter()
                .map(|backoff| !backoff.is_zero())
                .collect::<Vec<_>>()
        };
        // Without escalation every retry backs off.
        assert_eq!(
            sleeps(slow.clone(), vec![conflict(Operation::Update), busy()]),
            [true, true]
        );
        // Escalating after 2 conflicts: the retry that escalates starts at once; a
        // transient error still backs off, escalated or not.
        assert_eq!(
            sleeps(
                slow.clone().escalate_after(2),
                vec![
                    conflict(Operation::Update),
                    busy(),
                    conflict(Operation::Update),
                    busy(),
                ]
            ),
            [true, true, false, true]
        );
        // Hot rows. A zero window makes nothing hot; with a threshold of 2, the first
        // conflict backs off and the second makes the row hot, so the retry locks it.
        assert_eq!(
            sleeps(
                slow.clone().escalate_hot_rows(1, Duration::ZERO),
                vec![conflict(Operation::Update)]
            ),
            [true]
        );
        assert_eq!(
            sleeps(
                slow.escalate_hot_rows(2, hour),
                vec![
                    conflict(Operation::Update),
                    conflict(Operation::Update),
                    busy()
                ]
            ),
            [true, false, true]
        );
    }

    fn conflict_on(id: i32, state: ConflictState) -> ConcurrencyConflict {
        ConcurrencyConflict::new(
            "stock",
            EntityKey::new(&["id"], vec![id.to_string()]),
            Operation::Update,
            1_i32.to_value(),
            state,
        )
    }

    fn stale(id: i32) -> ConcurrencyConflict {
        conflict_on(
            id,
            ConflictState::Stale {
                current: 2_i32.to_value(),
            },
        )
    }

    fn deleted(id: i32) -> ConcurrencyConflict {
        conflict_on(id, ConflictState::Deleted)
    }

    fn batch(conflicts: Vec<ConcurrencyConflict>) -> Error {
        BatchConflict::new(3, conflicts.into_iter().enumerate().collect()).into()
    }

    /// Runs one attempt per error on a fresh loop; returns, for each attempt, whether
    /// it was escalated and whether it ran in the helper's transaction, and the backoffs.
    fn run(policy: &RetryPolicy, errors: Vec<Error>) -> (Vec<(bool, bool)>, Vec<Duration>) {
        let mut state = seeded(policy);
        let mut kinds = Vec::new();
        let mut sleeps = Vec::new();
        for error in errors {
            let attempt = state.next_attempt();
            kinds.push((attempt.is_escalated(), attempt.runs_in_transaction()));
            match state.after::<()>(Err(error), Duration::ZERO) {
                Step::Retry(backoff) => sleeps.push(backoff),
                step => panic!("expected a retry, got {step:?}"),
            }
        }
        let last = state.next_attempt();
        kinds.push((last.is_escalated(), last.runs_in_transaction()));
        (kinds, sleeps)
    }

    #[test]
    fn conflicts_inside_a_batch_count_towards_escalation_like_one_conflict() {
        let hour = Duration::from_secs(3600);
        let policy = RetryPolicy::new()
            .max_attempts(10)
            .backoff(hour, hour)
            .escalate_after(2);
        let (kinds, sleeps) = run(
            &policy,
            vec![batch(vec![stale(1), stale(2)]), batch(vec![stale(1)])],
        );
        // Two batches with conflicts are two conflicts, whatever their size: the third
        // attempt escalates, and the retry that leads to it does not back off.
        assert_eq!(kinds, [(false, false), (false, false), (true, true)]);
        assert!(!sleeps[0].is_zero());
        assert_eq!(sleeps[1], Duration::ZERO);

        // Every stale row of a batch is a conflict on that row for the hot-row memory.
        let hot = RetryPolicy::new()
            .max_attempts(10)
            .backoff(hour, hour)
            .escalate_hot_rows(1, hour);
        let (kinds, sleeps) = run(&hot, vec![batch(vec![stale(1), deleted(2), stale(3)])]);
        assert_eq!(kinds, [(false, false), (false, true)]);
        assert_eq!(
            sleeps,
            [Duration::ZERO],
            "the retry locks a hot row at once"
        );
        let memory = hot.hot_row_memory().expect("a memory");
        let is_hot =
            |id: i32| memory.is_hot_row("stock", || EntityKey::new(&["id"], vec![id.to_string()]));
        assert_eq!((is_hot(1), is_hot(2), is_hot(3)), (true, false, true));
    }

    #[test]
    fn a_deleted_row_is_retried_at_once_and_does_not_escalate() {
        let hour = Duration::from_secs(3600);
        let policy = RetryPolicy::new()
            .max_attempts(10)
            .backoff(hour, hour)
            .escalate_after(1)
            .escalate_hot_rows(1, hour);
        // The re-read finds nothing (or a new row) whenever it runs: no backoff, no
        // escalation, and the row is not hot.
        let (kinds, sleeps) = run(
            &policy,
            vec![Error::from(deleted(1)), batch(vec![deleted(1), deleted(2)])],
        );
        assert_eq!(kinds, [(false, false), (false, false), (false, false)]);
        assert_eq!(sleeps, [Duration::ZERO, Duration::ZERO]);
        assert!(!policy.hot_row_memory().expect("a memory").any_hot());

        // A deleted row still spends an attempt: the last one gives up with it.
        let once = RetryPolicy::new().max_attempts(1);
        let mut state = seeded(&once);
        state.next_attempt();
        match state.after::<()>(Err(deleted(1).into()), Duration::ZERO) {
            Step::Done(Err(Error::RetriesExhausted(exhausted))) => {
                assert!(
                    exhausted
                        .last_conflict()
                        .is_some_and(ConcurrencyConflict::is_deleted)
                );
            }
            step => panic!("expected exhaustion, got {step:?}"),
        }
    }

    #[test]
    fn two_policies_never_share_hot_rows_unless_given_one_memory() {
        let hour = Duration::from_secs(3600);
        let first = RetryPolicy::new().escalate_hot_rows(1, hour);
        let second = RetryPolicy::new().escalate_hot_rows(1, hour);
        let shared = RetryPolicy::new().escalate_hot_rows_with(
            first.hot_row_memory().expect("a memory"),
            5,
            hour,
        );
        let clone = first.clone();

        // The same table and key conflict under the first policy only.
        let (kinds, _) = run(&first, vec![stale(1).into()]);
        assert_eq!(kinds, [(false, false), (false, true)]);

        let attempt = |policy: &RetryPolicy| seeded(policy).next_attempt();
        let key = EntityKey::new(&["id"], vec!["1".into()]);
        assert!(attempt(&first).runs_in_transaction());
        assert!(
            attempt(&clone).runs_in_transaction(),
            "a clone shares the memory"
        );
        assert!(
            attempt(&shared).runs_in_transaction(),
            "so does a policy given it"
        );
        assert!(
            !attempt(&second).runs_in_transaction(),
            "another policy knows nothing of the first one's rows"
        );
        let memory = |policy: &RetryPolicy| policy.hot_row_memory().expect("a memory").clone();
        assert!(memory(&shared).is_hot_row("stock", || key.clone()));
        assert!(!memory(&second).is_hot_row("stock", || key.clone()));
        assert_eq!(first, clone);
        assert_ne!(first, second);
        // A policy without hot rows never runs an attempt in a transaction of its own.
        assert!(!attempt(&RetryPolicy::new()).runs_in_transaction());
    }
}
