//! The sqlx peer (feature `sqlx`, printed `sqlx`): the reservation a user would write
//! by hand on sqlx 0.9 instead of using diesel-occ. The same two statements as
//! `handwritten-async` (read the row by key; if it has stock, write one unit less and
//! the next version `WHERE id = ? AND version = <read>`), bound, prepared and cached
//! per connection (sqlx's default), retried on a write that matched no row by the same
//! loop ([`retry_misses`]: attempts, jittered backoff). Unlike `occ-async` and
//! `handwritten-async` it reads no token after a miss: a user needs none.
//!
//! It runs as `occ-async` does: one task per worker on the same runtime,
//! a pool (here a `sqlx::Pool`) of as many connections as tasks, connected before the
//! clock starts, a checkout per attempt and no test query at checkout (as the
//! recommended deadpool setup's fast recycle).

use std::future::Future;
use std::time::Duration;

use diesel_occ::retry::RetryPolicy;
use sqlx::mysql::{MySql, MySqlConnectOptions};
use sqlx::pool::PoolOptions;
use sqlx::postgres::{PgConnectOptions, Postgres};
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{Connection, Pool};

use crate::async_support::{AttemptResult, retry_misses};
use crate::backend::Backend;
use crate::harness::{self, OpResult, Reserve, Tally};

/// Runs the peer on `backend`: `workers` tasks sharing a pool of `workers` connections
/// for `duration`. Statements are not counted (sqlx has no cheap hook for them).
pub fn run(
    backend: Backend,
    url: &str,
    workers: usize,
    keys: i32,
    duration: Duration,
    policy: RetryPolicy,
) -> Result<(Tally, Duration), String> {
    match backend {
        Backend::Postgres => run_on::<Postgres>(url, workers, keys, duration, policy),
        Backend::Mysql => run_on::<MySql>(url, workers, keys, duration, policy),
        Backend::Sqlite => run_on::<Sqlite>(url, workers, keys, duration, policy),
    }
}

/// One sqlx driver: how it connects and one attempt of the reservation in its SQL.
trait Peer: sqlx::Database {
    /// The options of `url`, with the settings the bench gives its own connections.
    fn options(url: &str) -> Result<<Self::Connection as Connection>::Options, String>;
    /// One attempt on a connection of `pool`.
    fn attempt(pool: &Pool<Self>, key: i32) -> impl Future<Output = AttemptResult> + Send + '_;
}

/// [`Peer::attempt`] with the driver's two statements. A macro rather than code
/// generic over the driver, which would spell out sqlx's higher-ranked executor and
/// codec bounds for what differs by the placeholders only.
macro_rules! attempt {
    ($read:expr, $write:expr) => {
        fn attempt(pool: &Pool<Self>, key: i32) -> impl Future<Output = AttemptResult> + Send + '_ {
            async move {
                let text = |e: sqlx::Error| e.to_string();
                let mut conn = pool.acquire().await.map_err(text)?;
                let (_id, available, version): (i32, i32, i32) = sqlx::query_as($read)
                    .bind(key)
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(text)?;
                if available <= 0 {
                    return Ok(Some(false));
                }
                let written = sqlx::query($write)
                    .bind(available - 1)
                    .bind(version.wrapping_add(1))
                    .bind(key)
                    .bind(version)
                    .execute(&mut *conn)
                    .await
                    .map_err(text)?
                    .rows_affected();
                Ok((written == 1).then_some(true))
            }
        }
    };
}

/// The read and the conditional UPDATE with `?` placeholders (MySQL and SQLite).
const READ_WITH_QUESTION_MARKS: &str =
    "SELECT id, available, version FROM bench_stock WHERE id = ?";
const WRITE_WITH_QUESTION_MARKS: &str =
    "UPDATE bench_stock SET available = ?, version = ? WHERE id = ? AND version = ?";

impl Peer for Postgres {
    fn options(url: &str) -> Result<PgConnectOptions, String> {
        url.parse().map_err(|e: sqlx::Error| e.to_string())
    }

    attempt!(
        "SELECT id, available, version FROM bench_stock WHERE id = $1",
        "UPDATE bench_stock SET available = $1, version = $2 WHERE id = $3 AND version = $4"
    );
}

impl Peer for MySql {
    fn options(url: &str) -> Result<MySqlConnectOptions, String> {
        url.parse().map_err(|e: sqlx::Error| e.to_string())
    }

    attempt!(READ_WITH_QUESTION_MARKS, WRITE_WITH_QUESTION_MARKS);
}

impl Peer for Sqlite {
    /// The bench's file (its URL is a path, or a `sqlite:` URL) with `sqlite::PRAGMAS`:
    /// WAL, `synchronous = NORMAL`, a busy timeout of 10 s.
    fn options(url: &str) -> Result<SqliteConnectOptions, String> {
        let options = if url.starts_with("sqlite:") {
            url.parse().map_err(|e: sqlx::Error| e.to_string())?
        } else {
            SqliteConnectOptions::new().filename(url)
        };
        Ok(options
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10)))
    }

    attempt!(READ_WITH_QUESTION_MARKS, WRITE_WITH_QUESTION_MARKS);
}

/// [`run`] on one driver.
fn run_on<DB: Peer>(
    url: &str,
    workers: usize,
    keys: i32,
    duration: Duration,
    policy: RetryPolicy,
) -> Result<(Tally, Duration), String> {
    let options = DB::options(url)?;
    harness::runtime(workers)?.block_on(async move {
        let size = u32::try_from(workers).map_err(|e| e.to_string())?;
        let pool = PoolOptions::<DB>::new()
            .max_connections(size)
            .min_connections(size)
            // sqlx pings every connection it hands out unless told not to; the
            // recommended deadpool setup checks only the connection's own state.
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(|e| e.to_string())?;
        let mut warm = Vec::with_capacity(workers);
        for _ in 0..workers {
            warm.push(pool.acquire().await.map_err(|e| e.to_string())?);
        }
        drop(warm);
        let tasks = (0..workers)
            .map(|_| Task {
                pool: pool.clone(),
                policy: policy.clone(),
            })
            .collect();
        let measured = harness::run_tasks(tasks, keys, duration).await;
        pool.close().await;
        measured
    })
}

/// One task's share of the run.
struct Task<DB: Peer> {
    pool: Pool<DB>,
    policy: RetryPolicy,
}

impl<DB: Peer> Reserve for Task<DB> {
    async fn reserve(&mut self, key: i32) -> Result<OpResult, String> {
        let pool = &self.pool;
        retry_misses(&self.policy, || DB::attempt(pool, key)).await
    }
}
