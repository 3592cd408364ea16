//! Timestamp tokens on columns coarser than microseconds, and SQLite timestamps stored
//! in another text form: the stale writer never wins, blocking and async.
//!
//! Each test creates its token table itself, so the column's precision is part of the
//! scenario. A row whose token lies ahead of the clock (a writer whose clock runs fast)
//! makes a fresh token land in the same second as the old one every time, so the
//! scenarios need no timing luck.

#[allow(dead_code, unreachable_pub)]
#[path = "../concurrency/support.rs"]
mod support;

/// The token table of every scenario.
mod schema {
    diesel::table! {
        stamps (id) {
            id -> Integer,
            value -> Integer,
            updated_at -> Timestamp,
        }
    }
}

/// A token well ahead of the clock, at whole seconds.
fn ahead_of_clock() -> chrono::NaiveDateTime {
    use chrono::SubsecRound;
    (chrono::Utc::now() + chrono::TimeDelta::hours(1))
        .naive_utc()
        .trunc_subsecs(0)
}

/// Asserts a refused token with no fresh successor, printing what came instead.
fn assert_out_of_range(result: Result<(), diesel_occ::Error>) {
    use diesel_occ::{Error, InvalidTokenReason};
    match result {
        Err(Error::InvalidToken(invalid)) if invalid.reason == InvalidTokenReason::OutOfRange => {}
        other => panic!("expected an out-of-range token, got {other:?}"),
    }
}

/// Text forms of timestamps that SQLite's date functions and Diesel read, but that
/// Diesel does not write (it writes `2024-01-02 03:04:05.123456`).
const OTHER_FORMS: &[&str] = &[
    "2024-01-02T03:04:05",
    "2024-01-02T03:04:05.123",
    "2024-01-02T03:04:05.123456",
    "2024-01-02 03:04:05.500",
    "2024-01-02 03:04:05.120000",
    "2024-01-02 03:04:05.000",
    "2024-01-02T03:04:05Z",
    "2024-01-02 03:04:05.250Z",
    "2024-01-02T03:04:05+00:00",
    "2024-01-02 03:04",
    "2024-01-02T03:04",
];

#[macro_use]
mod blocking;
#[macro_use]
mod asynchronous;

blocking_suite!(
    postgres_timestamp0,
    diesel::pg::PgConnection,
    "TIMESTAMP(0)",
    0
);
blocking_suite!(
    postgres_timestamp3,
    diesel::pg::PgConnection,
    "TIMESTAMP(3)",
    3
);
blocking_suite!(
    postgres_timestamp6,
    diesel::pg::PgConnection,
    "TIMESTAMP",
    6
);
#[cfg(feature = "mysql")]
blocking_suite!(
    mysql_datetime,
    diesel::mysql::MysqlConnection,
    "DATETIME",
    0
);
#[cfg(feature = "mysql")]
blocking_suite!(
    mysql_timestamp,
    diesel::mysql::MysqlConnection,
    "TIMESTAMP",
    0
);
#[cfg(feature = "mysql")]
blocking_suite!(
    mysql_datetime6,
    diesel::mysql::MysqlConnection,
    "DATETIME(6)",
    6
);
blocking_suite!(
    sqlite_text,
    diesel::sqlite::SqliteConnection,
    "TIMESTAMP",
    6
);

async_suite!(
    postgres_timestamp0_async,
    diesel_async::AsyncPgConnection,
    "TIMESTAMP(0)",
    0
);
async_suite!(
    postgres_timestamp3_async,
    diesel_async::AsyncPgConnection,
    "TIMESTAMP(3)",
    3
);
async_suite!(
    mysql_datetime_async,
    diesel_async::AsyncMysqlConnection,
    "DATETIME",
    0
);
async_suite!(
    mysql_datetime6_async,
    diesel_async::AsyncMysqlConnection,
    "DATETIME(6)",
    6
);
async_suite!(
    sqlite_text_async,
    diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>,
    "TIMESTAMP",
    6
);

#[macro_use]
mod utc;

utc_bulk_suite!(
    postgres_timestamptz,
    diesel::pg::PgConnection,
    "TIMESTAMPTZ",
    diesel::sql_types::Timestamptz
);
utc_bulk_suite!(
    sqlite_text_utc,
    diesel::sqlite::SqliteConnection,
    "TEXT",
    diesel::sql_types::TimestamptzSqlite
);
