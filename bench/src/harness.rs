//! Running one strategy with N workers (threads, or tasks on a Tokio runtime) and
//! collecting what they saw.

use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use diesel_occ::blocking::ConnectionSource;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{PoolError, PoolErrorKind};

/// What one operation (one reservation, with all its attempts) ended with.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpResult {
    /// The reservation was committed (one unit taken).
    pub committed: bool,
    /// Attempts beyond the first.
    pub retries: u32,
    /// Optimistic misses: a conditional UPDATE that matched no row.
    pub conflicts: u32,
    /// Transactions the database aborted (serialization failure, deadlock, busy).
    pub aborts: u32,
    /// Of the aborts, deadlocks (PostgreSQL 40P01, MySQL 1213: on Galera, also the
    /// certification failures).
    pub deadlocks: u32,
}

/// Counts of one worker (or of a whole run once merged).
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Operations that committed.
    pub committed: u64,
    /// Operations that did not (retries exhausted, sold out, or an error).
    pub failed: u64,
    /// Attempts beyond the first.
    pub retries: u64,
    /// Optimistic misses.
    pub conflicts: u64,
    /// Transactions the database aborted.
    pub aborts: u64,
    /// Of the aborts, deadlocks.
    pub deadlocks: u64,
    /// Latency of each committed operation, in nanoseconds, retries included.
    pub latencies: Vec<u64>,
    /// First error text of a failed operation, for the log.
    pub first_error: Option<String>,
    /// Statements the run's connections started, where counted (the async runs).
    pub statements: u64,
}

impl Tally {
    /// Counts one operation's result and, when it committed, its latency.
    pub fn record(&mut self, result: Result<OpResult, String>, latency: Duration) {
        match result {
            Ok(op) => {
                self.retries += u64::from(op.retries);
                self.conflicts += u64::from(op.conflicts);
                self.aborts += u64::from(op.aborts);
                self.deadlocks += u64::from(op.deadlocks);
                if op.committed {
                    self.committed += 1;
                    self.latencies
                        .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
                } else {
                    self.failed += 1;
                }
            }
            Err(error) => {
                self.failed += 1;
                self.first_error.get_or_insert(error);
            }
        }
    }

