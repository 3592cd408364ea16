//! Bulk updates on every backend: the SQL-side increment of a counter token wraps from
//! its type's maximum to its minimum, exactly as a checked save's `next_token` does, so
//! a row at `MAX` stays saveable after a bulk write.
//!
//! The scenarios are written once (`sync_suite.rs`, `async_suite.rs`) and instantiated
//! per backend; each test gets a fresh migrated database (or SQLite file).

#[macro_use]
mod async_suite;
#[macro_use]
mod sync_suite;

sync_suite!(
    postgres,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg
);
#[cfg(feature = "mysql")]
sync_suite!(
    mysql,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql
);
sync_suite!(
    sqlite,
    diesel::sqlite::SqliteConnection,
    diesel_occ_tests::schema::sqlite
);

async_suite!(
    postgres_async,
    diesel_async::AsyncPgConnection,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg,
    "SET lc_messages TO 'C'"
);
#[cfg(feature = "mysql")]
async_suite!(
    mysql_async,
    diesel_async::AsyncMysqlConnection,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql,
    "SELECT 1"
);
async_suite!(
    sqlite_async,
    diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::sqlite::SqliteConnection>,
    diesel::sqlite::SqliteConnection,
    diesel_occ_tests::schema::sqlite,
    "PRAGMA busy_timeout = 10000"
);
