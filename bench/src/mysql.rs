//! MySQL/MariaDB (feature `mysql`): `MysqlConnection` and `AsyncMysqlConnection`, and
//! the statements the locking strategies write MySQL's way.

use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel_async::AsyncMysqlConnection;

use crate::model::{Stock, bench_stock};
use crate::strategies::sql::BackendSql;

/// The blocking connection.
pub type Conn = MysqlConnection;

impl BackendSql for MysqlConnection {
    /// The serializable strategy's connections run at SERIALIZABLE (InnoDB then reads
    /// with shared locks, and concurrent writers deadlock; the loop retries error 1213).
    const SERIALIZABLE_SESSION: &'static str =
        "SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE";

    /// `SELECT ... FOR UPDATE`.
    fn locked_read(&mut self, key: i32) -> QueryResult<Stock> {
        bench_stock::table
            .find(key)
            .select(Stock::as_select())
            .for_update()
            .get_result(self)
    }
}

crate::strategies::sql::stock_sql!(MysqlConnection, AsyncMysqlConnection, Backend::Mysql, "");
