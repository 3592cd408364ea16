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

/// The token table.
const CREATE: &str = "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
                      updated_at TIMESTAMP NOT NULL)";

/// The token table of `DateTime<Utc>` tokens.
const CREATE_UTC: &str = "CREATE TABLE stamps_utc (id INTEGER PRIMARY KEY, \
                          value INTEGER NOT NULL, updated_at TEXT NOT NULL)";

/// The table of an entity without a version column, its timestamps checked.
const CREATE_CHECKED: &str = "CREATE TABLE checked_stamps (id INTEGER PRIMARY KEY, \
                              value INTEGER NOT NULL, updated_at TIMESTAMP NOT NULL, \
                              seen_at TEXT)";

/// Rows of `checked_stamps` holding each text form (`OTHER_FORMS`, then `OFFSET_FORMS`)
/// in both timestamp columns, then one whose `seen_at` is NULL: their ids, with the form.
fn checked_rows() -> Vec<(i32, &'static str, String)> {
    let forms = OTHER_FORMS.iter().chain(OFFSET_FORMS);
    let mut rows: Vec<_> = forms
        .enumerate()
        .map(|(id, form)| {
            let id = i32::try_from(id).unwrap();
            let insert = format!("INSERT INTO checked_stamps VALUES ({id}, 0, '{form}', '{form}')");
            (id, *form, insert)
        })
        .collect();
    let (id, form) = (i32::try_from(rows.len()).unwrap(), OTHER_FORMS[0]);
    let insert = format!("INSERT INTO checked_stamps VALUES ({id}, 0, '{form}', NULL)");
    rows.push((id, form, insert));
    rows
}

/// A value no row of `checked_rows` holds, in yet another form: another writer's.
const THEIR_STAMP: &str = "UPDATE checked_stamps SET updated_at = '2030-01-01T00:00:00Z' \
                           WHERE id = ";

/// `wall` (a clock time `offset_hours` east of UTC) as text with that offset.
fn with_offset(wall: NaiveDateTime, offset_hours: i32) -> String {
    format!("{}{offset_hours:+03}:00", wall.format("%F %T"))
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = stamps)]
struct Stamp {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: NaiveDateTime,
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

mod blocking {
    use chrono::TimeDelta;
    use diesel::sqlite::SqliteConnection as Conn;
    use diesel::{ExpressionMethods, RunQueryDsl};
    use diesel_occ::Error;
    use diesel_occ::prelude::*;

    use diesel_occ::Tracked;

    use super::super::ahead_of_clock;
    use super::{
        CREATE, CREATE_CHECKED, CREATE_UTC, CheckedStamp, OFFSET_FORMS, OTHER_FORMS, Stamp,
        StampUtc, THEIR_STAMP, assert_stale, checked_rows, stamps, stamps_utc, with_offset,
    };

    #[test]
    fn check_columns_stored_in_other_text_forms_save() {
        let db = test_db!();
        let mut conn = db.conn();
        diesel::sql_query(CREATE_CHECKED)
            .execute(&mut conn)
            .unwrap();
        let rows = checked_rows();
        for (_, _, insert) in &rows {
            diesel::sql_query(insert).execute(&mut conn).unwrap();
        }
        for (id, form, _) in rows {
            let mut mine = Tracked::new(CheckedStamp::find(&mut conn, id).unwrap());
            mine.edit().value = 1;
            mine.save_checked(&mut conn)
                .unwrap_or_else(|e| panic!("a row holding {form:?} saves: {e:?}"));
            assert_eq!(CheckedStamp::find(&mut conn, id).unwrap().value, 1);

            // Another writer moves the timestamp: the stale save still conflicts.
            diesel::sql_query(format!("{THEIR_STAMP}{id}"))
                .execute(&mut conn)
                .unwrap();
            mine.edit().value = 2;
            assert_stale(mine.save_checked(&mut conn), form);

            // A plain delete is guarded by the fields as read, in the row's form.
            let read = CheckedStamp::find(&mut conn, id).unwrap();
            read.delete_checked(&mut conn)
                .unwrap_or_else(|e| panic!("a row read from {form:?} deletes: {e:?}"));
        }
    }

