//! Timestamp tokens on columns coarser than microseconds, and SQLite timestamps stored
//! in another text form: the stale writer never wins, blocking and async.
//!
//! Each scenario creates its token table itself, so the column's type and precision are
//! part of the scenario; [`token_column!`] compiles the scenario files once per column.
//! A row whose token lies ahead of the clock (a writer whose clock runs fast) makes a
//! fresh token land in the same second as the old one every time, so the scenarios
//! need no timing luck.

use diesel::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;

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

/// The token row, its precision not declared (whole seconds).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stamps)]
struct Stamp {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: chrono::NaiveDateTime,
}

impl Stamp {
    /// Row `id` holding `value` at the token `updated_at`.
    fn new(id: i32, value: i32, updated_at: chrono::NaiveDateTime) -> Self {
        Self {
            id,
            value,
            updated_at,
        }
    }
}

/// The token table `table`, its token column of SQL type `column`.
pub(crate) fn create_table(table: &str, column: &str) -> String {
    format!(
        "CREATE TABLE {table} (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
         updated_at {column} NOT NULL)"
    )
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

/// Asserts what the start-up check says of an entity claiming microseconds on
/// `table.updated_at`, a column storing `digits` fractional digits: nothing on a
/// microsecond column; on a coarser one, one problem naming the column and both
/// precisions.
fn assert_micros_checked(result: Result<(), diesel_occ::Error>, table: &str, digits: u8) {
    if digits == 6 {
        result.expect("a microsecond column holds microsecond tokens");
        return;
    }
    let error = result.unwrap_err();
    let problems = error.as_schema_problems().expect("schema problems");
    assert_eq!(problems.len(), 1, "{error}");
    let problem = problems[0].as_token_column();
    let problem = problem.unwrap_or_else(|| panic!("a token column problem: {error}"));
    assert_eq!((problem.table, problem.column), (table, "updated_at"));
    assert_eq!(problem.needed_precision, Some(6), "{error}");
    assert_eq!(problem.found_precision, Some(digits), "{error}");
    let named = error.to_string().contains(&format!("{table}.updated_at"));
    assert!(named, "the message names the column: {error}");
}

/// Compiles the scenario file for each token column, in both flavours: `Conn` (blocking)
/// and `AsyncConn` of its backend (`postgres`, `mysql` or `sqlite`), `COLUMN` (its SQL
/// type), `DIGITS` (the fractional digits it really stores) and `Declared`, the token row
/// declaring that precision (`#[occ(precision)]` takes a literal).
macro_rules! token_column {
    ($($name:ident: $backend:ident, $column:literal, $digits:literal;)+) => {$(
        // The files sit beside this mod.rs, not in a directory per column.
        #[path = "."]
        mod $name {
            use chrono::NaiveDateTime;
            use diesel::{Queryable, Selectable};
            use diesel_occ::Versioned;

            #[allow(unused_imports)]
            use super::{
                Stamp, ahead_of_clock, assert_micros_checked, assert_out_of_range, create_table,
                schema::stamps,
            };

            /// The SQL type of the token column.
            const COLUMN: &str = $column;
            /// The fractional digits the column stores.
            const DIGITS: u8 = $digits;

            /// The token row, declaring the column's real precision.
            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
            #[diesel(table_name = stamps)]
            struct Declared {
                id: i32,
                value: i32,
                #[occ(version, precision = $digits)]
                updated_at: NaiveDateTime,
            }

            token_column!(@$backend);
        }
    )+};
    // `scenarios.rs` in both flavours (see `on_every_backend!`), on the backend's
    // connections.
    (@postgres) => {
        use {diesel::pg::PgConnection as Conn, diesel_async::AsyncPgConnection as AsyncConn};
        on_every_backend!(@file scenarios);
    };
    (@mysql) => {
        #[cfg(feature = "mysql")]
        use diesel::mysql::MysqlConnection as Conn;
        use diesel_async::AsyncMysqlConnection as AsyncConn;
        on_every_backend!(@mysql scenarios);
    };
    (@sqlite) => {
        use diesel::sqlite::SqliteConnection as Conn;
        type AsyncConn = diesel_async::sync_connection_wrapper::SyncConnectionWrapper<Conn>;
        on_every_backend!(@file scenarios);
    };
}