    /// Adds another worker's counts.
    pub fn merge(&mut self, other: Tally) {
        self.committed += other.committed;
        self.failed += other.failed;
        self.retries += other.retries;
        self.conflicts += other.conflicts;
        self.aborts += other.aborts;
        self.deadlocks += other.deadlocks;
        self.latencies.extend(other.latencies);
        self.statements += other.statements;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// Tells workers when to stop: the clock starts when it is made.
#[derive(Debug)]
pub struct Stop {
    duration: Duration,
    started: Instant,
}

impl Stop {
    /// Workers stop `duration` from now.
    pub fn new(duration: Duration) -> Self {
        let started = Instant::now();
        Stop { duration, started }
    }

    /// When the clock started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Whether a worker may start another operation.
    pub fn another(&self) -> bool {
        self.started.elapsed() < self.duration
    }
}

/// One worker thread's state for the blocking strategies.
#[derive(Debug)]
pub struct Worker {
    /// The worker's own generator (keys, backoff jitter).
    pub rng: fastrand::Rng,
    /// The retry policy; clones share its hot-row memory.
    pub policy: RetryPolicy,
}

/// The generator of worker `index`: every run gives its workers the same seeds.
pub fn rng(index: usize) -> fastrand::Rng {
    fastrand::Rng::with_seed(index as u64 * 7919 + 1)
}

/// A worker's own connection, lent to each attempt of the retry helper (the
/// helper's connection source) or used directly by the hand-written strategies.
#[derive(Debug)]
pub struct Held<C>(pub RefCell<C>);

impl<C> Held<C> {
    /// Holds `conn`.
    pub fn new(conn: C) -> Self {
        Held(RefCell::new(conn))
    }
}

impl<C: diesel::Connection> ConnectionSource for Held<C> {
    type Connection = C;
    type Pooled<'a>
        = RefMut<'a, C>
    where
        Self: 'a;

    fn checkout(&self) -> Result<RefMut<'_, C>, PoolError> {
        self.0
            .try_borrow_mut()
            .map_err(|_| PoolError::from_kind(PoolErrorKind::Timeout))
    }
}

/// Runs `op` on `workers` threads, each with its own connection from `connect`
/// (given the worker's index) and a key from `1..=keys` per operation, for `duration`.
/// Returns the merged tally and the elapsed time.
pub fn run_threads<C: Send>(
    workers: usize,
    keys: i32,
    duration: Duration,
    policy: RetryPolicy,
    connect: impl Fn(usize) -> Result<C, String> + Sync,
    op: impl Fn(&Held<C>, &mut Worker, i32) -> Result<OpResult, String> + Sync,
) -> Result<(Tally, Duration), String> {
    let connections = (0..workers).map(&connect).collect::<Result<Vec<_>, _>>()?;
    let stop = Stop::new(duration);
    let barrier = Barrier::new(workers);
    let (stop, op, barrier) = (&stop, &op, &barrier);
    let tallies: Vec<(Tally, Instant)> = std::thread::scope(|scope| {
        let handles: Vec<_> = connections
            .into_iter()
            .enumerate()
            .map(|(index, conn)| {
                // Clones share the policy's hot-row memory: the workers learn together.
                let policy = policy.clone();
                scope.spawn(move || {
                    let held = Held::new(conn);
                    let mut worker = Worker {
                        rng: rng(index),
                        policy,
                    };
                    let mut tally = Tally::default();
                    barrier.wait();
                    while stop.another() {
                        let key = worker.rng.i32(1..=keys);
                        let began = Instant::now();
                        let result = op(&held, &mut worker, key);
                        tally.record(result, began.elapsed());
                    }
                    (tally, Instant::now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a worker panicked"))
            .collect()
    });
    Ok(merge(stop.started(), tallies))
}

/// One task's reservations, for [`run_tasks`].
pub trait Reserve: Send + 'static {
    /// One reservation of the row `key`.
    fn reserve(&mut self, key: i32) -> impl Future<Output = Result<OpResult, String>> + Send;
}

/// Runs each of `tasks` as a task of the current runtime, with a key from `1..=keys`
/// per operation (the same seeds as the threads of [`run_threads`]), for `duration`.
pub async fn run_tasks<T: Reserve>(
    tasks: Vec<T>,
    keys: i32,
    duration: Duration,
) -> Result<(Tally, Duration), String> {
    let stop = Arc::new(Stop::new(duration));
    let tasks = tasks.into_iter().enumerate().map(|(index, mut task)| {
        let stop = Arc::clone(&stop);
        async move {
            let mut rng = rng(index);
            let mut tally = Tally::default();
            while stop.another() {
                let key = rng.i32(1..=keys);
                let began = Instant::now();
                let result = task.reserve(key).await;
                tally.record(result, began.elapsed());
            }
            (tally, Instant::now())
        }
    });
    Ok(merge(stop.started(), spawn_all(tasks).await?))
}

/// Spawns every future on the current runtime; their outputs, in order.
pub async fn spawn_all<F>(futures: impl Iterator<Item = F>) -> Result<Vec<F::Output>, String>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(handles.len());
    for handle in handles {
        outputs.push(handle.await.map_err(|e| e.to_string())?);
    }
    Ok(outputs)
}

/// A multi-threaded runtime for `workers` tasks: one worker thread per core, at most
/// one per task (the setup `diesel_occ::guide::tuning` recommends).
pub fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores.min(workers).max(1))
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// Merges the workers' tallies; the elapsed time runs from `started` to the last end.
pub fn merge(started: Instant, tallies: Vec<(Tally, Instant)>) -> (Tally, Duration) {
    let mut total = Tally::default();
    let mut ended = started;
    for (tally, end) in tallies {
        total.merge(tally);
        ended = ended.max(end);
    }
    (total, ended - started)
}

/// Sleeps the retry policy's jittered backoff before attempt `attempts + 1`.
pub fn backoff(policy: &RetryPolicy, rng: &mut fastrand::Rng, attempts: u32) {
    let ceiling = policy.backoff_ceiling(attempts);
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    let pause = Duration::from_nanos(rng.u64(0..=nanos));
    if !pause.is_zero() {
        std::thread::sleep(pause);
    }
}
