//! SQLite timestamps written by other tools, in text forms that SQLite's date functions
//! and Diesel read but that Diesel does not write (it writes
//! `2024-01-02 03:04:05.123456`): such rows save, and a stale writer still conflicts.

use chrono::NaiveDateTime;
use diesel::{Queryable, Selectable};
use diesel_occ::Versioned;

use super::schema::stamps;

/// The text forms, each stored in a row of its own.
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

/// The token table.
const CREATE: &str = "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
                      updated_at TIMESTAMP NOT NULL)";

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = stamps)]
struct Stamp {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: NaiveDateTime,
}

mod blocking {
    use diesel::RunQueryDsl;
    use diesel::sqlite::SqliteConnection as Conn;
    use diesel_occ::Error;
    use diesel_occ::prelude::*;

    use super::{CREATE, OTHER_FORMS, Stamp};

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
}

mod asynchronous {
    use diesel_async::RunQueryDsl;
    use diesel_occ::Error;
    use diesel_occ::asynchronous::prelude::*;

    use super::{CREATE, OTHER_FORMS, Stamp};

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
}
