//! The asynchronous strategy (`occ-async`) on a backend's async connection: diesel-occ's
//! asynchronous `save_checked` inside `asynchronous::retry`, set up as
//! `guide::tuning` recommends (`async_setup`): a deadpool pool of as many connections
//! as tasks, on a Tokio runtime; or, with [`Setup::HANDWRITTEN`], the same statements
//! by hand. Generic over the
//! [`Database`], which connects and may run an attempt its own way
//! ([`Database::occ_in_one_task`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use diesel_async::methods::LoadQuery;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, PoolError};
use diesel_occ::asynchronous::{
    AsyncConnectionSource, AsyncLockingConnection, Combinable, Combiner,
};
use diesel_occ::retry::{Attempt, RetryPolicy};

use super::checked::AsyncCheckedStock;
use super::sql::AsyncStockSql;
use crate::async_setup::Setup;
use crate::async_support::{count_statements, retry_misses};
use crate::harness::{Limit, OpResult, Stop, Tally, merge};
use crate::model::Stock;
use crate::outcome::Seen;
use crate::strategies::database::Database;

/// The test query diesel-async's pool and `verify_when_idle` run on a connection.
pub type Ping = diesel::dsl::select<diesel::dsl::AsExprOf<i32, diesel::sql_types::Integer>>;

