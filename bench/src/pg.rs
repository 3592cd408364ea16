//! PostgreSQL: `PgConnection` and `AsyncPgConnection`, and the statements the locking
//! strategies write PostgreSQL's way.

use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel_async::AsyncPgConnection;

use crate::backend::Backend;
use crate::model::{Stock, bench_stock};
use crate::strategies::database::Database;
use crate::strategies::sql::BackendSql;
use crate::strategy::Strategy;

/// PostgreSQL as a [`Database`].
#[derive(Debug, Clone, Copy)]
pub struct Db;

/// The blocking connection.
pub type Conn = PgConnection;

impl Database for Db {
    const BACKEND: Backend = Backend::Postgres;
    type Conn = PgConnection;
    type AsyncConn = AsyncPgConnection;

    fn connect(url: &str, _strategy: Strategy) -> Result<PgConnection, String> {
        PgConnection::establish(url).map_err(|e| e.to_string())
    }
}

impl BackendSql for PgConnection {
    /// `SELECT ... FOR UPDATE`.
    fn locked_read(&mut self, key: i32) -> QueryResult<Stock> {
        bench_stock::table
            .find(key)
            .select(Stock::as_select())
            .for_update()
            .get_result(self)
    }

    /// A concurrent writer makes one of two fail with 40001.
    fn serializable_transaction<T>(
        &mut self,
        run: impl FnOnce(&mut Self) -> QueryResult<T>,
    ) -> QueryResult<T> {
        self.build_transaction().serializable().run(run)
    }
}

crate::strategies::sql::stock_sql!(PgConnection, AsyncPgConnection, "");
