//! A token column the database sets to "now" on every write (MySQL/MariaDB's
//! `ON UPDATE CURRENT_TIMESTAMP`): the start-up schema check refuses it, because such a
//! writer can move a token that ran ahead of the clock back onto a value a stale entity
//! still holds, and that entity's save then wins. Each test shows the lost update too, so
//! the refusal is seen to be needed. The server's clock is pinned per session
//! (`SET timestamp`), so nothing depends on timing.

use chrono::NaiveDateTime;
use diesel_occ::schema_check::SchemaProblems;

use super::Stamp;
use super::schema::stamps;

/// The token table, its token set to now by the database on every UPDATE.
const CREATE: &str = "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
                      updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP \
                      ON UPDATE CURRENT_TIMESTAMP)";

/// The session statement that makes the server's "now" the given token.
fn pin_clock_to(token: NaiveDateTime) -> String {
    format!("SET timestamp = {}", token.and_utc().timestamp())
}

/// Demands exactly one problem, on `stamps.updated_at`, for the clause.
fn assert_refused(problems: Option<&SchemaProblems>, error: &dyn std::fmt::Display) {
    let problems = problems.unwrap_or_else(|| panic!("expected schema problems, got {error}"));
    assert_eq!(problems.len(), 1, "{error}");
    let problem = problems[0].as_token_column();
    let problem = problem.unwrap_or_else(|| panic!("a token column problem: {error}"));
    assert_eq!((problem.table, problem.column), ("stamps", "updated_at"));
    assert!(problem.set_to_now_on_update, "{error}");
    let says_why = error.to_string().contains("current time");
    assert!(says_why, "the message says why: {error}");
}

// `scenarios.rs` in both flavours (see `on_every_backend!`), on MySQL/MariaDB.
#[cfg(feature = "mysql")]
#[allow(unused_imports)]
use diesel::mysql::MysqlConnection as Conn;
use diesel_async::AsyncMysqlConnection as AsyncConn;
on_every_backend!(@mysql scenarios);
