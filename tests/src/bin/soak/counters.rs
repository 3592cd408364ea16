//! What the run did, counted by every writer thread and task, and read by the report.

use std::sync::atomic::{AtomicU64, Ordering};

/// What the run did, counted by all threads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) operations: AtomicU64,
    pub(crate) acknowledged: AtomicU64,
    pub(crate) conflicts: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) exhausted: AtomicU64,
    pub(crate) faults: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) unknown_outcome: AtomicU64,
    pub(crate) hostile_refused: AtomicU64,
    pub(crate) fenced: AtomicU64,
    /// Transactions rolled back on purpose (`transaction` path), or reported not
    /// committed after the closure caught an error and carried on (`upsert` path).
    pub(crate) rollbacks: AtomicU64,
    /// Panics raised on purpose inside transactions (`transaction` path).
    pub(crate) panics: AtomicU64,
    /// Database errors caught inside transactions whose closure then carried on
    /// (`upsert` path: a taken key, or a failed statement of the caller's own).
    pub(crate) caught: AtomicU64,
    /// Stale upserts of a row deleted since it was read (`upsert` path).
    pub(crate) stale_upserts: AtomicU64,
    /// Async writes whose futures were dropped on purpose before they finished.
    pub(crate) dropped: AtomicU64,
}

pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