    #[test]
    fn rows_stored_in_other_text_forms_save() {
        let db = test_db!();
        let mut conn = db.conn();
        diesel::sql_query(CREATE).execute(&mut conn).unwrap();
        for (id, form) in OTHER_FORMS.iter().enumerate() {
            diesel::sql_query(format!("INSERT INTO stamps VALUES ({id}, 0, '{form}')"))
                .execute(&mut conn)
                .unwrap();
        }
        for (id, form) in OTHER_FORMS.iter().enumerate() {
            let id = i32::try_from(id).unwrap();
            let mut mine = Stamp::find(&mut conn, id).unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .unwrap_or_else(|e| panic!("a row holding {form:?} saves: {e:?}"));
            assert_eq!(Stamp::find(&mut conn, id).unwrap(), mine);
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn), Err(Error::Conflict(_))),
                "a stale writer of {form:?} conflicts"
            );
        }
    }

    #[test]
    fn rows_stored_with_a_utc_offset_save() {
        let db = test_db!();
        let mut conn = db.conn();
        diesel::sql_query(CREATE).execute(&mut conn).unwrap();
        diesel::sql_query(CREATE_UTC).execute(&mut conn).unwrap();
        for (id, form) in OFFSET_FORMS.iter().enumerate() {
            for table in ["stamps", "stamps_utc"] {
                diesel::sql_query(format!("INSERT INTO {table} VALUES ({id}, 0, '{form}')"))
                    .execute(&mut conn)
                    .unwrap();
            }
        }
        for (id, form) in OFFSET_FORMS.iter().enumerate() {
            let id = i32::try_from(id).unwrap();
            let mut mine = Stamp::find(&mut conn, id).unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .unwrap_or_else(|e| panic!("a NaiveDateTime row holding {form:?} saves: {e:?}"));
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn), Err(Error::Conflict(_))),
                "a stale NaiveDateTime writer of {form:?} conflicts"
            );

            let mut mine = StampUtc::find(&mut conn, id).unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .unwrap_or_else(|e| panic!("a DateTime<Utc> row holding {form:?} saves: {e:?}"));
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn), Err(Error::Conflict(_))),
                "a stale DateTime<Utc> writer of {form:?} conflicts"
            );
        }
    }

    #[test]
    fn a_bulk_update_moves_a_token_stored_with_a_utc_offset_forward() {
        let db = test_db!();
        let mut conn = db.conn();
        diesel::sql_query(CREATE).execute(&mut conn).unwrap();
        diesel::sql_query(CREATE_UTC).execute(&mut conn).unwrap();
        // An hour ahead of the clock, written two hours east of UTC.
        let wall = ahead_of_clock() + TimeDelta::hours(2);
        for table in ["stamps", "stamps_utc"] {
            diesel::sql_query(format!(
                "INSERT INTO {table} VALUES (1, 0, '{}')",
                with_offset(wall, 2)
            ))
            .execute(&mut conn)
            .unwrap();
        }

        let mut stale = Stamp::find(&mut conn, 1).unwrap();
        Stamp::bulk_update(stamps::table, stamps::value.eq(7))
            .execute(&mut conn)
            .unwrap();
        let mut bulk = Stamp::find(&mut conn, 1).unwrap();
        assert!(
            bulk.updated_at > stale.updated_at,
            "NaiveDateTime: the bulk update moved {} to {}",
            stale.updated_at,
            bulk.updated_at
        );
        stale.value = 9;
        assert!(matches!(
            stale.save_checked(&mut conn),
            Err(Error::Conflict(_))
        ));
        bulk.value = 8;
        bulk.save_checked(&mut conn)
            .expect("the row saves after the bulk update");

        let mut stale = StampUtc::find(&mut conn, 1).unwrap();
        StampUtc::bulk_update(stamps_utc::table, stamps_utc::value.eq(7))
            .execute(&mut conn)
            .unwrap();
        let mut bulk = StampUtc::find(&mut conn, 1).unwrap();
        assert!(
            bulk.updated_at > stale.updated_at,
            "DateTime<Utc>: the bulk update moved {} to {}",
            stale.updated_at,
            bulk.updated_at
        );
        stale.value = 9;
        assert!(matches!(
            stale.save_checked(&mut conn),
            Err(Error::Conflict(_))
        ));
        bulk.value = 8;
        bulk.save_checked(&mut conn)
            .expect("the row saves after the bulk update");
    }
}

mod asynchronous {
    use chrono::TimeDelta;
    use diesel::ExpressionMethods;
    use diesel_async::RunQueryDsl;
    use diesel_occ::Error;
    use diesel_occ::asynchronous::prelude::*;

    use diesel_occ::Tracked;

    use super::super::ahead_of_clock;
    use super::{
        CREATE, CREATE_CHECKED, CREATE_UTC, CheckedStamp, OFFSET_FORMS, OTHER_FORMS, Stamp,
        StampUtc, THEIR_STAMP, assert_stale, checked_rows, stamps, stamps_utc, with_offset,
    };

