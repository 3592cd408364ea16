//! What the blocking and the async standby helpers (`blocking::retry_with_standby`,
//! `asynchronous::retry_with_standby`) share: when later attempts read from the primary,
//! and the error a lost connection answers. Their tests, on SQLite files, are here too.

use crate::error::Error;

/// True when an attempt's error is a conflict (stale or deleted, alone or in a batch):
/// what the attempt read did not match the primary, so later attempts read there.
pub(crate) fn conflicted<T>(result: &Result<T, Error>) -> bool {
    result
        .as_ref()
        .err()
        .is_some_and(|error| error.as_conflict().is_some() || error.as_batch_conflict().is_some())
}

/// What `read` or `write` answers after the connection was lost: only after opening the
/// attempt's transaction failed, an error the closure has already seen once.
pub(crate) fn lost_connection() -> Error {
    diesel::result::Error::BrokenTransactionManager.into()
}

#[cfg(test)]
mod tests;
