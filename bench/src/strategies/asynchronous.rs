//! The asynchronous strategy (`occ-async`) on one backend's `AsyncConn`: diesel-occ's
//! asynchronous `save_checked` inside `asynchronous::retry`, set up as the [`Setup`]
//! it is given says ([`Setup::RECOMMENDED`] unless the diagnosis asks for another): a
//! deadpool pool of as many connections as tasks, on a Tokio runtime. Plain code,
//! compiled once in each backend module as its `asynchronous`, like `blocking.rs`; the
//! backend module gives it `AsyncConn`, `AFTER_CONNECT`, `establish_async` and
//! `occ_in_one_task`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::asynchronous::{AsyncConnectionSource, Combiner};
use diesel_occ::retry::RetryPolicy;

use super::{AFTER_CONNECT, AsyncConn, establish_async, occ_in_one_task};
use crate::async_setup::{Setup, Source};
use crate::async_support::{Held, count_statements, pause};
use crate::harness::{Limit, OpResult, Stop, Tally, merge};
use crate::model::Stock;
use crate::outcome::Seen;

/// Runs the asynchronous strategy as `setup` says: `workers` tasks sharing a pool of
/// `workers` connections. With `combine`, each reservation goes through
/// `asynchronous::Combiner`. The tally counts the statements the connections started.
pub fn run(
    url: &str,
    workers: usize,
    keys: i32,
    limit: Limit,
    policy: RetryPolicy,
    setup: Setup,
    combine: bool,
) -> Result<(Tally, Duration), String> {
    let runtime = setup.runtime(workers)?;
    let statements = Arc::new(AtomicU64::new(0));
    runtime.block_on(async move {
        let pool = pool(url, workers, setup, &statements).await?;
        // A connection of its own per task, when the setup says so.
        let mut held = Vec::with_capacity(workers);
        for _ in 0..workers {
            held.push(if setup.source == Source::Held {
                Some(Held::new(connect(url, setup, &statements).await?))
            } else {
                None
            });
        }
        // Shared by every task of the run.
        let combiner = Arc::new(Combiner::<Stock>::new());
        let mut stop = Stop::new(limit);
        stop.start();
        let stop = Arc::new(stop);
        let tasks: Vec<_> = held
            .into_iter()
            .enumerate()
            .map(|(index, held)| {
                let task = Task {
                    pool: pool.clone(),
                    held,
                    combiner: combine.then(|| Arc::clone(&combiner)),
                    stop: Arc::clone(&stop),
                    policy: policy.clone(),
                    setup,
                };
                tokio::spawn(task.run(keys, index))
            })
            .collect();
        let mut tallies = Vec::with_capacity(workers);
        for task in tasks {
            tallies.push(task.await.map_err(|e| e.to_string())?);
        }
        let (mut tally, elapsed) = merge(stop.started(), tallies)?;
        tally.statements = statements.load(Ordering::Relaxed);
        Ok((tally, elapsed))
    })
}

/// A connection, set up as the pool sets up its own.
async fn connect(
    url: &str,
    setup: Setup,
    statements: &Arc<AtomicU64>,
) -> Result<AsyncConn, String> {
    prepared(url, setup, statements)
        .await
        .map_err(|e| e.to_string())
}

/// A fresh connection with the backend's settings and the statement counter.
async fn prepared(
    url: &str,
    setup: Setup,
    statements: &Arc<AtomicU64>,
) -> diesel::ConnectionResult<AsyncConn> {
    use diesel_async::SimpleAsyncConnection;
    let mut conn = establish_async(url, setup).await?;
    if !AFTER_CONNECT.is_empty() {
        conn.batch_execute(AFTER_CONNECT)
            .await
            .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))?;
    }
    count_statements(&mut conn, statements);
    Ok(conn)
}

/// A pool of `workers` connections, all connected before the clock starts.
async fn pool(
    url: &str,
    workers: usize,
    setup: Setup,
    statements: &Arc<AtomicU64>,
) -> Result<Pool<AsyncConn>, String> {
    use diesel_async::pooled_connection::{
        AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
    };

    let mut config = ManagerConfig::<AsyncConn>::default();
    if setup.fast_recycle() {
        config.recycling_method = RecyclingMethod::Fast;
    }
    let statements = Arc::clone(statements);
    config.custom_setup = Box::new(move |url| {
        let statements = Arc::clone(&statements);
        Box::pin(async move { prepared(url, setup, &statements).await })
    });
    let manager = AsyncDieselConnectionManager::<AsyncConn>::new_with_config(url, config);
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

/// One task's share of the run.
struct Task {
    pool: Pool<AsyncConn>,
    /// The task's own connection, when the setup's source is `held`.
    held: Option<Held<AsyncConn>>,
    /// The run's combiner, for `occ-combine-async`.
    combiner: Option<Arc<Combiner<Stock>>>,
    stop: Arc<Stop>,
    policy: RetryPolicy,
    setup: Setup,
}

impl Task {
    /// Reservations on random keys until `stop` says so.
    async fn run(self, keys: i32, index: usize) -> (Tally, Instant) {
        let mut rng = fastrand::Rng::with_seed(index as u64 * 7919 + 1);
        let mut tally = Tally::default();
        while self.stop.another() {
            let key = rng.i32(1..=keys);
            let began = Instant::now();
            let result = match (&self.combiner, &self.held) {
                (Some(combiner), _) => occ_combine(combiner, &self.pool, &self.policy, key).await,
                (None, Some(held)) => occ(held, &self.policy, key, self.setup).await,
                (None, None) => occ(&self.pool, &self.policy, key, self.setup).await,
            };
            tally.record(result, began.elapsed());
        }
        (tally, Instant::now())
    }
}

/// One reservation through the run's `asynchronous::Combiner`, with the pool as its
/// source.
async fn occ_combine(
    combiner: &Combiner<Stock>,
    pool: &Pool<AsyncConn>,
    policy: &RetryPolicy,
    key: i32,
) -> Result<OpResult, String> {
    let result = combiner
        .apply(pool, policy, key, |stock: &mut Stock| {
            if stock.available <= 0 {
                return false;
            }
            stock.available -= 1;
            true
        })
        .await;
    Seen::default().finish(result)
}

/// One reservation through the asynchronous retry helper.
async fn occ<S>(pool: &S, policy: &RetryPolicy, key: i32, setup: Setup) -> Result<OpResult, String>
where
    S: AsyncConnectionSource<Connection = AsyncConn>,
{
    use diesel_occ::asynchronous::prelude::*;

    if setup.handwritten {
        return handwritten(pool, policy, key).await;
    }
    if setup.one_task {
        if let Some(op) = occ_in_one_task(pool, policy, key) {
            return op.await;
        }
    }
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

    let (last, conflicts, aborts) = (AtomicU32::new(1), AtomicU32::new(0), AtomicU32::new(0));
    let (last_ref, conflicts_ref, aborts_ref) = (&last, &conflicts, &aborts);
    let result = diesel_occ::asynchronous::retry(pool, policy, async move |conn, attempt| {
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
    Seen {
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
async fn handwritten<S>(source: &S, policy: &RetryPolicy, key: i32) -> Result<OpResult, String>
where
    S: AsyncConnectionSource<Connection = AsyncConn>,
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
            pause(ceiling.mul_f64(fastrand::f64())).await;
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
