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
    /// The strategy's name (or the peer's label).
    pub strategy: String,
    /// Concurrent workers.
    pub workers: usize,
    /// Hot keys.
    pub keys: i32,
    /// How long the run lasted.
    pub seconds: f64,
    /// What the workers counted, the latencies sorted.
    pub tally: Tally,
    /// Committed operations minus the units that left the table.
    pub lost: i64,
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
        Row {
            backend: backend.name(),
            strategy: strategy.to_owned(),
            workers,
            keys,
            seconds: elapsed.as_secs_f64(),
            lost: tally.committed as i64 - taken,
            tally,
        }
    }

    /// Committed operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        self.tally.committed as f64 / self.seconds.max(1e-9)
    }

    /// The percentile `p` of the committed operations' latency, in ms.
    pub fn ms(&self, p: f64) -> f64 {
        percentile(&self.tally.latencies, p) as f64 / 1e6
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
            self.tally.committed,
            self.tally.failed,
            self.ops_per_sec(),
            self.ms(50.0),
            self.ms(99.0),
            self.tally.conflicts,
            self.tally.aborts,
            self.tally.retries,
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
            self.ops_per_sec(),
            self.ms(50.0),
            self.ms(99.0),
            self.tally.conflicts,
            self.tally.aborts,
            self.tally.retries,
            self.tally.failed,
            self.lost
        )
    }
}
