//! The asynchronous strategy (`occ-async`): diesel-occ's asynchronous `save_checked`
//! inside `asynchronous::retry`, set up as diesel-occ's documentation recommends
//! ([`Setup::RECOMMENDED`]): a deadpool pool of as many connections as tasks that hands
//! out the most recently returned connection first (`QueueMode::Lifo`) and runs no test
//! query at checkout (`RecyclingMethod::Fast`; on MySQL with
//! `asynchronous::verify_when_idle(500 ms)`, which tests a connection idle that long),
//! on a multi-threaded Tokio runtime of one thread per core. On SQLite the
//! connection is `SyncConnectionWrapper<SqliteConnection, BlockInPlace>` and each
//! attempt runs the blocking closure in one call (`asynchronous::retry_in_blocking_task`).
//!
//! `OCC_BENCH_ASYNC_SETUPS` adds other setups to the paired async rounds (see
//! [`Setup::parse`]): how the time was found.
//!
//! `asynchronous_strategy!()` expands inside a backend module that defines `AsyncConn`.

macro_rules! asynchronous_strategy {
    () => {
        /// The asynchronous strategy, apart from the blocking traits' names.
        pub(crate) mod asynchronous {
            use std::sync::Arc;
            use std::time::{Duration, Instant};

            use diesel_async::pooled_connection::deadpool::Pool;
            use diesel_occ::retry::RetryPolicy;

            use super::AsyncConn;
            use crate::harness::{Limit, OpResult, Stop, Tally};
            use crate::model::Stock;

            /// Runs the asynchronous strategy: `workers` tasks sharing a pool of
            /// `workers` connections; `after_connect` runs on each new pooled connection.
            /// With `combine`, each reservation goes through `asynchronous::Combiner`.
            pub(crate) fn run(
                url: &str,
                workers: usize,
                keys: i32,
                limit: Limit,
                policy: RetryPolicy,
                after_connect: &'static str,
                combine: bool,
            ) -> Result<(Tally, Duration), String> {
                let setup = crate::asynchronous::Setup::current();
                let runtime = setup.runtime(workers)?;
                runtime.block_on(async move {
                    let pool = pool(url, workers, after_connect, setup).await?;
                    // A connection of its own per task, when the setup says so.
                    let mut held = Vec::with_capacity(workers);
                    for _ in 0..workers {
                        held.push(if setup.source == crate::asynchronous::Source::Held {
                            Some(crate::asynchronous::Held::new(
                                connect(url, after_connect).await?,
                            ))
                        } else {
                            None
                        });
                    }
                    let mut stop = Stop::new(limit);
                    stop.start();
                    let stop = Arc::new(stop);
                    let tasks: Vec<_> = held
                        .into_iter()
                        .enumerate()
                        .map(|(index, held)| {
                            let (pool, stop) = (pool.clone(), Arc::clone(&stop));
                            let policy = policy.clone();
                            tokio::spawn(worker(pool, held, stop, policy, keys, index, combine))
                        })
                        .collect();
                    let mut tallies = Vec::with_capacity(workers);
                    for task in tasks {
                        tallies.push(task.await.map_err(|e| e.to_string())?);
                    }
                    crate::harness::merge(stop.started(), tallies)
                })
            }

            /// A connection, set up as the pool sets up its own.
            async fn connect(url: &str, after_connect: &'static str) -> Result<AsyncConn, String> {
                use diesel_async::{AsyncConnection, SimpleAsyncConnection};
                let mut conn = AsyncConn::establish(url).await.map_err(|e| e.to_string())?;
                if !after_connect.is_empty() {
                    conn.batch_execute(after_connect)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                crate::asynchronous::count_statements(&mut conn);
                Ok(conn)
            }

            /// A pool of `workers` connections, all connected before the clock starts.
            async fn pool(
                url: &str,
                workers: usize,
                after_connect: &'static str,
                setup: crate::asynchronous::Setup,
            ) -> Result<Pool<AsyncConn>, String> {
                use diesel_async::pooled_connection::{
                    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
                };
                use diesel_async::{AsyncConnection, SimpleAsyncConnection};

                let mut config = ManagerConfig::<AsyncConn>::default();
                if setup.fast_recycle() {
                    config.recycling_method = RecyclingMethod::Fast;
                }
                config.custom_setup = Box::new(move |url| {
                    Box::pin(async move {
                        let mut conn = AsyncConn::establish(url).await?;
                        if !after_connect.is_empty() {
                            conn.batch_execute(after_connect).await.map_err(|e| {
                                diesel::ConnectionError::BadConnection(e.to_string())
                            })?;
                        }
                        crate::asynchronous::count_statements(&mut conn);
                        Ok(conn)
                    })
                });
                let manager =
                    AsyncDieselConnectionManager::<AsyncConn>::new_with_config(url, config);
                let queue = if setup.lifo {
                    deadpool::managed::QueueMode::Lifo
                } else {
                    deadpool::managed::QueueMode::Fifo
                };
                let mut builder = Pool::builder(manager).queue_mode(queue).max_size(workers);
                if let Some(idle) = setup.idle_check(url) {
                    builder = builder.pre_recycle(diesel_occ::asynchronous::verify_when_idle(idle));
                }
                let pool = builder.build().map_err(|e| e.to_string())?;
                let mut warm = Vec::with_capacity(workers);
                for _ in 0..workers {
                    warm.push(pool.get().await.map_err(|e| e.to_string())?);
                }
                drop(warm);
                Ok(pool)
            }

            /// One task: reservations on random keys until `stop` says so.
            async fn worker(
                pool: Pool<AsyncConn>,
                held: Option<crate::asynchronous::Held<AsyncConn>>,
                stop: Arc<Stop>,
                policy: RetryPolicy,
                keys: i32,
                index: usize,
                combine: bool,
            ) -> (Tally, Instant) {
                let mut rng = fastrand::Rng::with_seed(index as u64 * 7919 + 1);
                let mut tally = Tally::default();
                while stop.another() {
                    let key = rng.i32(1..=keys);
                    let began = Instant::now();
                    let result = match &held {
                        _ if combine => occ_combine(&pool, &policy, key).await,
                        Some(held) => occ(held, &policy, key).await,
                        None => occ(&pool, &policy, key).await,
                    };
                    tally.record(result, began.elapsed());
                }
                (tally, Instant::now())
            }

            /// One reservation through `asynchronous::Combiner`, shared by every task of
            /// this backend, with the pool as its source.
            async fn occ_combine(
                pool: &Pool<AsyncConn>,
                policy: &RetryPolicy,
                key: i32,
            ) -> Result<OpResult, String> {
                static COMBINER: std::sync::LazyLock<diesel_occ::asynchronous::Combiner<Stock>> =
                    std::sync::LazyLock::new(diesel_occ::asynchronous::Combiner::new);
                let result = COMBINER
                    .apply(pool, policy, key, |stock: &mut Stock| {
                        if stock.available <= 0 {
                            return false;
                        }
                        stock.available -= 1;
                        true
                    })
                    .await;
                crate::blocking::Seen::default().finish(result)
            }

            /// One reservation through the asynchronous retry helper.
            async fn occ<S>(pool: &S, policy: &RetryPolicy, key: i32) -> Result<OpResult, String>
            where
                S: diesel_occ::asynchronous::AsyncConnectionSource<Connection = AsyncConn>,
            {
                use crate::asynchronous::OneTask;
                use diesel_occ::asynchronous::prelude::*;

                if crate::asynchronous::Setup::current().handwritten {
                    return handwritten(pool, policy, key).await;
                }
                if crate::asynchronous::Setup::current().one_task {
                    if let Some(op) = AsyncConn::occ_in_one_task(pool, policy, key) {
                        return op.await;
                    }
                }
                use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

                let (last, conflicts, aborts) =
                    (AtomicU32::new(1), AtomicU32::new(0), AtomicU32::new(0));
                let (last_ref, conflicts_ref, aborts_ref) = (&last, &conflicts, &aborts);
                let result =
                    diesel_occ::asynchronous::retry(pool, policy, async move |conn, attempt| {
                        last_ref.store(attempt.number(), Relaxed);
                        let found: Result<Stock, diesel_occ::Error> = attempt.find(conn, key).await;
                        let result = match found {
                            Ok(mut stock) if stock.available > 0 => {
                                stock.available -= 1;
                                stock.save_checked(conn).await.map(|()| true)
                            }
                            Ok(_) => Ok(false),
                            Err(error) => Err(error),
                        };
                        if let Err(error) = &result {
                            if error.is_conflict() {
                                conflicts_ref.fetch_add(1, Relaxed);
                            } else if error.is_retryable() {
                                aborts_ref.fetch_add(1, Relaxed);
                            }
                        }
                        result
                    })
                    .await;
                crate::blocking::Seen {
                    last_attempt: last.load(Relaxed),
                    conflicts: conflicts.load(Relaxed),
                    aborts: aborts.load(Relaxed),
                }
                .finish(result)
            }

            /// The blocking `handwritten-prepared` on diesel-async, for the diagnosis
            /// (`code=handwritten`): a checkout per attempt as the helper makes, the same
            /// read, the same conditional UPDATE prepared once, on a miss the same token
            /// read, and the same backoff; what is left between it and `occ-async` is
            /// the library's own cost in async code.
            async fn handwritten<S>(
                source: &S,
                policy: &RetryPolicy,
                key: i32,
            ) -> Result<OpResult, String>
            where
                S: diesel_occ::asynchronous::AsyncConnectionSource<Connection = AsyncConn>,
            {
                use crate::model::bench_stock;
                use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, SelectableHelper};
                use diesel_async::RunQueryDsl;

                let mut op = OpResult::default();
                for attempt in 1..=policy.attempt_limit() {
                    if attempt > 1 {
                        op.retries += 1;
                        let ceiling = policy.backoff_ceiling(attempt - 1);
                        // Full jitter from the thread's generator, as the helper draws it.
                        crate::asynchronous::pause(ceiling.mul_f64(fastrand::f64())).await;
                    }
                    let mut conn = source.checkout().await.map_err(|e| e.to_string())?;
                    let conn = &mut *conn;
                    let stock: Stock = bench_stock::table
                        .find(key)
                        .select(Stock::as_select())
                        .get_result(conn)
                        .await
                        .map_err(|e| e.to_string())?;
                    if stock.available <= 0 {
                        return Ok(op);
                    }
                    let written = diesel_occ::statement::CachedUpdate::new(
                        bench_stock::table
                            .find(key)
                            .filter(bench_stock::version.eq(stock.version)),
                        (
                            bench_stock::available.eq(stock.available - 1),
                            bench_stock::version.eq(stock.version.wrapping_add(1)),
                        ),
                    )
                    .execute(conn)
                    .await
                    .map_err(|e| e.to_string())?;
                    if written == 1 {
                        op.committed = true;
                        return Ok(op);
                    }
                    op.conflicts += 1;
                    let _current: Option<i32> = bench_stock::table
                        .find(key)
                        .select(bench_stock::version)
                        .get_result(conn)
                        .await
                        .optional()
                        .map_err(|e| e.to_string())?;
                }
                Ok(op)
            }
        }
    };
}

