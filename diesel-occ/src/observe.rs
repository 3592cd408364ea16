//! What diesel-occ reports: `tracing` events for checked writes, conflicts and retries,
//! and counters through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`).
//!
//! Events (target `diesel_occ`):
//!
//! | event | level | fields |
//! |---|---|---|
//! | `occ write applied` | DEBUG | `table`, `key`, `operation` |
//! | `occ conflict` | DEBUG | `table`, `key`, `operation`, `outcome` (`stale` or `deleted`) |
//! | `occ retry` | DEBUG | `table`, `key` (of the conflict, when it was one), `attempt`, `outcome`, `backoff_ms`, `escalate` |
//! | `occ retry succeeded` | DEBUG | `attempts` |
//! | `occ hot row locked` | DEBUG | `table`, `key` (an attempt locks a hot row it reads) |
//! | `occ retries exhausted` | WARN | `table`, `key`, `attempts`, `outcome`, `deadline_reached` |
//!
//! Each retry attempt runs in a DEBUG span `occ.attempt` with `attempt` and `escalated`,
//! so the events of the checked operations inside it carry the attempt number.
//!
//! Counters (all with a `table` label, `unknown` for a transient error that names no
//! table):
//!
//! | counter | counts |
//! |---|---|
//! | [`CONFLICTS_TOTAL`] | every [`ConcurrencyConflict`], also labelled by `operation` |
//! | [`RETRIES_TOTAL`] | every retry a helper schedules |
//! | [`RETRIES_EXHAUSTED_TOTAL`] | every time a helper gives up |
//! | [`HOT_ROW_LOCKS_TOTAL`] | every read of a hot row that locked it |

use std::time::Duration;

use crate::error::{ConcurrencyConflict, ConflictState, Error, Operation};

/// Counter: concurrency conflicts, labelled `table` and `operation`.
pub const CONFLICTS_TOTAL: &str = "diesel_occ_conflicts_total";
/// Counter: retries scheduled by the retry helpers, labelled `table`.
pub const RETRIES_TOTAL: &str = "diesel_occ_retries_total";
/// Counter: retry helpers that gave up, labelled `table`.
pub const RETRIES_EXHAUSTED_TOTAL: &str = "diesel_occ_retries_exhausted_total";

/// Counter: reads of a hot row that locked it, labelled `table`.
pub const HOT_ROW_LOCKS_TOTAL: &str = "diesel_occ_hot_row_locks_total";

/// The `table` label for an error that names no table.
const UNKNOWN_TABLE: &str = "unknown";

/// Registers the descriptions of the counters with the installed `metrics` recorder.
/// Optional: the counters work without it.
#[cfg(feature = "metrics")]
pub fn describe_metrics() {
    metrics::describe_counter!(
        CONFLICTS_TOTAL,
        metrics::Unit::Count,
        "Optimistic concurrency conflicts: a checked write or client token met a changed or deleted row"
    );
    metrics::describe_counter!(
        RETRIES_TOTAL,
        metrics::Unit::Count,
        "Attempts retried after a conflict or a transient database error"
    );
    metrics::describe_counter!(
        RETRIES_EXHAUSTED_TOTAL,
        metrics::Unit::Count,
        "Retry loops that gave up"
    );
    metrics::describe_counter!(
        HOT_ROW_LOCKS_TOTAL,
        metrics::Unit::Count,
        "Retry attempts that locked a row because it met a conflict recently"
    );
}

/// An attempt locks a row that conflicted recently as it reads it.
pub(crate) fn hot_row_locked(table: &'static str, key: &dyn std::fmt::Debug) {
    tracing::debug!(target: "diesel_occ", table, key = ?key, "occ hot row locked");
    #[cfg(feature = "metrics")]
    metrics::counter!(HOT_ROW_LOCKS_TOTAL, "table" => table).increment(1);
}

/// A checked write matched its row.
pub(crate) fn written(table: &'static str, key: &dyn std::fmt::Debug, operation: Operation) {
    tracing::debug!(
        target: "diesel_occ",
        table,
        key = ?key,
        operation = %operation,
        "occ write applied"
    );
}

/// A conflict was classified.
pub(crate) fn conflict(conflict: &ConcurrencyConflict) {
    let outcome = match conflict.state() {
        ConflictState::Stale { .. } => "stale",
        ConflictState::Deleted => "deleted",
        ConflictState::Unmatched => "unmatched",
    };
    tracing::debug!(
        target: "diesel_occ",
        table = conflict.table(),
        key = %conflict.key(),
        operation = %conflict.operation(),
        outcome,
        "occ conflict"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(
        CONFLICTS_TOTAL,
        "table" => conflict.table(),
        "operation" => operation_label(conflict.operation())
    )
    .increment(1);
}

#[cfg(feature = "metrics")]
fn operation_label(operation: Operation) -> &'static str {
    match operation {
        Operation::Update => "update",
        Operation::Delete => "delete",
        Operation::ClientToken => "client_token",
        Operation::ForceIncrement => "force_increment",
        Operation::SoftDelete => "soft_delete",
        Operation::Insert => "insert",
        Operation::Upsert => "upsert",
    }
}

/// The span one retry attempt runs in: its number, from 1, and whether it is escalated.
pub(crate) fn attempt_span(number: u32, escalated: bool) -> tracing::Span {
    tracing::debug_span!(
        target: "diesel_occ",
        "occ.attempt",
        attempt = number,
        escalated
    )
}

/// What an error says for the `table`, `key` and `outcome` fields.
fn describe(error: &Error) -> (&'static str, String, &'static str) {
    match error {
        Error::Conflict(conflict) => (
            conflict.table(),
            conflict.key().to_string(),
            if conflict.is_deleted() {
                "deleted"
            } else {
                "stale"
            },
        ),
        error => (
            UNKNOWN_TABLE,
            String::new(),
            error
                .transient_kind()
                .map_or("error", crate::TransientKind::description),
        ),
    }
}

/// A retry helper will run another attempt after `backoff`.
pub(crate) fn retrying(error: &Error, attempt: u32, backoff: Duration, escalate: bool) {
    let (table, key, outcome) = describe(error);
    tracing::debug!(
        target: "diesel_occ",
        table,
        key,
        attempt,
        outcome,
        backoff_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
        escalate,
        "occ retry"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(RETRIES_TOTAL, "table" => table).increment(1);
}

/// A retry helper's attempt succeeded.
pub(crate) fn succeeded(attempts: u32) {
    if attempts > 1 {
        tracing::debug!(target: "diesel_occ", attempts, "occ retry succeeded");
    }
}

/// A retry helper gave up.
pub(crate) fn exhausted(error: &Error, attempts: u32, deadline_reached: bool) {
    let (table, key, outcome) = describe(error);
    tracing::warn!(
        target: "diesel_occ",
        table,
        key,
        attempts,
        outcome,
        deadline_reached,
        "occ retries exhausted"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(RETRIES_EXHAUSTED_TOTAL, "table" => table).increment(1);
}
