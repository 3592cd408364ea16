//! [`Database`]: what the benchmarks run on one backend, so that the code above it is
//! generic over the backend and chooses it in one `match`.

use std::time::Duration;

use diesel::QueryResult;
use diesel_occ::blocking::Combiner;
use diesel_occ::retry::RetryPolicy;

use crate::async_setup::Setup;
use crate::backend::Backend;
use crate::harness::{Held, Limit, OpResult, Tally, Worker};
use crate::measures::{BatchMeasured, Counted, Side, Statements};
use crate::model::Stock;
use crate::strategy::Strategy;

/// One backend's connections and its strategies' code (`pg::Pg`, `mysql::Mysql`,
/// `sqlite::Sqlite`).
pub trait Database {
    /// Which backend this is.
    const BACKEND: Backend;
    /// Its blocking connection.
    type Conn: diesel::Connection + Send + 'static;

    /// A connection for `strategy` (MySQL's serializable strategy sets its isolation).
    fn connect(url: &str, strategy: Strategy) -> Result<Self::Conn, String>;
    /// Drops and creates the table with `keys` rows of stock.
    fn reset(conn: &mut Self::Conn, keys: i32) -> QueryResult<()>;
    /// Units taken from the table since [`Database::reset`].
    fn taken(conn: &mut Self::Conn, keys: i32) -> QueryResult<i64>;
    /// One reservation with a blocking `strategy`; `combiner` is the run's.
    fn op(
        strategy: Strategy,
        held: &Held<Self::Conn>,
        worker: &mut Worker,
        key: i32,
        combiner: &Combiner<Stock>,
    ) -> Result<OpResult, String>;
    /// A run of the asynchronous strategy (`occ-async`, or `occ-combine-async` with
    /// `combine`) as `setup` says.
    fn run_asynchronous(
        url: &str,
        workers: usize,
        keys: i32,
        limit: Limit,
        policy: RetryPolicy,
        setup: Setup,
        combine: bool,
    ) -> Result<(Tally, Duration), String>;
    /// The statements of `saves` successful saves, diesel-occ's and hand-written.
    fn statements(conn: &mut Self::Conn, saves: i32) -> Result<Statements, String>;
    /// One blocking run of the batch benchmark.
    fn batch_blocking(
        url: &str,
        side: Side,
        size: usize,
        workers: usize,
        duration: Duration,
    ) -> Result<BatchMeasured, String>;
    /// One async run of the batch benchmark.
    fn batch_asynchronous(
        url: &str,
        side: Side,
        size: usize,
        workers: usize,
        duration: Duration,
    ) -> Result<BatchMeasured, String>;
    /// The statements of 100 blocking single saves and of one batch of 100.
    fn count_blocking(url: &str) -> Result<Counted, String>;
    /// The same, async.
    fn count_asynchronous(url: &str) -> Result<Counted, String>;
}