pub(crate) use asynchronous_strategy;

/// How the asynchronous strategy sets itself up: the runtime, the pool's recycle check
/// and where each attempt's connection comes from. `occ-async` runs with
/// [`Setup::RECOMMENDED`]; `OCC_BENCH_ASYNC_SETUPS` (a `;`-separated list of
/// [`Setup::parse`] specs) adds other setups to the paired async rounds, to find where
/// the time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Setup {
    pub(crate) runtime: Runtime,
    pub(crate) recycle: Recycle,
    pub(crate) source: Source,
    /// On a wrapped blocking connection (SQLite), each attempt in one blocking task
    /// (`retry_in_blocking_task`) rather than a blocking task per statement.
    pub(crate) one_task: bool,
    /// deadpool hands out the most recently returned connection first.
    pub(crate) lifo: bool,
    /// SQLite: the wrapper runs its blocking calls in place (diesel-occ's
    /// `BlockInPlace`) rather than on Tokio's blocking pool (diesel-async's default).
    pub(crate) in_place: bool,
    /// Plain diesel-async written by hand instead of diesel-occ's helper (diagnosis).
    pub(crate) handwritten: bool,
}

/// The Tokio runtime the tasks run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runtime {
    /// `new_multi_thread` with this many worker threads (0: one per core, at most one
    /// per task).
    Multi(usize),
    /// `new_current_thread`: every task and every driver task on one thread.
    Current,
}

