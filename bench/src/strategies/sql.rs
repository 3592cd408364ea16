//! The benchmark's statements on the stock table, written with plain Diesel, and
//! diesel-occ's checked operations on a [`Stock`]: [`StockSql`] on a blocking
//! connection and [`AsyncStockSql`] on a diesel-async one, implemented for each
//! backend's pair of connections by one `stock_sql!` call in its module. What a backend
//! writes its own way is [`BackendSql`], implemented in `pg.rs`, `mysql.rs` and
//! `sqlite.rs`.
//!
//! Why a macro: the rest of the strategies is generic over the connection, but these
//! calls carry bounds that code generic over the connection would have to spell out
//! for each statement: Diesel's on every query's type (`LoadQuery`, `ExecuteDsl`),
//! diesel-occ's on the entity's hidden statement types (`<Stock as
//! Versioned>::UpdateStatement: GuardedUpdate<C, _>`, and for a locking read
//! `C::Backend: LockingBackend`, which it cannot name with public items), and
//! `BatchDsl`, `Combinable` and diesel-async's pool manager on every caller. On a
//! concrete connection they hold without being written.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use diesel::QueryResult;
use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::asynchronous::{AsyncConnectionSource, AsyncLockingConnection};
use diesel_occ::blocking::LockingConnection;
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::{asynchronous, blocking};

use crate::async_support::BoxedOp;
use crate::backend::Backend;
use crate::harness::Held;
use crate::model::{Stock, bench_stock};
use crate::strategy::Strategy;

/// A backend's blocking connection: how it connects, its async twin, the benchmark's
/// statements and diesel-occ's checked operations on it. The code generic over the
/// backend is generic over this, and chooses it in one `match`
/// ([`for_backend!`](crate::for_backend)).
pub trait StockSql: LockingConnection + BackendSql + Sized + Send + 'static {
    /// Which backend this is.
    const BACKEND: Backend;
    /// The same backend's asynchronous connection.
    type Async: AsyncLockingConnection + AsyncStockSql + Send;
    /// A connection that has run the backend's first statements
    /// ([`AsyncStockSql::AFTER_CONNECT`]), for `strategy` (the serializable strategy's
    /// session may need its isolation set, [`BackendSql::SERIALIZABLE_SESSION`]).
    fn connect(url: &str, strategy: Strategy) -> Result<Self, String>;
    /// The plain read of a row.
    fn read(&mut self, key: i32) -> QueryResult<Stock>;
    /// The row's current version, after a miss (what diesel-occ reads to classify it).
    fn read_version(&mut self, key: i32) -> QueryResult<Option<i32>>;
    /// `UPDATE SET available = ? WHERE id = ?`, prepared once per connection.
    fn write_available(&mut self, key: i32, available: i32) -> QueryResult<usize>;
    /// `UPDATE SET available = ?, version = ? WHERE id = ?`, prepared once.
    fn write(&mut self, stock: &Stock, available: i32) -> QueryResult<usize>;
    /// The checked write, `... WHERE id = ? AND version = ?`: as a `CachedUpdate`,
    /// prepared once per connection, when `prepared`; else as Diesel's
    /// `update(..).set(..)`, prepared again for every execution.
    fn write_checked(
        &mut self,
        stock: &Stock,
        available: i32,
        prepared: bool,
    ) -> QueryResult<usize>;
    /// `SET available = available - 1, version = version + 1 WHERE id = ? AND
    /// available > 0`.
    fn take_one(&mut self, key: i32) -> QueryResult<usize>;
    /// Rows `first ..= last`, in key order.
    fn read_range(&mut self, first: i32, last: i32) -> QueryResult<Vec<Stock>>;
    /// Drops and creates the table with `keys` rows of [`START`](crate::model::START)
    /// stock.
    fn reset(&mut self, keys: i32) -> QueryResult<()>;
    /// Units taken from the table since [`StockSql::reset`].
    fn taken(&mut self, keys: i32) -> QueryResult<i64>;
    /// `EntityDsl::find`.
    fn find_stock(&mut self, key: i32) -> Result<Stock, Error>;
    /// `AttemptDsl::find`: a locking read when the attempt escalates.
    fn find_in(&mut self, attempt: &Attempt, key: i32) -> Result<Stock, Error>;
    /// `CheckedDsl::save_checked`.
    fn save_stock(&mut self, stock: &mut Stock) -> Result<(), Error>;
    /// `BatchDsl::save_all_checked`.
    fn save_all(&mut self, stocks: &mut [Stock]) -> Result<(), Error>;
    /// One reservation ([`Stock::take_one`]) through `combiner`, with the worker's
    /// connection as its source.
    fn combine(
        held: &Held<Self>,
        combiner: &blocking::Combiner<Stock>,
        policy: &RetryPolicy,
        key: i32,
    ) -> Result<bool, Error>;
}