/// Runs the asynchronous strategy as `setup` says: `workers` tasks sharing a pool of
/// `workers` connections. With `combine`, each reservation goes through
/// `asynchronous::Combiner`. The tally counts the statements the connections started.
pub fn run<D: Database>(
    url: &str,
    workers: usize,
    keys: i32,
    limit: Limit,
    policy: RetryPolicy,
    setup: Setup,
    combine: bool,
) -> Result<(Tally, Duration), String>
where
    Stock: Combinable<D::AsyncConn>,
    AsyncDieselConnectionManager<D::AsyncConn>:
        deadpool::managed::Manager<Type = D::AsyncConn, Error = PoolError>,
    for<'a> Ping: LoadQuery<'a, D::AsyncConn, i32>,
{
    let runtime = Setup::runtime(workers)?;
    let statements = Arc::new(AtomicU64::new(0));
    runtime.block_on(async move {
        let pool = pool::<D>(url, workers, &statements).await?;
        // Shared by every task of the run.
        let combiner = Arc::new(Combiner::<Stock>::new());
        let mut stop = Stop::new(limit);
        stop.start();
        let stop = Arc::new(stop);
        let tasks: Vec<_> = (0..workers)
            .map(|index| {
                let task = Task::<D, _> {
                    pool: pool.clone(),
                    combiner: combine.then(|| Arc::clone(&combiner)),
                    stop: Arc::clone(&stop),
                    policy: policy.clone(),
                    setup,
                    database: std::marker::PhantomData,
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

/// A fresh connection with the backend's settings and the statement counter.
async fn prepared<D: Database>(
    url: &str,
    statements: &Arc<AtomicU64>,
) -> diesel::ConnectionResult<D::AsyncConn> {
    use diesel_async::{AsyncConnection, SimpleAsyncConnection};
    let mut conn = D::AsyncConn::establish(url).await?;
    if !D::AFTER_CONNECT.is_empty() {
        conn.batch_execute(D::AFTER_CONNECT)
            .await
            .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))?;
    }
    count_statements(&mut conn, statements);
    Ok(conn)
}

/// A pool of `workers` connections, all connected before the clock starts.
async fn pool<D: Database>(
    url: &str,
    workers: usize,
    statements: &Arc<AtomicU64>,
) -> Result<Pool<D::AsyncConn>, String>
where
    AsyncDieselConnectionManager<D::AsyncConn>:
        deadpool::managed::Manager<Type = D::AsyncConn, Error = PoolError>,
    for<'a> Ping: LoadQuery<'a, D::AsyncConn, i32>,
{
    use diesel_async::pooled_connection::{ManagerConfig, RecyclingMethod};

    let mut config = ManagerConfig::<D::AsyncConn>::default();
    config.recycling_method = RecyclingMethod::Fast;
    let statements = Arc::clone(statements);
    config.custom_setup = Box::new(move |url| {
        let statements = Arc::clone(&statements);
        Box::pin(async move { prepared::<D>(url, &statements).await })
    });
    let manager = AsyncDieselConnectionManager::<D::AsyncConn>::new_with_config(url, config);
    let mut builder = Pool::builder(manager)
        .queue_mode(deadpool::managed::QueueMode::Lifo)
        .max_size(workers);
    if let Some(idle) = Setup::idle_check(url) {
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
struct Task<D: Database, S> {
    /// The run's pool.
    pool: S,
    /// The run's combiner, for `occ-combine-async`.
    combiner: Option<Arc<Combiner<Stock>>>,
    stop: Arc<Stop>,
    policy: RetryPolicy,
    setup: Setup,
    database: std::marker::PhantomData<fn() -> D>,
}

impl<D, S> Task<D, S>
where
    D: Database,
    S: AsyncConnectionSource<Connection = D::AsyncConn> + Clone + Send + 'static,
    Stock: Combinable<D::AsyncConn>,
{
    /// Reservations on random keys until `stop` says so.
    async fn run(self, keys: i32, index: usize) -> (Tally, Instant) {
        let mut rng = fastrand::Rng::with_seed(index as u64 * 7919 + 1);
        let mut tally = Tally::default();
        while self.stop.another() {
            let key = rng.i32(1..=keys);
            let began = Instant::now();
            let result = match &self.combiner {
                Some(combiner) => occ_combine(combiner, &self.pool, &self.policy, key).await,
                None => occ::<D, _>(&self.pool, &self.policy, key, self.setup).await,
            };
            tally.record(result, began.elapsed());
        }
        (tally, Instant::now())
    }
}

/// One reservation through the run's `asynchronous::Combiner`, with the pool as its
/// source.
async fn occ_combine<S>(
    combiner: &Combiner<Stock>,
    pool: &S,
    policy: &RetryPolicy,
    key: i32,
) -> Result<OpResult, String>
where
    S: AsyncConnectionSource + Clone + Send + 'static,
    S::Connection: AsyncLockingConnection,
    Stock: Combinable<S::Connection>,
{
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
async fn occ<D, S>(
    pool: &S,
    policy: &RetryPolicy,
    key: i32,
    setup: Setup,
) -> Result<OpResult, String>
where
    D: Database,
    S: AsyncConnectionSource<Connection = D::AsyncConn>,
{
    if setup.handwritten {
        return handwritten(pool, policy, key).await;
    }
    if let Some(op) = D::occ_in_one_task(pool, policy, key) {
        return op.await;
    }
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

    let (last, conflicts, aborts) = (AtomicU32::new(1), AtomicU32::new(0), AtomicU32::new(0));
    let (last_ref, conflicts_ref, aborts_ref) = (&last, &conflicts, &aborts);
    let result = diesel_occ::asynchronous::retry(pool, policy, async move |conn, attempt| {
        last_ref.store(attempt.number(), Relaxed);
        let result = reserve(conn, &attempt, key).await;
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

/// One attempt of diesel-occ's reservation: the attempt's read, then a checked save of
/// one unit less; `false` when the row has none left.
async fn reserve<C: AsyncCheckedStock>(
    conn: &mut C,
    attempt: &Attempt,
    key: i32,
) -> Result<bool, diesel_occ::Error> {
    let mut stock = conn.find_in(attempt, key).await?;
    if stock.available <= 0 {
        return Ok(false);
    }
    stock.available -= 1;
    conn.save_stock(&mut stock).await?;
    Ok(true)
}

/// The blocking `handwritten-prepared` on diesel-async (`handwritten-async`): a checkout per attempt as the helper makes, the same
/// read, the same conditional UPDATE prepared once, on a miss the same token
/// read, and the same backoff; what is left between it and `occ-async` is
/// the library's own cost in async code.
async fn handwritten<S>(source: &S, policy: &RetryPolicy, key: i32) -> Result<OpResult, String>
where
    S: AsyncConnectionSource,
    S::Connection: AsyncStockSql,
{
    retry_misses(policy, || async move {
        let mut conn = source.checkout().await.map_err(|e| e.to_string())?;
        let conn = &mut *conn;
        let stock = conn.read(key).await.map_err(|e| e.to_string())?;
        if stock.available <= 0 {
            return Ok(Some(false));
        }
        let written = conn
            .write_checked_prepared(&stock, stock.available - 1)
            .await
            .map_err(|e| e.to_string())?;
        if written == 1 {
            return Ok(Some(true));
        }
        conn.read_version(key).await.map_err(|e| e.to_string())?;
        Ok(None)
    })
    .await
}
