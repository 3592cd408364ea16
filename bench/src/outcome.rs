//! What one reservation ended with: the hand-written strategies' retry loop and the
//! counts of what diesel-occ's retry helpers did.

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

/// Counts what diesel-occ's retry helper did, from inside its closure.
#[derive(Debug, Default)]
pub struct Seen {
    /// The number of the last attempt.
    pub last_attempt: u32,
    /// Attempts that ended in a conflict.
    pub conflicts: u32,
    /// Attempts the database aborted.
    pub aborts: u32,
}

impl Seen {
    /// Counts one attempt's error.
    pub fn saw(&mut self, error: &Error) {
        if error.is_conflict() {
            self.conflicts += 1;
        } else if error.is_retryable() {
            self.aborts += 1;
        }
    }

    /// The operation's result: exhausted retries are an uncommitted operation, other
    /// errors are errors.
    pub fn finish(self, result: Result<bool, Error>) -> Result<OpResult, String> {
        let op = OpResult {
            committed: false,
            retries: self.last_attempt.saturating_sub(1),
            conflicts: self.conflicts,
            aborts: self.aborts,
            deadlocks: 0,
        };
        match result {
            Ok(committed) => Ok(OpResult { committed, ..op }),
            Err(Error::RetriesExhausted(_)) => Ok(op),
            Err(error) => Err(format!("{error}: {error:?}")),
        }
    }
}