/// The deadpool recycle check run at every checkout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recycle {
    /// diesel-async's default: a `SELECT 1` round trip per checkout.
    Verified,
    /// Only the connection's own state (an open transaction, a broken one).
    Fast,
    /// What diesel-occ's documentation recommends: `Fast`, and on MySQL (where
    /// nothing else sees a connection the server closed) a test query for a
    /// connection idle for 500 ms (`asynchronous::verify_when_idle`).
    Recommended,
}

/// Where an attempt's connection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A deadpool checkout per attempt.
    Pool,
    /// The task's own connection, as each blocking worker thread has.
    Held,
}

static SETUP: std::sync::Mutex<Option<Setup>> = std::sync::Mutex::new(None);

impl Setup {
    /// What the benchmark runs as `occ-async`, and what BENCHMARKS.md recommends.
    pub(crate) const RECOMMENDED: Setup = Setup {
        runtime: Runtime::Multi(0),
        recycle: Recycle::Recommended,
        source: Source::Pool,
        one_task: true,
        lifo: true,
        in_place: true,
        handwritten: false,
    };

    /// [`Setup::RECOMMENDED`] with the same statements written by hand on diesel-async
    /// (`handwritten-async`): the async baseline that isolates the library.
    pub(crate) const HANDWRITTEN: Setup = Setup {
        handwritten: true,
        ..Setup::RECOMMENDED
    };

