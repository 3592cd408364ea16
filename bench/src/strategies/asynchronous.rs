//! The asynchronous strategies on a backend's async connection, set up as
//! `diesel_occ::guide::tuning` recommends: a Tokio multi-threaded runtime
//! ([`harness::runtime`](crate::harness::runtime)), a LIFO deadpool pool of as many
//! connections as tasks with the fast recycle check (and on MySQL `verify_when_idle`).
//! `occ-async` is diesel-occ's asynchronous `save_checked` inside
//! `asynchronous::retry` (or the backend's own way, [`AsyncStockSql::occ_in_one_task`]),
//! `occ-combine-async` its `asynchronous::Combiner`, `handwritten-async` the same
//! statements by hand. How that setup was chosen is in bench/results/method.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use diesel_async::methods::LoadQuery;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolError, PoolableConnection, RecyclingMethod,
};
use diesel_occ::asynchronous::{AsyncConnectionSource, AsyncLockingConnection, Combiner};
use diesel_occ::retry::{Attempt, RetryPolicy};

use super::sql::{AsyncStockSql, StockSql};
use crate::async_support::{count_statements, retry_misses};
use crate::harness::{self, OpResult, Reserve, Tally};
use crate::model::Stock;
use crate::outcome::Seen;
use crate::strategy::Strategy;

/// The test query diesel-async's pool and `verify_when_idle` run on a connection.
pub type Ping = diesel::dsl::select<diesel::dsl::AsExprOf<i32, diesel::sql_types::Integer>>;

/// Runs an asynchronous `strategy`: `workers` tasks sharing a pool of `workers`
/// connections, for `duration`. The tally counts the statements the connections started.
pub fn run<D: StockSql>(
    url: &str,
    workers: usize,
    keys: i32,
    duration: Duration,
    policy: RetryPolicy,
    strategy: Strategy,
) -> Result<(Tally, Duration), String> {
    let statements = Arc::new(AtomicU64::new(0));
    harness::runtime(workers)?.block_on(async {
        let pool = D::Async::pool(url, workers, Arc::clone(&statements)).await?;
        // Shared by every task of the run.
        let combiner = Arc::new(Combiner::<Stock>::new());
        let tasks = (0..workers)
            .map(|_| Task::<D> {
                pool: pool.clone(),
                combiner: Arc::clone(&combiner),
                policy: policy.clone(),
                strategy,
            })
            .collect();
        let (mut tally, elapsed) = harness::run_tasks(tasks, keys, duration).await?;
        tally.statements = statements.load(Ordering::Relaxed);
        Ok((tally, elapsed))
    })
}

/// A fresh connection that has run the backend's first statements and, when given a
/// counter, counts its statements into it.
pub async fn connect<C: AsyncStockSql>(
    url: &str,
    statements: Option<&Arc<AtomicU64>>,
) -> diesel::ConnectionResult<C> {
    let mut conn = C::establish(url).await?;
    if !C::AFTER_CONNECT.is_empty() {
        conn.batch_execute(C::AFTER_CONNECT)
            .await
            .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))?;
    }
    if let Some(statements) = statements {
        count_statements(&mut conn, statements);
    }
    Ok(conn)
}

/// A pool of `size` connections, all connected before the clock starts
/// ([`AsyncStockSql::pool`] on a concrete connection).
pub async fn pool<C>(url: &str, size: usize, statements: Arc<AtomicU64>) -> Result<Pool<C>, String>
where
    C: AsyncStockSql + PoolableConnection,
    AsyncDieselConnectionManager<C>: deadpool::managed::Manager<Type = C, Error = PoolError>,
    for<'a> Ping: LoadQuery<'a, C, i32>,
{
    let mut config = ManagerConfig::<C>::default();
    config.recycling_method = RecyclingMethod::Fast;
    config.custom_setup = Box::new(move |url| {
        let statements = Arc::clone(&statements);
        Box::pin(async move { connect::<C>(url, Some(&statements)).await })
    });
    let manager = AsyncDieselConnectionManager::<C>::new_with_config(url, config);
    let mut builder = Pool::builder(manager)
        .queue_mode(deadpool::managed::QueueMode::Lifo)
        .max_size(size);
    // On MySQL nothing else sees a connection the server closed.
    if url.starts_with("mysql:") {
        let idle = Duration::from_millis(500);
        builder = builder.pre_recycle(diesel_occ::asynchronous::verify_when_idle(idle));
    }
    let pool = builder.build().map_err(|e| e.to_string())?;
    let mut warm = Vec::with_capacity(size);
    for _ in 0..size {
        warm.push(pool.get().await.map_err(|e| e.to_string())?);
    }
    drop(warm);
    Ok(pool)
}

/// One task's share of the run.
struct Task<D: StockSql> {
    pool: <D::Async as AsyncStockSql>::Pool,
    /// The run's combiner, for `occ-combine-async`.
    combiner: Arc<Combiner<Stock>>,
    policy: RetryPolicy,
    strategy: Strategy,
}

impl<D: StockSql> Reserve for Task<D> {
    async fn reserve(&mut self, key: i32) -> Result<OpResult, String> {
        let (pool, policy) = (&self.pool, &self.policy);
        match self.strategy {
            Strategy::HandwrittenAsynchronous => handwritten(pool, policy, key).await,
            Strategy::OccCombineAsynchronous => {
                let result = D::Async::combine(&self.combiner, pool, policy, key).await;
                Seen::default().finish(result)
            }
            _ => match D::Async::occ_in_one_task(pool, policy, key) {
                Some(op) => op.await,
                None => occ(pool, policy, key).await,
            },
        }
    }
}

/// One reservation through the asynchronous retry helper.
async fn occ<S>(pool: &S, policy: &RetryPolicy, key: i32) -> Result<OpResult, String>
where
    S: AsyncConnectionSource,
    S::Connection: AsyncLockingConnection + AsyncStockSql,
{
    let seen = Seen::default();
    let seen_ref = &seen;
    let result = diesel_occ::asynchronous::retry(pool, policy, async move |conn, attempt| {
        seen_ref.track(&attempt, reserve(conn, &attempt, key).await)
    })
    .await;
    seen.finish(result)
}

/// One attempt of diesel-occ's reservation: the attempt's read, then a checked save of
/// one unit less; `false` when the row has none left.
async fn reserve<C: AsyncStockSql>(
    conn: &mut C,
    attempt: &Attempt,
    key: i32,
) -> Result<bool, diesel_occ::Error> {
    let mut stock = conn.find_in(attempt, key).await?;
    if !stock.take_one() {
        return Ok(false);
    }
    conn.save_stock(&mut stock).await?;
    Ok(true)
}

/// The blocking `handwritten-prepared` on diesel-async (`handwritten-async`): a checkout
/// per attempt as the helper makes, the same read, the same conditional UPDATE prepared
/// once, on a miss the same token read, and the same backoff; what is left between it
/// and `occ-async` is the library's own cost in async code.
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
            .write_checked(&stock, stock.available - 1)
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
