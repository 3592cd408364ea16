//! What every backend's run shares: the counters, and the choice of the backend module
//! that runs the workload on its own connection type.

use std::sync::atomic::{AtomicU64, Ordering};

use diesel_occ_tests::Backend;

use crate::options::{Args, Target};
use crate::report::Report;

/// The message of the panics the transaction path raises on purpose, which `main`
/// keeps off stderr.
pub(crate) const INJECTED_PANIC: &str = "soak: a panic injected inside a transaction";

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

/// Runs `path` on `target`; `None` when it could not run (no server, or not built).
pub(crate) fn run(args: &Args, target: Target, path: &'static str) -> Option<Report> {
    let backend = match target {
        #[cfg(feature = "mysql")]
        Target::Galera => return crate::galera::run(args),
        #[cfg(not(feature = "mysql"))]
        Target::Galera => {
            eprintln!("galera: not built (run with --features mysql)");
            return None;
        }
        Target::PgReplicas => return crate::postgres::run_on_replicas(args, path),
        Target::Db(backend) => backend,
    };
    match backend {
        Backend::Postgres => crate::postgres::run(args, path),
        #[cfg(feature = "mysql")]
        Backend::Mysql => crate::mysql::run(args, path),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => {
            eprintln!("mysql: not built (run with --features mysql)");
            None
        }
        Backend::Sqlite => crate::sqlite::run(args, path),
    }
}