    /// The setup the next asynchronous run uses.
    pub(crate) fn current() -> Setup {
        SETUP.lock().unwrap().unwrap_or(Setup::RECOMMENDED)
    }

    /// Makes `setup` the one the next asynchronous runs use.
    pub(crate) fn set(setup: Setup) {
        *SETUP.lock().unwrap() = Some(setup);
    }

    /// The diagnosis setups from `OCC_BENCH_ASYNC_SETUPS`, e.g.
    /// `rt=current,recycle=fast;rt=multi2,source=held`.
    pub(crate) fn from_env() -> Result<Vec<Setup>, String> {
        let Ok(text) = std::env::var("OCC_BENCH_ASYNC_SETUPS") else {
            return Ok(Vec::new());
        };
        text.split(';')
            .filter(|s| !s.trim().is_empty())
            .map(Setup::parse)
            .collect()
    }

    /// `rt=multi|multiN|current`, `recycle=verified|fast|recommended`,
    /// `queue=fifo|lifo`, `source=pool|held`, `hops=closure|attempt` (SQLite: the async
    /// closure's statements, or one blocking call per attempt), `wrapper=hop|in-place`
    /// (SQLite: each blocking call on Tokio's blocking pool, or in place), comma
    /// separated, `code=occ|handwritten` (diesel-occ's helper, or the same statements
    /// written by hand with diesel-async), each defaulting to [`Setup::RECOMMENDED`]'s.
    pub(crate) fn parse(spec: &str) -> Result<Setup, String> {
        let mut setup = Setup::RECOMMENDED;
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("bad async setup {part:?} in {spec:?}");
            let (key, value) = part.split_once('=').ok_or_else(bad)?;
            match (key, value) {
                ("rt", "current") => setup.runtime = Runtime::Current,
                ("rt", multi) if multi.starts_with("multi") => {
                    let threads = &multi["multi".len()..];
                    setup.runtime = Runtime::Multi(if threads.is_empty() {
                        0
                    } else {
                        threads.parse().map_err(|_| bad())?
                    });
                }
                ("recycle", "verified") => setup.recycle = Recycle::Verified,
                ("recycle", "fast") => setup.recycle = Recycle::Fast,
                ("recycle", "recommended") => setup.recycle = Recycle::Recommended,
                ("source", "pool") => setup.source = Source::Pool,
                ("source", "held") => setup.source = Source::Held,
                ("hops", "closure" | "statement") => setup.one_task = false,
                ("hops", "attempt") => setup.one_task = true,
                ("queue", "lifo") => setup.lifo = true,
                ("wrapper", "hop") => setup.in_place = false,
                ("wrapper", "in-place") => setup.in_place = true,
                ("queue", "fifo") => setup.lifo = false,
                ("code", "occ") => setup.handwritten = false,
                ("code", "handwritten") => setup.handwritten = true,
                _ => return Err(bad()),
            }
        }
        Ok(setup)
    }

    /// The name the rounds print: `occ-async` for the recommended setup.
    pub(crate) fn label(self) -> String {
        if self == Setup::RECOMMENDED {
            return "occ-async".into();
        }
        if self == Setup::HANDWRITTEN {
            return "handwritten-async".into();
        }
        let runtime = match self.runtime {
            Runtime::Multi(0) => "multi".to_owned(),
            Runtime::Multi(n) => format!("multi{n}"),
            Runtime::Current => "current".to_owned(),
        };
        let recycle = match self.recycle {
            Recycle::Verified => "verified",
            Recycle::Fast => "fast",
            Recycle::Recommended => "recycle-recommended",
        };
        let source = match self.source {
            Source::Pool => "pool",
            Source::Held => "held",
        };
        let hops = if self.one_task { "" } else { ",closure" };
        let wrapper = if self.in_place { "" } else { ",wrapper-hop" };
        let queue = if self.lifo { ",lifo" } else { ",fifo" };
        let code = if self.handwritten { ",handwritten" } else { "" };
        format!("async[{runtime},{recycle},{source}{queue}{hops}{wrapper}{code}]")
    }

    /// Whether the pool skips the test query at checkout.
    pub(crate) fn fast_recycle(self) -> bool {
        match self.recycle {
            Recycle::Verified => false,
            Recycle::Fast => true,
            Recycle::Recommended => true,
        }
    }

    /// How long a connection may sit idle before a checkout tests it, if ever.
    pub(crate) fn idle_check(self, url: &str) -> Option<std::time::Duration> {
        (self.recycle == Recycle::Recommended && url.starts_with("mysql:"))
            .then_some(std::time::Duration::from_millis(500))
    }

    /// Builds the runtime for `workers` tasks.
    pub(crate) fn runtime(self, workers: usize) -> Result<tokio::runtime::Runtime, String> {
        let mut builder = match self.runtime {
            Runtime::Current => tokio::runtime::Builder::new_current_thread(),
            Runtime::Multi(threads) => {
                let threads = if threads == 0 {
                    let cores = std::thread::available_parallelism().map_or(2, usize::from);
                    cores.min(workers).max(1)
                } else {
                    threads
                };
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads);
                builder
            }
        };
        builder.enable_all().build().map_err(|e| e.to_string())
    }
}

