//! SQLite: `SqliteConnection` and `SyncConnectionWrapper<SqliteConnection>`, on a file
//! in WAL mode with a busy timeout, and the statements the locking strategies write
//! SQLite's way.

use std::sync::Arc;

use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_occ::asynchronous::{AsyncConnectionSource, BlockInPlace};
use diesel_occ::retry::RetryPolicy;

use crate::async_support::BoxedOp;
use crate::backend::Backend;
use crate::model::{Stock, bench_stock};
use crate::outcome::Seen;
use crate::strategies::blocking::reserve;
use crate::strategies::database::Database;
use crate::strategies::sql::BackendSql;
use crate::strategy::Strategy;

/// SQLite as a [`Database`].
#[derive(Debug, Clone, Copy)]
pub struct Db;

/// The blocking connection.
pub type Conn = SqliteConnection;
/// The asynchronous connection: its blocking calls run in place (`BlockInPlace`).
pub type AsyncConn = SyncConnectionWrapper<SqliteConnection, BlockInPlace>;

/// Per-connection settings: wait for the write lock instead of failing at once.
pub const PRAGMAS: &str =
    "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; PRAGMA synchronous = NORMAL;";

impl Database for Db {
    const BACKEND: Backend = Backend::Sqlite;
    type Conn = Conn;
    type AsyncConn = AsyncConn;

    /// A blocking connection with [`PRAGMAS`].
    fn connect(url: &str, _strategy: Strategy) -> Result<Conn, String> {
        use diesel::connection::SimpleConnection;
        let mut conn = Conn::establish(url).map_err(|e| e.to_string())?;
        conn.batch_execute(PRAGMAS).map_err(|e| e.to_string())?;
        Ok(conn)
    }

    /// Each attempt runs the blocking helper's closure in one blocking call
    /// (`asynchronous::retry_in_blocking_task`).
    fn occ_in_one_task<'s, S>(
        source: &'s S,
        policy: &'s RetryPolicy,
        key: i32,
    ) -> Option<BoxedOp<'s>>
    where
        S: AsyncConnectionSource<Connection = AsyncConn>,
    {
        let seen = Arc::new(Seen::default());
        let inside = Arc::clone(&seen);
        Some(Box::pin(async move {
            let result = diesel_occ::asynchronous::retry_in_blocking_task(
                source,
                policy,
                move |conn, attempt| inside.track(&attempt, reserve(conn, &attempt, key)),
            )
            .await;
            seen.finish(result)
        }))
    }
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

crate::strategies::sql::stock_sql!(SqliteConnection, AsyncConn, PRAGMAS);