    type Conn =
        diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn check_columns_stored_in_other_text_forms_save() {
        let db = async_test_db!();
        let mut conn = db.conn().await;
        diesel::sql_query(CREATE_CHECKED)
            .execute(&mut conn)
            .await
            .unwrap();
        let rows = checked_rows();
        for (_, _, insert) in &rows {
            diesel::sql_query(insert).execute(&mut conn).await.unwrap();
        }
        for (id, form, _) in rows {
            let mut mine = Tracked::new(CheckedStamp::find(&mut conn, id).await.unwrap());
            mine.edit().value = 1;
            mine.save_checked(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("a row holding {form:?} saves: {e:?}"));
            assert_eq!(CheckedStamp::find(&mut conn, id).await.unwrap().value, 1);

            diesel::sql_query(format!("{THEIR_STAMP}{id}"))
                .execute(&mut conn)
                .await
                .unwrap();
            mine.edit().value = 2;
            assert_stale(mine.save_checked(&mut conn).await, form);

            let read = CheckedStamp::find(&mut conn, id).await.unwrap();
            read.delete_checked(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("a row read from {form:?} deletes: {e:?}"));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rows_stored_in_other_text_forms_save() {
        let db = async_test_db!();
        let mut conn = db.conn().await;
        diesel::sql_query(CREATE).execute(&mut conn).await.unwrap();
        for (id, form) in OTHER_FORMS.iter().enumerate() {
            diesel::sql_query(format!("INSERT INTO stamps VALUES ({id}, 0, '{form}')"))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        for (id, form) in OTHER_FORMS.iter().enumerate() {
            let id = i32::try_from(id).unwrap();
            let mut mine = Stamp::find(&mut conn, id).await.unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("a row holding {form:?} saves: {e:?}"));
            assert_eq!(Stamp::find(&mut conn, id).await.unwrap(), mine);
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn).await, Err(Error::Conflict(_))),
                "a stale writer of {form:?} conflicts"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rows_stored_with_a_utc_offset_save() {
        let db = async_test_db!();
        let mut conn = db.conn().await;
        diesel::sql_query(CREATE).execute(&mut conn).await.unwrap();
        diesel::sql_query(CREATE_UTC)
            .execute(&mut conn)
            .await
            .unwrap();
        for (id, form) in OFFSET_FORMS.iter().enumerate() {
            for table in ["stamps", "stamps_utc"] {
                diesel::sql_query(format!("INSERT INTO {table} VALUES ({id}, 0, '{form}')"))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
        }
        for (id, form) in OFFSET_FORMS.iter().enumerate() {
            let id = i32::try_from(id).unwrap();
            let mut mine = Stamp::find(&mut conn, id).await.unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("a NaiveDateTime row holding {form:?} saves: {e:?}"));
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn).await, Err(Error::Conflict(_))),
                "a stale NaiveDateTime writer of {form:?} conflicts"
            );

            let mut mine = StampUtc::find(&mut conn, id).await.unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("a DateTime<Utc> row holding {form:?} saves: {e:?}"));
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn).await, Err(Error::Conflict(_))),
                "a stale DateTime<Utc> writer of {form:?} conflicts"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bulk_update_moves_a_token_stored_with_a_utc_offset_forward() {
        let db = async_test_db!();
        let mut conn = db.conn().await;
        diesel::sql_query(CREATE).execute(&mut conn).await.unwrap();
        diesel::sql_query(CREATE_UTC)
            .execute(&mut conn)
            .await
            .unwrap();
        // An hour ahead of the clock, written two hours east of UTC.
        let wall = ahead_of_clock() + TimeDelta::hours(2);
        for table in ["stamps", "stamps_utc"] {
            diesel::sql_query(format!(
                "INSERT INTO {table} VALUES (1, 0, '{}')",
                with_offset(wall, 2)
            ))
            .execute(&mut conn)
            .await
            .unwrap();
        }

        let mut stale = Stamp::find(&mut conn, 1).await.unwrap();
        Stamp::bulk_update(stamps::table, stamps::value.eq(7))
            .execute(&mut conn)
            .await
            .unwrap();
        let mut bulk = Stamp::find(&mut conn, 1).await.unwrap();
        assert!(
            bulk.updated_at > stale.updated_at,
            "NaiveDateTime: the bulk update moved {} to {}",
            stale.updated_at,
            bulk.updated_at
        );
        stale.value = 9;
        assert!(matches!(
            stale.save_checked(&mut conn).await,
            Err(Error::Conflict(_))
        ));
        bulk.value = 8;
        bulk.save_checked(&mut conn)
            .await
            .expect("the row saves after the bulk update");

        let mut stale = StampUtc::find(&mut conn, 1).await.unwrap();
        StampUtc::bulk_update(stamps_utc::table, stamps_utc::value.eq(7))
            .execute(&mut conn)
            .await
            .unwrap();
        let mut bulk = StampUtc::find(&mut conn, 1).await.unwrap();
        assert!(
            bulk.updated_at > stale.updated_at,
            "DateTime<Utc>: the bulk update moved {} to {}",
            stale.updated_at,
            bulk.updated_at
        );
        stale.value = 9;
        assert!(matches!(
            stale.save_checked(&mut conn).await,
            Err(Error::Conflict(_))
        ));
        bulk.value = 8;
        bulk.save_checked(&mut conn)
            .await
            .expect("the row saves after the bulk update");
    }
}
