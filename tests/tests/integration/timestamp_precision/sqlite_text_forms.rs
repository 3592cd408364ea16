//! SQLite timestamps written by other tools, in text forms that SQLite's date functions
//! and Diesel read but that Diesel does not write (it writes
//! `2024-01-02 03:04:05.123456`): such rows save, and a stale writer still conflicts.
//! Texts with a UTC offset other than zero (`2026-01-01 10:00:00+02:00`) compare as the
//! token Diesel reads from them: the instant for `DateTime<Utc>`, the clock time before
//! the offset for `NaiveDateTime` (Diesel ignores the offset there), and a bulk update
//! moves such a token strictly forward.

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

/// The token table.
const CREATE: &str = "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
                      updated_at TIMESTAMP NOT NULL)";

/// The token table of `DateTime<Utc>` tokens.
const CREATE_UTC: &str = "CREATE TABLE stamps_utc (id INTEGER PRIMARY KEY, \
                          value INTEGER NOT NULL, updated_at TEXT NOT NULL)";

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

mod blocking {
    use chrono::TimeDelta;
    use diesel::sqlite::SqliteConnection as Conn;
    use diesel::{ExpressionMethods, RunQueryDsl};
    use diesel_occ::Error;
    use diesel_occ::prelude::*;

    use super::super::ahead_of_clock;
    use super::{
        CREATE, CREATE_UTC, OFFSET_FORMS, OTHER_FORMS, Stamp, StampUtc, stamps, stamps_utc,
        with_offset,
    };

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

    use super::super::ahead_of_clock;
    use super::{
        CREATE, CREATE_UTC, OFFSET_FORMS, OTHER_FORMS, Stamp, StampUtc, stamps, stamps_utc,
        with_offset,
    };

    type Conn =
        diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>;

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
