//! PostgreSQL: `PgConnection` and `AsyncPgConnection`, and the two strategies whose
//! SQL is PostgreSQL's own.

use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel_occ::asynchronous::AsyncConnectionSource;
use diesel_occ::retry::RetryPolicy;

use crate::async_setup::Setup;
use crate::async_support::BoxedOp;
use crate::backend::Backend;
use crate::model::{Stock, bench_stock};
use crate::strategy::Strategy;

// The strategies' files are compiled once per backend module, each time on this
// module's concrete connection types.
#[allow(clippy::duplicate_mod)]
#[path = "strategies/asynchronous.rs"]
pub mod asynchronous;
#[allow(clippy::duplicate_mod)]
#[path = "strategies/batch.rs"]
pub mod batch;
#[allow(clippy::duplicate_mod)]
#[path = "strategies/blocking.rs"]
pub mod blocking;
#[allow(clippy::duplicate_mod)]
#[path = "strategies/database.rs"]
mod database;

/// PostgreSQL as a [`Database`](crate::database::Database).
#[derive(Debug, Clone, Copy)]
pub struct Db;

const BACKEND: Backend = Backend::Postgres;

/// The blocking connection.
pub type Conn = PgConnection;
/// The asynchronous connection.
pub type AsyncConn = diesel_async::AsyncPgConnection;

/// Nothing to set on a new connection.
const AFTER_CONNECT: &str = "";

/// A blocking connection.
pub fn connect(url: &str, _strategy: Strategy) -> Result<Conn, String> {
    Conn::establish(url).map_err(|e| e.to_string())
}

async fn establish_async(url: &str, _setup: Setup) -> ConnectionResult<AsyncConn> {
    <AsyncConn as diesel_async::AsyncConnection>::establish(url).await
}

/// The async closure runs: no blocking task per attempt on a real async connection.
fn occ_in_one_task<'s, S>(_: &'s S, _: &'s RetryPolicy, _: i32) -> Option<BoxedOp<'s>>
where
    S: AsyncConnectionSource<Connection = AsyncConn>,
{
    None
}

/// The pessimistic strategy's read: `SELECT ... FOR UPDATE`.
fn locked_read(conn: &mut Conn, key: i32) -> QueryResult<Stock> {
    bench_stock::table
        .find(key)
        .select(Stock::as_select())
        .for_update()
        .get_result(conn)
}

/// The pessimistic strategy's transaction: a plain one.
fn pessimistic_transaction<T>(
    conn: &mut Conn,
    run: impl FnOnce(&mut Conn) -> QueryResult<T>,
) -> QueryResult<T> {
    conn.transaction(run)
}

/// A SERIALIZABLE transaction: a concurrent writer makes one of two fail with 40001.
fn serializable_transaction<T>(
    conn: &mut Conn,
    run: impl FnOnce(&mut Conn) -> QueryResult<T>,
) -> QueryResult<T> {
    conn.build_transaction().serializable().run(run)
}
