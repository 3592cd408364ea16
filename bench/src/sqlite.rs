//! SQLite: `SqliteConnection` and `SyncConnectionWrapper<SqliteConnection>`, on a file
//! in WAL mode with a busy timeout, and the statements the locking strategies write
//! SQLite's way.

use std::sync::Arc;

use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_occ::asynchronous::BlockInPlace;
use diesel_occ::retry::RetryPolicy;

use crate::async_support::BoxedOp;
use crate::model::{Stock, bench_stock};
use crate::outcome::Seen;
use crate::strategies::blocking::reserve;
use crate::strategies::sql::{AsyncStockSql, BackendSql};

/// The blocking connection.
pub type Conn = SqliteConnection;
/// The asynchronous connection: its blocking calls run in place (`BlockInPlace`).
pub type AsyncConn = SyncConnectionWrapper<SqliteConnection, BlockInPlace>;

/// Per-connection settings: wait for the write lock instead of failing at once.
pub const PRAGMAS: &str =
    "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; PRAGMA synchronous = NORMAL;";

/// `occ-async` on SQLite: each attempt runs the blocking helper's closure in one
/// blocking call (`asynchronous::retry_in_blocking_task`).
fn occ_in_one_task<'s>(
    pool: &'s <AsyncConn as AsyncStockSql>::Pool,
    policy: &'s RetryPolicy,
    key: i32,
) -> BoxedOp<'s> {
    let seen = Arc::new(Seen::default());
    let inside = Arc::clone(&seen);
    Box::pin(async move {
        let result =
            diesel_occ::asynchronous::retry_in_blocking_task(pool, policy, move |conn, attempt| {
                inside.track(&attempt, reserve(conn, &attempt, key))
            })
            .await;
        seen.finish(result)
    })
}

impl BackendSql for SqliteConnection {
    /// SQLite has no `FOR UPDATE`: a plain read, after
    /// [`pessimistic_transaction`](BackendSql::pessimistic_transaction) took the write
    /// lock.
    fn locked_read(&mut self, key: i32) -> QueryResult<Stock> {
        bench_stock::table
            .find(key)
            .select(Stock::as_select())
            .get_result(self)
    }

    /// `BEGIN IMMEDIATE`: the write lock before the read.
    fn pessimistic_transaction<T>(
        &mut self,
        run: impl FnOnce(&mut Self) -> QueryResult<T>,
    ) -> QueryResult<T> {
        self.immediate_transaction(run)
    }
}

crate::strategies::sql::stock_sql!(SqliteConnection, AsyncConn, Backend::Sqlite, PRAGMAS, {
    fn occ_in_one_task<'s>(
        pool: &'s Self::Pool,
        policy: &'s RetryPolicy,
        key: i32,
    ) -> Option<BoxedOp<'s>> {
        Some(occ_in_one_task(pool, policy, key))
    }
});