/// Statements the asynchronous runs' connections started (Diesel's instrumentation).
pub(crate) static STATEMENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts every statement `conn` starts into [`STATEMENTS`].
pub(crate) fn count_statements(conn: &mut impl diesel_async::AsyncConnection) {
    use diesel::connection::InstrumentationEvent;
    conn.set_instrumentation(|event: InstrumentationEvent<'_>| {
        if let InstrumentationEvent::StartQuery { .. } = event {
            STATEMENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
}

/// A task's own connection as a connection source: every attempt borrows it.
pub(crate) struct Held<C>(std::sync::Mutex<Option<C>>);

impl<C> Held<C> {
    pub(crate) fn new(conn: C) -> Self {
        Held(std::sync::Mutex::new(Some(conn)))
    }
}

/// The held connection, lent to one attempt; it goes back when dropped.
pub(crate) struct Lent<'a, C> {
    slot: &'a std::sync::Mutex<Option<C>>,
    conn: Option<C>,
}

impl<C> std::ops::Deref for Lent<'_, C> {
    type Target = C;
    fn deref(&self) -> &C {
        self.conn.as_ref().expect("lent")
    }
}

impl<C> std::ops::DerefMut for Lent<'_, C> {
    fn deref_mut(&mut self) -> &mut C {
        self.conn.as_mut().expect("lent")
    }
}

