//! The retry state machine shared by the blocking and async helpers: when to try
//! again, after how long, and whether to escalate.

use crate::error::{ConcurrencyConflict, Error, RetriesExhausted};
use crate::observe;
use std::time::{Duration, Instant};

use super::*;

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
            deadline: crate::retry::deadline::instant(policy.deadline),
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

    /// How many attempts the loop has started.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// What to do with the result of the attempt that just ran, `elapsed` after the
    /// helper was called; when that is the end, the loop's attempts and time go to the
    /// histograms.
    pub(crate) fn after<T>(&mut self, result: Result<T, Error>, elapsed: Duration) -> Step<T> {
        let step = self.decide(result, elapsed);
        if let Step::Done(result) = &step {
            observe::retry_finished(self.attempts, elapsed, result);
        }
        step
    }

    /// [`after`](Self::after), without the histograms.
    fn decide<T>(&mut self, result: Result<T, Error>, elapsed: Duration) -> Step<T> {
        let error = match result {
            Ok(value) => {
                observe::succeeded(self.attempts);
                return Step::Done(Ok(value));
            }
            Err(error) if crate::retry::deadline::cut_checkout(&error, self.deadline) => {
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
pub(super) fn jitter(rng: &mut fastrand::Rng, ceiling: Duration) -> Duration {
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rng.u64(0..=nanos))
}
