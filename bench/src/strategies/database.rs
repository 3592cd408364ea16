//! [`Database`]: how the benchmarks connect to one backend, so that the code above it
//! (the strategies, the binaries' runs) is generic over the backend and chooses it in
//! one `match` ([`for_backend!`](crate::for_backend)).

use diesel_occ::asynchronous::{AsyncConnectionSource, AsyncLockingConnection};
use diesel_occ::blocking::LockingConnection;
use diesel_occ::retry::RetryPolicy;

use crate::async_support::BoxedOp;
use crate::backend::Backend;
use crate::strategies::sql::{AsyncStockSql, BackendSql, StockSql};
use crate::strategy::Strategy;

/// One backend's connections (`pg::Db`, `mysql::Db`, `sqlite::Db`).
pub trait Database: 'static {
    /// Which backend this is.
    const BACKEND: Backend;
    /// Its blocking connection.
    type Conn: LockingConnection + StockSql + BackendSql + Send + 'static;
    /// Its asynchronous connection.
    type AsyncConn: AsyncLockingConnection + AsyncStockSql + Send;

    /// A connection for `strategy` (MySQL's serializable strategy sets its isolation).
    fn connect(url: &str, strategy: Strategy) -> Result<Self::Conn, String>;

    /// A reservation on `source` run another way than the async closure, when the
    /// backend has one (SQLite: each attempt in one blocking task); `None` runs the
    /// closure.
    fn occ_in_one_task<'s, S>(
        _source: &'s S,
        _policy: &'s RetryPolicy,
        _key: i32,
    ) -> Option<BoxedOp<'s>>
    where
        S: AsyncConnectionSource<Connection = Self::AsyncConn>,
    {
        None
    }
}
