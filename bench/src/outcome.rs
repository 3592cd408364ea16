//! What one reservation ended with: the hand-written strategies' retry loop and the
//! counts of what diesel-occ's retry helpers did.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use diesel_occ::retry::Attempt;
use diesel_occ::{Error, TransientKind};

use crate::harness::{OpResult, Worker, backoff};

/// One attempt's outcome for the hand-written loops: `Some(committed)` ends the
/// operation, `None` is an optimistic miss (a conditional UPDATE matched no row).
pub type Once = Result<Option<bool>, diesel::result::Error>;

/// The retry loop the hand-written strategies share: the same policy (attempts,
/// exponential backoff with jitter) as diesel-occ's helper, retrying misses and the
/// database's transient errors only.
pub fn retry_loop(worker: &mut Worker, mut once: impl FnMut() -> Once) -> Result<OpResult, String> {
    let mut op = OpResult::default();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match once() {
            Ok(Some(committed)) => {
                op.committed = committed;
                return Ok(op);
            }
            Ok(None) => op.conflicts += 1,
            Err(error) => {
                let text = error.to_string();
                let error = Error::from(error);
                if error.is_retryable() {
                    op.aborts += 1;
                    op.deadlocks += u32::from(is_deadlock(&error));
                } else {
                    return Err(text);
                }
            }
        }
        if attempts >= worker.policy.attempt_limit() {
            return Ok(op);
        }
        op.retries += 1;
        backoff(&worker.policy, &mut worker.rng, attempts);
    }
}

/// A deadlock (PostgreSQL 40P01, MySQL 1213); on Galera, 1213 is also how a
/// certification failure arrives.
pub fn is_deadlock(error: &Error) -> bool {
    matches!(error, Error::Database(db) if db.transient() == Some(TransientKind::Deadlock))
}

/// Counts what diesel-occ's retry helper did, from inside its closure: shared by
/// reference with the blocking and async closures, or in an `Arc` with a closure run on
/// another thread.
#[derive(Debug, Default)]
pub struct Seen {
    last_attempt: AtomicU32,
    conflicts: AtomicU32,
    aborts: AtomicU32,
    deadlocks: AtomicU32,
}

impl Seen {
    /// Counts one attempt and its error, and hands its result on.
    pub fn track<T>(&self, attempt: &Attempt, result: Result<T, Error>) -> Result<T, Error> {
        self.last_attempt.store(attempt.number(), Relaxed);
        if let Err(error) = &result {
            if error.is_conflict() {
                self.conflicts.fetch_add(1, Relaxed);
            } else if error.is_retryable() {
                self.aborts.fetch_add(1, Relaxed);
                self.deadlocks
                    .fetch_add(u32::from(is_deadlock(error)), Relaxed);
            }
        }
        result
    }

    /// The operation's result: exhausted retries are an uncommitted operation, other
    /// errors are errors.
    pub fn finish(&self, result: Result<bool, Error>) -> Result<OpResult, String> {
        let op = OpResult {
            committed: false,
            retries: self.last_attempt.load(Relaxed).saturating_sub(1),
            conflicts: self.conflicts.load(Relaxed),
            aborts: self.aborts.load(Relaxed),
            deadlocks: self.deadlocks.load(Relaxed),
        };
        match result {
            Ok(committed) => Ok(OpResult { committed, ..op }),
            Err(Error::RetriesExhausted(_)) => Ok(op),
            Err(error) => Err(format!("{error}: {error:?}")),
        }
    }
}
