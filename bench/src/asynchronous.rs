//! The asynchronous strategy: diesel-occ's asynchronous `save_checked` inside
//! `asynchronous::retry`, with a deadpool pool as the connection source, on a
//! multi-threaded Tokio runtime.
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
            pub(crate) fn run(
                url: &str,
                workers: usize,
                keys: i32,
                limit: Limit,
                policy: RetryPolicy,
                after_connect: &'static str,
            ) -> Result<(Tally, Duration), String> {
                let threads = std::thread::available_parallelism().map_or(2, usize::from);
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads.min(workers).max(1))
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?;
                runtime.block_on(async move {
                    let pool = pool(url, workers, after_connect).await?;
                    let mut stop = Stop::new(limit);
                    stop.start();
                    let stop = Arc::new(stop);
                    let tasks: Vec<_> = (0..workers)
                        .map(|index| {
                            let (pool, stop) = (pool.clone(), Arc::clone(&stop));
                            let policy = policy.clone();
                            tokio::spawn(worker(pool, stop, policy, keys, index))
                        })
                        .collect();
                    let mut tallies = Vec::with_capacity(workers);
                    for task in tasks {
                        tallies.push(task.await.map_err(|e| e.to_string())?);
                    }
                    crate::harness::merge(stop.started(), tallies)
                })
            }

            /// A pool of `workers` connections, all connected before the clock starts.
            async fn pool(
                url: &str,
                workers: usize,
                after_connect: &'static str,
            ) -> Result<Pool<AsyncConn>, String> {
                use diesel_async::pooled_connection::{
                    AsyncDieselConnectionManager, ManagerConfig,
                };
                use diesel_async::{AsyncConnection, SimpleAsyncConnection};

                let mut config = ManagerConfig::<AsyncConn>::default();
                config.custom_setup = Box::new(move |url| {
                    Box::pin(async move {
                        let mut conn = AsyncConn::establish(url).await?;
                        if !after_connect.is_empty() {
                            conn.batch_execute(after_connect).await.map_err(|e| {
                                diesel::ConnectionError::BadConnection(e.to_string())
                            })?;
                        }
                        Ok(conn)
                    })
                });
                let manager =
                    AsyncDieselConnectionManager::<AsyncConn>::new_with_config(url, config);
                let pool = Pool::builder(manager)
                    .max_size(workers)
                    .build()
                    .map_err(|e| e.to_string())?;
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
                stop: Arc<Stop>,
                policy: RetryPolicy,
                keys: i32,
                index: usize,
            ) -> (Tally, Instant) {
                let mut rng = fastrand::Rng::with_seed(index as u64 * 7919 + 1);
                let mut tally = Tally::default();
                while stop.another() {
                    let key = rng.i32(1..=keys);
                    let began = Instant::now();
                    let result = occ(&pool, &policy, key).await;
                    tally.record(result, began.elapsed());
                }
                (tally, Instant::now())
            }

            /// One reservation through the asynchronous retry helper.
            async fn occ(
                pool: &Pool<AsyncConn>,
                policy: &RetryPolicy,
                key: i32,
            ) -> Result<OpResult, String> {
                use diesel_occ::asynchronous::prelude::*;
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
        }
    };
}

pub(crate) use asynchronous_strategy;
