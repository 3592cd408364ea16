//! The benchmark's own statements on the stock table, written with plain Diesel: the
//! same code on every connection, behind [`StockSql`] (blocking) and [`AsyncStockSql`]
//! (diesel-async), each implemented for every connection that can run its statements.
//! What the backends write their own way is [`BackendSql`], implemented in `pg.rs`,
//! `mysql.rs` and `sqlite.rs`.

use std::future::Future;

use diesel::dsl::{AsSelect, Eq, Filter, Find, Gt, Order, Select, Update, Values};
use diesel::prelude::*;
use diesel::query_builder::IncompleteInsertStatement;
use diesel::query_dsl::LoadQuery;
use diesel::query_dsl::methods::ExecuteDsl;
use diesel_occ::statement::CachedUpdate;

use crate::model::{START, Stock, bench_stock};

/// The row with a key.
pub type ByKey = Find<bench_stock::table, i32>;
/// `SELECT id, available, version ... WHERE id = ?` on backend `DB`.
pub type ReadStock<DB> = Select<ByKey, AsSelect<Stock, DB>>;
/// `SELECT version ... WHERE id = ?`: the token read that classifies a miss.
pub type ReadVersion = Select<ByKey, bench_stock::version>;
/// The row with a key, if it still holds the version that was read.
pub type Unchanged = Filter<ByKey, Eq<bench_stock::version, i32>>;
/// The new stock and version a checked write assigns.
pub type Assign = (
    Eq<bench_stock::available, i32>,
    Eq<bench_stock::version, i32>,
);
/// The row with a key, if it has stock left.
pub type InStock = Filter<ByKey, Gt<bench_stock::available, i32>>;
/// `available - 1, version + 1`, computed by the database.
pub type TakeOne = (
    Eq<bench_stock::available, diesel::dsl::Sub<bench_stock::available, i32>>,
    Eq<bench_stock::version, diesel::dsl::Add<bench_stock::version, i32>>,
);
/// Rows `first ..= last` in key order on backend `DB`.
pub type ReadRange<DB> = Select<
    Order<
        Filter<bench_stock::table, diesel::dsl::Between<bench_stock::id, i32, i32>>,
        bench_stock::id,
    >,
    AsSelect<Stock, DB>,
>;
/// One row of [`StockSql::reset`]'s INSERT.
type NewRow = (
    Eq<bench_stock::id, i32>,
    Eq<bench_stock::available, i32>,
    Eq<bench_stock::version, i32>,
);

/// The benchmark's statements on a blocking connection.
pub trait StockSql: Connection {
    /// The plain read of a row.
    fn read(&mut self, key: i32) -> QueryResult<Stock>;
    /// The row's current version, after a miss (what diesel-occ reads to classify it).
    fn read_version(&mut self, key: i32) -> QueryResult<Option<i32>>;
    /// `UPDATE SET available = ? WHERE id = ?`, prepared once per connection.
    fn write_available(&mut self, key: i32, available: i32) -> QueryResult<usize>;
    /// `UPDATE SET available = ?, version = ? WHERE id = ?`, prepared once.
    fn write(&mut self, stock: &Stock, available: i32) -> QueryResult<usize>;
    /// The checked write, `... WHERE id = ? AND version = ?`, as Diesel's
    /// `update(..).set(..)`: prepared again for every execution.
    fn write_checked(&mut self, stock: &Stock, available: i32) -> QueryResult<usize>;
    /// The same statement as a `CachedUpdate`: prepared once per connection.
    fn write_checked_prepared(&mut self, stock: &Stock, available: i32) -> QueryResult<usize>;
    /// `SET available = available - 1, version = version + 1 WHERE id = ? AND
    /// available > 0`.
    fn take_one(&mut self, key: i32) -> QueryResult<usize>;
    /// Rows `first ..= last`, in key order.
    fn read_range(&mut self, first: i32, last: i32) -> QueryResult<Vec<Stock>>;
    /// Every row's stock.
    fn stock_left(&mut self) -> QueryResult<Vec<i32>>;
    /// Drops and creates the table with `keys` rows of [`START`] stock.
    fn reset(&mut self, keys: i32) -> QueryResult<()>;
    /// Units taken from the table since [`StockSql::reset`].
    fn taken(&mut self, keys: i32) -> QueryResult<i64> {
        let left = self.stock_left()?;
        let start = i64::from(START) * i64::from(keys);
        Ok(start - left.into_iter().map(i64::from).sum::<i64>())
    }
}