/// The same on a diesel-async connection (those of the hand-written async baseline and
/// of the async strategies), and its deadpool pool.
pub trait AsyncStockSql: diesel_async::AsyncConnection + 'static {
    /// Statements every new connection runs first (SQLite's pragmas).
    const AFTER_CONNECT: &'static str;
    /// Its deadpool pool, `Pool<Self>`.
    type Pool: AsyncConnectionSource<Connection = Self> + Clone + Send + Sync + 'static;
    /// The plain read of a row.
    fn read(&mut self, key: i32) -> impl Future<Output = QueryResult<Stock>> + Send;
    /// The row's current version, after a miss.
    fn read_version(&mut self, key: i32) -> impl Future<Output = QueryResult<Option<i32>>> + Send;
    /// [`StockSql::write_checked`], prepared once.
    fn write_checked(
        &mut self,
        stock: &Stock,
        available: i32,
    ) -> impl Future<Output = QueryResult<usize>> + Send;
    /// `asynchronous::AttemptDsl::find`.
    fn find_in(
        &mut self,
        attempt: &Attempt,
        key: i32,
    ) -> impl Future<Output = Result<Stock, Error>> + Send;
    /// `asynchronous::CheckedDsl::save_checked`.
    fn save_stock(&mut self, stock: &mut Stock) -> impl Future<Output = Result<(), Error>> + Send;
    /// `asynchronous::BatchDsl::save_all_checked`.
    fn save_all(&mut self, stocks: &mut [Stock]) -> impl Future<Output = Result<(), Error>> + Send;
    /// One reservation ([`Stock::take_one`]) through `combiner`, with `pool` as its
    /// source.
    fn combine<'a>(
        combiner: &'a asynchronous::Combiner<Stock>,
        pool: &'a Self::Pool,
        policy: &'a RetryPolicy,
        key: i32,
    ) -> impl Future<Output = Result<bool, Error>> + Send + 'a;
    /// `strategies::asynchronous::pool`: `size` connections counting their statements
    /// into `statements`.
    fn pool(
        url: &str,
        size: usize,
        statements: Arc<AtomicU64>,
    ) -> impl Future<Output = Result<Self::Pool, String>> + Send + '_;
    /// A reservation on `pool` run another way than the async closure, when the backend
    /// has one (SQLite: each attempt in one blocking task); `None` runs the closure.
    fn occ_in_one_task<'s>(
        _pool: &'s Self::Pool,
        _policy: &'s RetryPolicy,
        _key: i32,
    ) -> Option<BoxedOp<'s>> {
        None
    }
}

/// What a backend writes its own way: the locking strategies' read and transactions.
/// Implemented for each blocking connection in its backend's module.
pub trait BackendSql: Connection {
    /// What a serializable strategy's connection runs first: nothing unless the backend
    /// says.
    const SERIALIZABLE_SESSION: &'static str = "";
    /// The pessimistic strategy's read: `SELECT ... FOR UPDATE` where the backend has
    /// it.
    fn locked_read(&mut self, key: i32) -> QueryResult<Stock>;
    /// The pessimistic strategy's transaction: a plain one unless the backend says.
    fn pessimistic_transaction<T>(
        &mut self,
        run: impl FnOnce(&mut Self) -> QueryResult<T>,
    ) -> QueryResult<T> {
        self.transaction(run)
    }
    /// A transaction at SERIALIZABLE, as the backend runs one: a plain transaction
    /// where the level is the connection's (MySQL's serializable connections, SQLite).
    fn serializable_transaction<T>(
        &mut self,
        run: impl FnOnce(&mut Self) -> QueryResult<T>,
    ) -> QueryResult<T> {
        self.transaction(run)
    }
}

/// The row with the stock's key, if it still holds the version that was read.
pub(crate) fn unchanged(
    stock: &Stock,
) -> diesel::dsl::Filter<
    diesel::dsl::Find<bench_stock::table, i32>,
    diesel::dsl::Eq<bench_stock::version, i32>,
