//! Issue 3 on the real servers: the async API on every backend, the retry helpers through
//! deadpool and r2d2, the hot row, exhaustion and deadlines, transient errors the
//! databases really produced, escalation, cancellation and observability.
//!
//! PostgreSQL and MariaDB where they run (see `diesel_occ_tests` for the variables),
//! SQLite on a temporary file per test. Async MySQL goes through `mysql_async` (pure
//! Rust) and always runs; the blocking MySQL tests need the client library (feature
//! `mysql`).

mod observe;
mod support;

#[macro_use]
mod async_suite;

async_suite!(
    postgres_async,
    diesel_async::AsyncPgConnection,
    diesel_occ_tests::schema::pg
);
async_suite!(
    mysql_async,
    diesel_async::AsyncMysqlConnection,
    diesel_occ_tests::schema::mysql
);
async_suite!(
    sqlite_async,
    diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>,
    diesel_occ_tests::schema::sqlite
);