impl<C> Drop for Lent<'_, C> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            *self.slot.lock().unwrap() = Some(conn);
        }
    }
}

impl<C: diesel_async::AsyncConnection + Send> diesel_occ::asynchronous::AsyncConnectionSource
    for Held<C>
{
    type Connection = C;
    type Pooled<'a>
        = Lent<'a, C>
    where
        Self: 'a;

    async fn checkout(&self) -> Result<Lent<'_, C>, diesel_occ::PoolError> {
        let conn = self.0.lock().unwrap().take();
        match conn {
            Some(conn) => Ok(Lent {
                slot: &self.0,
                conn: Some(conn),
            }),
            None => Err(diesel_occ::PoolError::from_kind(
                diesel_occ::PoolErrorKind::Closed,
            )),
        }
    }

    /// Closes it: the task has no connection after that.
    fn discard(&self, mut pooled: Lent<'_, C>) {
        drop(pooled.conn.take());
    }
}

/// How long a retry backoff really lasts, for the policy's first backoffs (uniform in
/// `[0, 1 ms]`): the mean of 200 each, in ms, as asked, with `std::thread::sleep` (the
/// blocking helper), with a plain `tokio::time::sleep`, and with the async helper's
/// pause (the same algorithm as diesel-occ's `asynchronous::retry::pause`: below the
/// timer's 1 ms tick, `thread::sleep` on the runtime's blocking pool).
pub(crate) fn sleep_probe() -> Result<[f64; 4], String> {
    let mut rng = fastrand::Rng::with_seed(7);
    let pauses: Vec<std::time::Duration> = (0..200)
        .map(|_| std::time::Duration::from_micros(rng.u64(0..=1000)))
        .collect();
    let mean = |total: f64| total * 1e3 / pauses.len() as f64;
    let asked = mean(pauses.iter().map(|d| d.as_secs_f64()).sum::<f64>());
    let mut thread = 0.0;
    for pause in &pauses {
        let began = std::time::Instant::now();
        std::thread::sleep(*pause);
        thread += began.elapsed().as_secs_f64();
    }
    let runtime = Setup::RECOMMENDED.runtime(4)?;
    let (tokio, helper) = runtime.block_on(async {
        let (mut tokio, mut helper) = (0.0, 0.0);
        for pause in &pauses {
            let began = std::time::Instant::now();
            tokio::time::sleep(*pause).await;
            tokio += began.elapsed().as_secs_f64();
        }
        for pause in &pauses {
            let began = std::time::Instant::now();
            self::pause(*pause).await;
            helper += began.elapsed().as_secs_f64();
        }
        (tokio, helper)
    });
    Ok([asked, mean(thread), mean(tokio), mean(helper)])
}

/// The async helper's backoff sleep, as diesel-occ's `asynchronous::retry::pause` does
/// it: below the timer's 1 ms tick, `thread::sleep` on the runtime's blocking pool.
pub(crate) async fn pause(backoff: std::time::Duration) {
    const TICK: std::time::Duration = std::time::Duration::from_millis(1);
    if backoff >= TICK {
        tokio::time::sleep(backoff - TICK / 2).await;
    } else {
        // A failed join only means the pause was cut short.
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(backoff)).await;
    }
}

/// One reservation's future.
pub(crate) type BoxedOp<'s> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<crate::harness::OpResult, String>> + Send + 's>,
>;

