//! One measured run of one strategy: the table line (which `redraw` reads back) and
//! the CSV line.

use std::time::Duration;

use crate::backend::Backend;
use crate::harness::Tally;
use crate::stats::percentile;

/// One measured run of one strategy at one setting.
#[derive(Debug, Clone)]
pub struct Row {
    /// The backend's name.
    pub backend: &'static str,
    /// The strategy's name (or the async setup's label).
    pub strategy: String,
    /// Concurrent workers.
    pub workers: usize,
    /// Hot keys.
    pub keys: i32,
    /// How long the run lasted.
    pub seconds: f64,
    /// Committed operations.
    pub committed: u64,
    /// Operations that did not commit.
    pub failed: u64,
    /// Committed operations per second.
    pub ops_per_sec: f64,
    /// Median latency of the committed operations.
    pub p50_ms: f64,
    /// Their 99th percentile.
    pub p99_ms: f64,
    /// Optimistic misses.
    pub conflicts: u64,
    /// Transactions the database aborted.
    pub aborts: u64,
    /// Attempts beyond the first.
    pub retries: u64,
    /// Committed operations minus the units that left the table.
    pub lost: i64,
    /// Statements the run's connections started, where counted (async runs); not in
    /// the CSV.
    pub statements: u64,
    /// Of the aborts, deadlocks (on Galera: certification failures); not in the CSV.
    pub deadlocks: u64,
}

impl Row {
    /// The row of a run's merged tally; `taken` is what left the table.
    pub fn new(
        backend: Backend,
        strategy: &str,
        workers: usize,
        keys: i32,
        (mut tally, elapsed): (Tally, Duration),
        taken: i64,
    ) -> Row {
        tally.latencies.sort_unstable();
        let seconds = elapsed.as_secs_f64();
        let ms = |nanos: u64| nanos as f64 / 1e6;
        Row {
            backend: backend.name(),
            strategy: strategy.to_owned(),
            workers,
            keys,
            seconds,
            committed: tally.committed,
            failed: tally.failed,
            ops_per_sec: tally.committed as f64 / seconds.max(1e-9),
            p50_ms: ms(percentile(&tally.latencies, 50.0)),
            p99_ms: ms(percentile(&tally.latencies, 99.0)),
            conflicts: tally.conflicts,
            aborts: tally.aborts,
            retries: tally.retries,
            lost: tally.committed as i64 - taken,
            statements: tally.statements,
            deadlocks: tally.deadlocks,
        }
    }

    /// The CSV file's first line.
    pub const CSV_HEADER: &'static str = "backend,strategy,workers,keys,seconds,committed,failed,\
        ops_per_sec,p50_ms,p99_ms,conflicts,aborts,retries,lost_updates";

    /// The run as a CSV line.
    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{:.3},{},{},{:.1},{:.3},{:.3},{},{},{},{}",
            self.backend,
            self.strategy,
            self.workers,
            self.keys,
            self.seconds,
            self.committed,
            self.failed,
            self.ops_per_sec,
            self.p50_ms,
            self.p99_ms,
            self.conflicts,
            self.aborts,
            self.retries,
            self.lost
        )
    }

    /// The run as a line of the printed table.
    pub fn line(&self) -> String {
        format!(
            "{:<20} keys {:>6}  {:>9.0} ops/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             conflicts {:>7}  aborts {:>6}  retries {:>7}  failed {:>4}  lost {:>6}",
            self.strategy,
            self.keys,
            self.ops_per_sec,
            self.p50_ms,
            self.p99_ms,
            self.conflicts,
            self.aborts,
            self.retries,
            self.failed,
            self.lost
        )
    }
}
