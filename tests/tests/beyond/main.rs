//! Beyond the ORMs: tracked saves and merge, batch saves, force increment, the
//! bypass-writer guard, bulk updates, checked soft delete, skipped columns and
//! PostgreSQL `xmin` tokens, on every backend.
//!
//! The suite is written once (`sync_suite.rs`) and instantiated per backend; each test
//! gets a fresh migrated database (or SQLite file).

mod statement_cache;
#[macro_use]
mod async_suite;
#[macro_use]
mod sync_suite;

sync_suite!(
    postgres,
    diesel::pg::PgConnection,
    crate::schema::pg,
    Postgres
);
#[cfg(feature = "mysql")]
sync_suite!(
    mysql,
    diesel::mysql::MysqlConnection,
    crate::schema::mysql,
    Mysql
);
sync_suite!(
    sqlite,
    diesel::sqlite::SqliteConnection,
    crate::schema::sqlite,
    Sqlite
);

async_suite!(
    postgres_async,
    diesel_async::AsyncPgConnection,
    diesel::pg::PgConnection,
    crate::schema::pg,
    Postgres,
    "SET lc_messages TO 'C'"
);
#[cfg(feature = "mysql")]
async_suite!(
    mysql_async,
    diesel_async::AsyncMysqlConnection,
    diesel::mysql::MysqlConnection,
    crate::schema::mysql,
    Mysql,
    "SELECT 1"
);
async_suite!(
    sqlite_async,
    diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::sqlite::SqliteConnection>,
    diesel::sqlite::SqliteConnection,
    crate::schema::sqlite,
    Sqlite,
    "PRAGMA busy_timeout = 10000"
);

mod postgres_only;
