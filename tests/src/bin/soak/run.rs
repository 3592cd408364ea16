//! The choice of the backend module that runs the workload on its own connection type.

use diesel_occ_tests::Backend;

use crate::options::{Args, Target};
use crate::report::Report;

/// The message of the panics the transaction path raises on purpose, which `main`
/// keeps off stderr.
pub(crate) const INJECTED_PANIC: &str = "soak: a panic injected inside a transaction";

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