> {
    bench_stock::table
        .find(stock.id)
        .filter(bench_stock::version.eq(stock.version))
}

/// `available` and the next version.
pub(crate) fn assign(
    stock: &Stock,
    available: i32,
) -> (
    diesel::dsl::Eq<bench_stock::available, i32>,
    diesel::dsl::Eq<bench_stock::version, i32>,
) {
    (
        bench_stock::available.eq(available),
        bench_stock::version.eq(stock.version.wrapping_add(1)),
    )
}

/// Implements [`StockSql`] for a blocking connection type of `$backend` and
/// [`AsyncStockSql`] for its async twin, whose new connections first run
/// `$after_connect`, and which has the items `$own` of its own: each checked operation
/// is the diesel-occ call of the same name.
macro_rules! stock_sql {
    ($blocking:ty, $asynchronous:ty, $backend:expr, $after_connect:expr $(, { $($own:item)* })?) => {
        const _: () = {
            use diesel::connection::SimpleConnection;
            use diesel::prelude::*;
            use diesel_occ::retry::{Attempt, RetryPolicy};
            use diesel_occ::statement::CachedUpdate;
            use diesel_occ::{Error, asynchronous, blocking};
            use std::future::Future;

            use crate::backend::Backend;
            use crate::harness::Held;
            use crate::model::{START, Stock, bench_stock};
            use crate::strategies::sql::{AsyncStockSql, BackendSql, StockSql, assign, unchanged};
            use crate::strategy::Strategy;

            impl StockSql for $blocking {
                const BACKEND: Backend = $backend;
                type Async = $asynchronous;

                fn connect(url: &str, strategy: Strategy) -> Result<Self, String> {
                    let mut conn = Self::establish(url).map_err(|e| e.to_string())?;
                    let serializable = strategy == Strategy::Serializable;
                    let session = if serializable { Self::SERIALIZABLE_SESSION } else { "" };
                    for sql in [$after_connect, session] {
                        if !sql.is_empty() {
                            conn.batch_execute(sql).map_err(|e| e.to_string())?;
                        }
                    }
                    Ok(conn)
                }

                fn read(&mut self, key: i32) -> QueryResult<Stock> {
                    bench_stock::table
                        .find(key)
                        .select(Stock::as_select())
                        .get_result(self)
                }

                fn read_version(&mut self, key: i32) -> QueryResult<Option<i32>> {
                    let version = bench_stock::table.find(key).select(bench_stock::version);
                    version.get_result(self).optional()
                }

                fn write_available(&mut self, key: i32, available: i32) -> QueryResult<usize> {
                    let changes = bench_stock::available.eq(available);
                    CachedUpdate::new(bench_stock::table.find(key), changes).execute(self)
                }

                fn write(&mut self, stock: &Stock, available: i32) -> QueryResult<usize> {
                    let target = bench_stock::table.find(stock.id);
                    CachedUpdate::new(target, assign(stock, available)).execute(self)
                }

                fn write_checked(
                    &mut self,
                    stock: &Stock,
                    available: i32,
                    prepared: bool,
                ) -> QueryResult<usize> {
                    let (target, changes) = (unchanged(stock), assign(stock, available));
                    if prepared {
                        CachedUpdate::new(target, changes).execute(self)
                    } else {
                        diesel::update(target).set(changes).execute(self)
                    }
                }

                fn take_one(&mut self, key: i32) -> QueryResult<usize> {
                    let target = bench_stock::table
                        .find(key)
                        .filter(bench_stock::available.gt(0));
                    let changes = (
                        bench_stock::available.eq(bench_stock::available - 1),
                        bench_stock::version.eq(bench_stock::version + 1),
                    );
                    CachedUpdate::new(target, changes).execute(self)
                }

                fn read_range(&mut self, first: i32, last: i32) -> QueryResult<Vec<Stock>> {
                    bench_stock::table
                        .filter(bench_stock::id.between(first, last))
                        .order(bench_stock::id)
                        .select(Stock::as_select())
                        .load(self)
                }

                fn reset(&mut self, keys: i32) -> QueryResult<()> {
                    self.batch_execute(
                        "DROP TABLE IF EXISTS bench_stock; \
                         CREATE TABLE bench_stock (id INTEGER PRIMARY KEY, \
                         available INTEGER NOT NULL, version INTEGER NOT NULL)",
                    )?;
                    let ids: Vec<i32> = (1..=keys).collect();
                    for chunk in ids.chunks(1000) {
                        let rows: Vec<_> = chunk
                            .iter()
                            .map(|&id| {
                                (
                                    bench_stock::id.eq(id),
                                    bench_stock::available.eq(START),
                                    bench_stock::version.eq(1),
                                )
                            })
                            .collect();
                        diesel::insert_into(bench_stock::table)
                            .values(rows)
                            .execute(self)?;
                    }
                    Ok(())
                }

                fn taken(&mut self, keys: i32) -> QueryResult<i64> {
                    let left: Vec<i32> = bench_stock::table
                        .select(bench_stock::available)
                        .load(self)?;
                    let start = i64::from(START) * i64::from(keys);
                    Ok(start - left.into_iter().map(i64::from).sum::<i64>())
                }

                fn find_stock(&mut self, key: i32) -> Result<Stock, Error> {
                    <Stock as blocking::EntityDsl<Self>>::find(self, key)
                }

                fn find_in(&mut self, attempt: &Attempt, key: i32) -> Result<Stock, Error> {
                    blocking::AttemptDsl::find(attempt, self, key)
                }

                fn save_stock(&mut self, stock: &mut Stock) -> Result<(), Error> {
                    blocking::CheckedDsl::save_checked(stock, self)
                }

                fn save_all(&mut self, stocks: &mut [Stock]) -> Result<(), Error> {
                    blocking::BatchDsl::save_all_checked(stocks, self)
                }

                fn combine(
                    held: &Held<Self>,
                    combiner: &blocking::Combiner<Stock>,
                    policy: &RetryPolicy,
                    key: i32,
                ) -> Result<bool, Error> {
                    combiner.apply(held, policy, key, Stock::take_one)
                }
            }

            impl AsyncStockSql for $asynchronous {
                const AFTER_CONNECT: &'static str = $after_connect;
                type Pool = diesel_async::pooled_connection::deadpool::Pool<Self>;

                fn read(&mut self, key: i32) -> impl Future<Output = QueryResult<Stock>> + Send {
                    let read = bench_stock::table.find(key).select(Stock::as_select());
                    diesel_async::RunQueryDsl::get_result(read, self)
                }

                fn read_version(
                    &mut self,
                    key: i32,
                ) -> impl Future<Output = QueryResult<Option<i32>>> + Send {
                    let version = bench_stock::table.find(key).select(bench_stock::version);
                    let read = diesel_async::RunQueryDsl::get_result(version, self);
                    async move { read.await.optional() }
                }

                fn write_checked(
                    &mut self,
                    stock: &Stock,
                    available: i32,
                ) -> impl Future<Output = QueryResult<usize>> + Send {
                    let update = CachedUpdate::new(unchanged(stock), assign(stock, available));
                    diesel_async::RunQueryDsl::execute(update, self)
                }

                fn find_in(
                    &mut self,
                    attempt: &Attempt,
                    key: i32,
                ) -> impl Future<Output = Result<Stock, Error>> + Send {
                    asynchronous::AttemptDsl::find(attempt, self, key)
                }

                fn save_stock(
                    &mut self,
                    stock: &mut Stock,
                ) -> impl Future<Output = Result<(), Error>> + Send {
                    asynchronous::CheckedDsl::save_checked(stock, self)
                }

                fn save_all(
                    &mut self,
                    stocks: &mut [Stock],
                ) -> impl Future<Output = Result<(), Error>> + Send {
                    asynchronous::BatchDsl::save_all_checked(stocks, self)
                }

                fn combine<'a>(
                    combiner: &'a asynchronous::Combiner<Stock>,
                    pool: &'a Self::Pool,
                    policy: &'a RetryPolicy,
                    key: i32,
                ) -> impl Future<Output = Result<bool, Error>> + Send + 'a {
                    combiner.apply(pool, policy, key, Stock::take_one)
                }

                fn pool(
                    url: &str,
                    size: usize,
                    statements: std::sync::Arc<std::sync::atomic::AtomicU64>,
                ) -> impl Future<Output = Result<Self::Pool, String>> + Send + '_ {
                    crate::strategies::asynchronous::pool::<Self>(url, size, statements)
                }

                $($($own)*)?
            }
        };
    };
}
pub(crate) use stock_sql;
