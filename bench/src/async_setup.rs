//! How the asynchronous strategy is set up ([`Setup`]): as diesel-occ's
//! `guide::tuning` recommends, a Tokio multi-threaded runtime, a LIFO deadpool pool with
//! the fast recycle check (and on MySQL `verify_when_idle`), on SQLite one blocking call
//! per attempt in place. How that setup was chosen is recorded in
//! bench/results/method.md.

use std::time::Duration;

/// Whose code an async run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// Plain diesel-async written by hand instead of diesel-occ's helper.
    pub handwritten: bool,
}

impl Setup {
    /// What the benchmark runs as `occ-async`.
    pub const RECOMMENDED: Setup = Setup { handwritten: false };

    /// The same statements written by hand on diesel-async (`handwritten-async`): the
    /// async baseline that isolates the library.
    pub const HANDWRITTEN: Setup = Setup { handwritten: true };

    /// The name the rounds print.
    pub fn label(self) -> &'static str {
        if self.handwritten {
            "handwritten-async"
        } else {
            "occ-async"
        }
    }

    /// How long a connection may sit idle before a checkout tests it: on MySQL, where
    /// nothing else sees a connection the server closed.
    pub fn idle_check(url: &str) -> Option<Duration> {
        url.starts_with("mysql:")
            .then_some(Duration::from_millis(500))
    }

    /// A multi-threaded runtime for `workers` tasks: one worker thread per core, at
    /// most one per task.
    pub fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cores.min(workers).max(1))
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    }
}
