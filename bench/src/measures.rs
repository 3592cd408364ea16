//! What the measurements of statements record: the statements of successful saves
//! (Diesel's instrumentation) and the batch benchmark's runs.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use diesel::connection::{Instrumentation, InstrumentationEvent};

/// What Diesel's instrumentation saw of successful saves.
#[derive(Debug, Clone, Default)]
pub struct Statements {
    /// Successful saves measured each way.
    pub saves: usize,
    /// Statements diesel-occ's saves added to the prepared statement cache.
    pub cached: usize,
    /// The same for the hand-written statements.
    pub hand_cached: usize,
    /// The same for `handwritten-prepared`.
    pub prepared_cached: usize,
    /// Statements diesel-occ's saves ran.
    pub statements: usize,
    /// diesel-occ's read, without binds.
    pub occ_read: String,
    /// diesel-occ's UPDATE.
    pub occ_update: String,
    /// The hand-written read.
    pub handwritten_read: String,
    /// The hand-written UPDATE.
    pub handwritten_update: String,
    /// The hand-written UPDATE prepared once (`CachedUpdate`).
    pub prepared_update: String,
}

/// A query's text as instrumentation prints it, without the bind values.
pub fn strip_binds(sql: &str) -> String {
    sql.split(" -- binds:")
        .next()
        .unwrap_or(sql)
        .trim()
        .to_owned()
}

/// The statements a connection ran, from Diesel's instrumentation: each query's text,
/// and `CACHE <sql>` for each statement prepared into the connection's cache.
#[derive(Debug, Clone)]
pub struct QueryLog(Arc<Mutex<Vec<String>>>);

impl QueryLog {
    /// Starts recording what `conn` runs.
    pub fn attach(conn: &mut impl diesel::Connection) -> QueryLog {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = Arc::clone(&log);
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| match event {
            InstrumentationEvent::StartQuery { query, .. } => {
                sink.lock().unwrap().push(query.to_string());
            }
            InstrumentationEvent::CacheQuery { sql, .. } => {
                sink.lock().unwrap().push(format!("CACHE {sql}"));
            }
            _ => {}
        });
        QueryLog(log)
    }

    /// What was recorded since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    /// Whether a recorded line is a statement prepared into the cache.
    pub fn cached(line: &str) -> bool {
        line.starts_with("CACHE ")
    }
}

/// How N entities are saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `save_checked` on each, one after the other.
    Single,
    /// One `save_all_checked`.
    Batch,
}

impl Side {
    /// The name the tables print.
    pub fn name(self) -> &'static str {
        match self {
            Side::Single => "single",
            Side::Batch => "batch",
        }
    }
}

/// What the workers of one run did.
#[derive(Debug, Default)]
pub struct BatchMeasured {
    /// Entities saved.
    pub saves: u64,
    /// From the first worker's start to the last worker's end.
    pub elapsed: Duration,
    /// Nanoseconds per operation (N saves).
    pub latencies: Vec<u64>,
}

impl BatchMeasured {
    /// Merges the workers' `(saves, started, ended, latencies)`.
    pub fn merge(workers: Vec<(u64, Instant, Instant, Vec<u64>)>) -> BatchMeasured {
        let mut measured = BatchMeasured::default();
        let first = workers.iter().map(|w| w.1).min();
        let last = workers.iter().map(|w| w.2).max();
        if let (Some(first), Some(last)) = (first, last) {
            measured.elapsed = last - first;
        }
        for (saves, _, _, latencies) in workers {
            measured.saves += saves;
            measured.latencies.extend(latencies);
        }
        measured.latencies.sort_unstable();
        measured
    }

    /// Entities saved per second.
    pub fn saves_per_sec(&self) -> f64 {
        self.saves as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The percentile `p` of the operations' latency, in ms.
    pub fn ms(&self, p: f64) -> f64 {
        crate::stats::percentile(&self.latencies, p) as f64 / 1e6
    }
}

/// Counts the statements a connection starts (Diesel's instrumentation).
#[derive(Debug, Clone, Default)]
pub struct StatementLog(Arc<Mutex<Vec<String>>>);

impl StatementLog {
    /// What was recorded since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Instrumentation for StatementLog {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::StartQuery { query, .. } = event {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(query.to_string());
        }
    }
}

/// The statements that 100 single saves and one batch of 100 started.
#[derive(Debug, Default)]
pub struct Counted {
    /// Of the single saves.
    pub single: Vec<String>,
    /// Of the batch.
    pub batch: Vec<String>,
}
