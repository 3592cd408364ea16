//! SQLite timestamps written by other tools, in text forms that SQLite's date functions
//! and Diesel read but that Diesel does not write (it writes
//! `2024-01-02 03:04:05.123456`): such rows save, and a stale writer still conflicts.
//! Texts with a UTC offset other than zero (`2026-01-01 10:00:00+02:00`) compare as the
//! token Diesel reads from them: the instant for `DateTime<Utc>`, the clock time before
//! the offset for `NaiveDateTime` (Diesel ignores the offset there), and a bulk update
//! moves such a token strictly forward.
//!
//! The same holds for the check columns (`#[occ(check)]`) of an entity without a version
//! column: a timestamp compared as read matches every text Diesel reads back as it.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::{Queryable, Selectable};
use diesel_occ::Versioned;

use super::Stamp;
use super::schema::stamps;

diesel::table! {
    stamps_utc (id) {
        id -> Integer,
        value -> Integer,
        updated_at -> TimestamptzSqlite,
    }
}

/// The text forms, each stored in a row of its own.
pub(super) const OTHER_FORMS: &[&str] = &[
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

/// Text forms with an offset other than zero, each stored in a row of its own.
pub(super) const OFFSET_FORMS: &[&str] = &[
    "2026-01-01 10:00:00+02:00",
    "2026-01-01T10:00:00.250-05:30",
    "2026-01-01 10:00:00.123456+02:00",
    "2026-01-01 10:00+02:00",
    "2026-01-01T23:30:00.999999-14:00",
];

diesel::table! {
    checked_stamps (id) {
        id -> Integer,
        value -> Integer,
        updated_at -> Timestamp,
        seen_at -> Nullable<TimestamptzSqlite>,
    }
}

/// The table of an entity without a version column, its timestamps checked.
const CREATE_CHECKED: &str = "CREATE TABLE checked_stamps (id INTEGER PRIMARY KEY, \
                              value INTEGER NOT NULL, updated_at TIMESTAMP NOT NULL, \
                              seen_at TEXT)";

/// Rows of `checked_stamps` holding each text form (`OTHER_FORMS`, then `OFFSET_FORMS`)
/// in both timestamp columns, then one whose `seen_at` is NULL: their ids, with the form.
fn checked_rows() -> Vec<(i32, &'static str, String)> {
    let forms = OTHER_FORMS.iter().chain(OFFSET_FORMS);
    let forms = forms.map(|form| (*form, format!("'{form}'")));
    let forms = forms.chain([(OTHER_FORMS[0], "NULL".to_owned())]);
    let row = |(id, (form, seen_at)): (i32, (&'static str, String))| {
        let insert = format!("INSERT INTO checked_stamps VALUES ({id}, 0, '{form}', {seen_at})");
        (id, form, insert)
    };
    (0..).zip(forms).map(row).collect()
}

/// A value no row of `checked_rows` holds, in yet another form: another writer's.
const THEIR_STAMP: &str = "UPDATE checked_stamps SET updated_at = '2030-01-01T00:00:00Z' \
                           WHERE id = ";

/// `wall` (a clock time `offset_hours` east of UTC) as text with that offset.
fn with_offset(wall: NaiveDateTime, offset_hours: i32) -> String {
    format!("{}{offset_hours:+03}:00", wall.format("%F %T"))
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = stamps_utc)]
struct StampUtc {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: DateTime<Utc>,
}

/// No version column: the two timestamps as read stand for the token.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = checked_stamps)]
struct CheckedStamp {
    id: i32,
    value: i32,
    #[occ(check)]
    updated_at: NaiveDateTime,
    #[occ(check)]
    seen_at: Option<DateTime<Utc>>,
}

/// Asserts a conflict that re-reading resolves: the row holds other values now.
fn assert_stale<T: std::fmt::Debug>(result: Result<T, diesel_occ::Error>, form: &str) {
    match result {
        Err(diesel_occ::Error::Conflict(conflict))
            if matches!(conflict.state(), diesel_occ::ConflictState::Stale { .. }) =>
        {
            assert!(conflict.is_retryable(), "{form:?}: {conflict:?}");
        }
        other => panic!("a stale writer of {form:?} conflicts, got {other:?}"),
    }
}

// `scenarios.rs` in both flavours (see `on_every_backend!`), on SQLite.
#[allow(unused_imports)]
use diesel::sqlite::SqliteConnection as Conn;
type AsyncConn = diesel_async::sync_connection_wrapper::SyncConnectionWrapper<Conn>;
on_every_backend!(@file scenarios);