token_column! {
    postgres_timestamp0: postgres, "TIMESTAMP(0)", 0;
    postgres_timestamp3: postgres, "TIMESTAMP(3)", 3;
    postgres_timestamp6: postgres, "TIMESTAMP", 6;
    mysql_datetime: mysql, "DATETIME", 0;
    mysql_timestamp: mysql, "TIMESTAMP", 0;
    mysql_datetime6: mysql, "DATETIME(6)", 6;
    sqlite_text: sqlite, "TIMESTAMP", 6;
}

mod now_writers;
mod sqlite_text_forms;

/// Compiles time_tokens.rs for each backend: `Conn`, the SQL of the `PrimitiveDateTime`
/// column (`COLUMN`, storing `DIGITS` fractional digits, `Declared` declaring them) and
/// of the `OffsetDateTime` column (`INSTANT_COLUMN`, Diesel's SQL type `$instant`).
macro_rules! time_column {
    ($($(#[$cfg:meta])* $name:ident: $conn:ty, $column:literal, $digits:literal, $instant_column:literal, $instant:ident;)+) => {$(
        $(#[$cfg])*
        // The file sits beside this mod.rs.
        #[path = "."]
        mod $name {
            type Conn = $conn;
            const COLUMN: &str = $column;
            const DIGITS: u8 = $digits;
            const INSTANT_COLUMN: &str = $instant_column;
            diesel::table! {
                time_stamps (id) { id -> Integer, value -> Integer, updated_at -> Timestamp, }
            }
            diesel::table! {
                time_instants (id) { id -> Integer, value -> Integer, updated_at -> $instant, }
            }

            /// The token row, declaring the column's real precision.
            #[derive(Debug, Clone, PartialEq, diesel::Queryable, diesel::Selectable, diesel_occ::Versioned)]
            #[diesel(table_name = time_stamps)]
            struct Declared {
                id: i32,
                value: i32,
                #[occ(version, precision = $digits)]
                updated_at: time::PrimitiveDateTime,
            }

            #[path = "time_tokens.rs"]
            mod blocking;
        }
    )+};
}

time_column! {
    time_postgres: diesel::pg::PgConnection, "TIMESTAMP(3)", 3, "TIMESTAMPTZ", Timestamptz;
    #[cfg(feature = "mysql")]
    time_mysql: diesel::mysql::MysqlConnection, "DATETIME", 0, "DATETIME(6)", Datetime;
    time_sqlite: diesel::sqlite::SqliteConnection, "TIMESTAMP", 6, "TEXT", TimestamptzSqlite;
}
mod time_text_forms;

/// `DateTime<Utc>` tokens under a bulk update, on the backends where Diesel maps them:
/// PostgreSQL (`timestamptz`) and SQLite (text with an offset): utc.rs for each, with
/// `Conn`, the token column's SQL type (`COLUMN`) and Diesel's (`$sql_type`).
macro_rules! utc_column {
    ($($name:ident: $conn:ty, $column:literal, $sql_type:ident;)+) => {$(
        // The file sits beside this mod.rs.
        #[path = "."]
        mod $name {
            use super::super::ahead_of_clock;
            type Conn = $conn;
            /// The SQL type of the token column.
            const COLUMN: &str = $column;
            diesel::table! {
                stamps_utc (id) { id -> Integer, value -> Integer, updated_at -> $sql_type, }
            }
            #[path = "utc.rs"]
            mod blocking;
        }
    )+};
}

#[path = "."]
mod utc {
    utc_column! {
        postgres_timestamptz: diesel::pg::PgConnection, "TIMESTAMPTZ", Timestamptz;
        sqlite_text: diesel::sqlite::SqliteConnection, "TEXT", TimestamptzSqlite;
    }
}
