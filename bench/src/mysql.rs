//! MySQL/MariaDB (feature `mysql`): `MysqlConnection` and `AsyncMysqlConnection`, and
//! the statements the locking strategies write MySQL's way.

use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel_async::AsyncMysqlConnection;

use crate::backend::Backend;
use crate::model::{Stock, bench_stock};
use crate::strategies::database::Database;
use crate::strategies::sql::BackendSql;
use crate::strategy::Strategy;

/// MySQL/MariaDB as a [`Database`].
#[derive(Debug, Clone, Copy)]
pub struct Db;

/// The blocking connection.
pub type Conn = MysqlConnection;

impl Database for Db {
    const BACKEND: Backend = Backend::Mysql;
    type Conn = MysqlConnection;
    type AsyncConn = AsyncMysqlConnection;

    /// The serializable strategy's connections run at SERIALIZABLE (InnoDB then reads
    /// with shared locks, and concurrent writers deadlock; the loop retries error 1213).
    fn connect(url: &str, strategy: Strategy) -> Result<MysqlConnection, String> {
        let mut conn = MysqlConnection::establish(url).map_err(|e| e.to_string())?;
        if strategy == Strategy::Serializable {
            diesel::sql_query("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                .execute(&mut conn)
                .map_err(|e| e.to_string())?;
        }
        Ok(conn)
    }
}

impl BackendSql for MysqlConnection {
    /// `SELECT ... FOR UPDATE`.
    fn locked_read(&mut self, key: i32) -> QueryResult<Stock> {
        bench_stock::table
            .find(key)
            .select(Stock::as_select())
            .for_update()
            .get_result(self)
    }
}

crate::strategies::sql::stock_sql!(MysqlConnection, AsyncMysqlConnection, "");