impl<C> StockSql for C
where
    C: Connection,
    ReadStock<C::Backend>: LoadQuery<'static, C, Stock>,
    ReadVersion: LoadQuery<'static, C, i32>,
    ReadRange<C::Backend>: LoadQuery<'static, C, Stock>,
    Select<bench_stock::table, bench_stock::available>: LoadQuery<'static, C, i32>,
    CachedUpdate<ByKey, Eq<bench_stock::available, i32>>: ExecuteDsl<C>,
    CachedUpdate<ByKey, Assign>: ExecuteDsl<C>,
    CachedUpdate<Unchanged, Assign>: ExecuteDsl<C>,
    CachedUpdate<InStock, TakeOne>: ExecuteDsl<C>,
    Update<Unchanged, Assign>: ExecuteDsl<C>,
    Values<IncompleteInsertStatement<bench_stock::table>, Vec<NewRow>>: ExecuteDsl<C>,
{
    fn read(&mut self, key: i32) -> QueryResult<Stock> {
        bench_stock::table
            .find(key)
            .select(Stock::as_select())
            .get_result(self)
    }

    fn read_version(&mut self, key: i32) -> QueryResult<Option<i32>> {
        bench_stock::table
            .find(key)
            .select(bench_stock::version)
            .get_result(self)
            .optional()
    }

    fn write_available(&mut self, key: i32, available: i32) -> QueryResult<usize> {
        CachedUpdate::new(
            bench_stock::table.find(key),
            bench_stock::available.eq(available),
        )
        .execute(self)
    }

    fn write(&mut self, stock: &Stock, available: i32) -> QueryResult<usize> {
        CachedUpdate::new(bench_stock::table.find(stock.id), assign(stock, available)).execute(self)
    }

    fn write_checked(&mut self, stock: &Stock, available: i32) -> QueryResult<usize> {
        diesel::update(unchanged(stock))
            .set(assign(stock, available))
            .execute(self)
    }

    fn write_checked_prepared(&mut self, stock: &Stock, available: i32) -> QueryResult<usize> {
        CachedUpdate::new(unchanged(stock), assign(stock, available)).execute(self)
    }

    fn take_one(&mut self, key: i32) -> QueryResult<usize> {
        CachedUpdate::new(
            bench_stock::table
                .find(key)
                .filter(bench_stock::available.gt(0)),
            (
                bench_stock::available.eq(bench_stock::available - 1),
                bench_stock::version.eq(bench_stock::version + 1),
            ),
        )
        .execute(self)
    }

    fn read_range(&mut self, first: i32, last: i32) -> QueryResult<Vec<Stock>> {
        range(first, last).load(self)
    }

    fn stock_left(&mut self) -> QueryResult<Vec<i32>> {
        bench_stock::table.select(bench_stock::available).load(self)
    }

    fn reset(&mut self, keys: i32) -> QueryResult<()> {
        self.batch_execute(
            "DROP TABLE IF EXISTS bench_stock; \
             CREATE TABLE bench_stock (id INTEGER PRIMARY KEY, \
             available INTEGER NOT NULL, version INTEGER NOT NULL)",
        )?;
        let ids: Vec<i32> = (1..=keys).collect();
        for chunk in ids.chunks(1000) {
            let rows: Vec<NewRow> = chunk
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
}

/// The benchmark's statements on a diesel-async connection: those of the hand-written
/// async baseline and of the batch benchmark.
pub trait AsyncStockSql: diesel_async::AsyncConnection {
    /// The plain read of a row.
    fn read(&mut self, key: i32) -> impl Future<Output = QueryResult<Stock>> + Send;
    /// The row's current version, after a miss.
    fn read_version(&mut self, key: i32) -> impl Future<Output = QueryResult<Option<i32>>> + Send;
    /// [`StockSql::write_checked_prepared`].
    fn write_checked_prepared(
        &mut self,
        stock: &Stock,
        available: i32,
    ) -> impl Future<Output = QueryResult<usize>> + Send;
    /// Rows `first ..= last`, in key order.
    fn read_range(
        &mut self,
        first: i32,
        last: i32,
    ) -> impl Future<Output = QueryResult<Vec<Stock>>> + Send;
}

impl<C> AsyncStockSql for C
where
    C: diesel_async::AsyncConnection + Send,
    C::Backend: 'static,
    ReadStock<C::Backend>: diesel_async::methods::LoadQuery<'static, C, Stock> + Send,
    ReadVersion: diesel_async::methods::LoadQuery<'static, C, i32> + Send,
    ReadRange<C::Backend>: diesel_async::methods::LoadQuery<'static, C, Stock> + Send,
    CachedUpdate<Unchanged, Assign>: diesel_async::methods::ExecuteDsl<C> + Send,
{
    fn read(&mut self, key: i32) -> impl Future<Output = QueryResult<Stock>> + Send {
        diesel_async::RunQueryDsl::get_result(
            bench_stock::table.find(key).select(Stock::as_select()),
            self,
        )
    }

    fn read_version(&mut self, key: i32) -> impl Future<Output = QueryResult<Option<i32>>> + Send {
        let read = diesel_async::RunQueryDsl::get_result(
            bench_stock::table.find(key).select(bench_stock::version),
            self,
        );
        async move { read.await.optional() }
    }

    fn write_checked_prepared(
        &mut self,
        stock: &Stock,
        available: i32,
    ) -> impl Future<Output = QueryResult<usize>> + Send {
        diesel_async::RunQueryDsl::execute(
            CachedUpdate::new(unchanged(stock), assign(stock, available)),
            self,
        )
    }

    fn read_range(
        &mut self,
        first: i32,
        last: i32,
    ) -> impl Future<Output = QueryResult<Vec<Stock>>> + Send {
        diesel_async::RunQueryDsl::load(range(first, last), self)
    }
}

/// What a backend writes its own way: the locking strategies' read and transactions.
/// Implemented for each blocking connection in its backend's module.
pub trait BackendSql: Connection {
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
fn unchanged(stock: &Stock) -> Unchanged {
    bench_stock::table
        .find(stock.id)
        .filter(bench_stock::version.eq(stock.version))
}

/// `available` and the next version.
fn assign(stock: &Stock, available: i32) -> Assign {
    (
        bench_stock::available.eq(available),
        bench_stock::version.eq(stock.version.wrapping_add(1)),
    )
}

/// Rows `first ..= last` in key order.
fn range<DB>(first: i32, last: i32) -> ReadRange<DB>
where
    DB: diesel::backend::Backend,
{
    bench_stock::table
        .filter(bench_stock::id.between(first, last))
        .order(bench_stock::id)
        .select(Stock::as_select())
}
