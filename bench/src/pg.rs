//! PostgreSQL: `PgConnection` and `AsyncPgConnection`, and the statements the locking
//! strategies write PostgreSQL's way.

use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel_async::AsyncPgConnection;

use crate::model::{Stock, bench_stock};
use crate::strategies::sql::BackendSql;

/// The blocking connection.
pub type Conn = PgConnection;

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

crate::strategies::sql::stock_sql!(PgConnection, AsyncPgConnection, Backend::Postgres, "");