/// A reservation whose attempts each run in one blocking task, where the connection is a
/// wrapped blocking one: `None` elsewhere (the async closure runs).
pub(crate) trait OneTask: diesel_async::AsyncConnection + Sized {
    fn occ_in_one_task<'s, S>(
        source: &'s S,
        policy: &'s diesel_occ::retry::RetryPolicy,
        key: i32,
    ) -> Option<BoxedOp<'s>>
    where
        S: diesel_occ::asynchronous::AsyncConnectionSource<Connection = Self>;
}

impl OneTask for diesel_async::AsyncPgConnection {
    fn occ_in_one_task<'s, S>(
        _: &'s S,
        _: &'s diesel_occ::retry::RetryPolicy,
        _: i32,
    ) -> Option<BoxedOp<'s>> {
        None
    }
}

#[cfg(feature = "mysql")]
impl OneTask for diesel_async::AsyncMysqlConnection {
    fn occ_in_one_task<'s, S>(
        _: &'s S,
        _: &'s diesel_occ::retry::RetryPolicy,
        _: i32,
    ) -> Option<BoxedOp<'s>> {
        None
    }
}

impl OneTask
    for diesel_async::sync_connection_wrapper::SyncConnectionWrapper<
        diesel::SqliteConnection,
        SqliteRuntime,
    >
{
    /// The blocking helper's closure, on the blocking pool once per attempt.
    fn occ_in_one_task<'s, S>(
        source: &'s S,
        policy: &'s diesel_occ::retry::RetryPolicy,
        key: i32,
    ) -> Option<BoxedOp<'s>>
    where
        S: diesel_occ::asynchronous::AsyncConnectionSource<Connection = Self>,
    {
        use diesel_occ::prelude::*;
        use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

        let seen = std::sync::Arc::new([AtomicU32::new(1), AtomicU32::new(0), AtomicU32::new(0)]);
        let inside = std::sync::Arc::clone(&seen);
        Some(Box::pin(async move {
            let result = diesel_occ::asynchronous::retry_in_blocking_task(
                source,
                policy,
                move |conn, attempt| {
                    inside[0].store(attempt.number(), Relaxed);
                    let result: Result<bool, diesel_occ::Error> = (|| {
                        let mut stock: crate::model::Stock = attempt.find(conn, key)?;
                        if stock.available <= 0 {
                            return Ok(false);
                        }
                        stock.available -= 1;
                        stock.save_checked(conn)?;
                        Ok(true)
                    })();
                    if let Err(error) = &result {
                        if error.is_conflict() {
                            inside[1].fetch_add(1, Relaxed);
                        } else if error.is_retryable() {
                            inside[2].fetch_add(1, Relaxed);
                        }
                    }
                    result
                },
            )
            .await;
            crate::blocking::Seen {
                last_attempt: seen[0].load(Relaxed),
                conflicts: seen[1].load(Relaxed),
                aborts: seen[2].load(Relaxed),
            }
            .finish(result)
        }))
    }
}

/// Where the SQLite wrapper of the async runs makes its blocking calls: in place
/// (diesel-occ's `BlockInPlace`, [`Setup::RECOMMENDED`]) or each on Tokio's blocking pool
/// (what diesel-async's default wrapper does), as [`Setup::in_place`] says.
pub(crate) struct SqliteRuntime(bool);

impl diesel_async::sync_connection_wrapper::SpawnBlocking for SqliteRuntime {
    fn spawn_blocking<'a, R>(
        &mut self,
        task: impl FnOnce() -> R + Send + 'static,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<R, Box<dyn std::error::Error + Send + Sync + 'static>>,
                > + Send
                + 'a,
        >,
    >
    where
        R: Send + 'static,
    {
        if self.0 {
            diesel_occ::asynchronous::BlockInPlace.spawn_blocking(task)
        } else {
            Box::pin(async move {
                tokio::task::spawn_blocking(task)
                    .await
                    .map_err(|error| Box::new(error) as Box<dyn std::error::Error + Send + Sync>)
            })
        }
    }

    fn get_runtime() -> Self {
        SqliteRuntime(Setup::current().in_place)
    }
}
