//! SQLite rows whose timestamp another tool wrote in another text form (`T`, other
//! fraction digits, `Z`, a UTC offset) save with the `time` crate's tokens as with
//! chrono's, and a stale writer still conflicts.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection as Conn;
use diesel_occ::Error;
use diesel_occ::prelude::*;
use time::{OffsetDateTime, PrimitiveDateTime};

use super::sqlite_text_forms::{OFFSET_FORMS, OTHER_FORMS};

diesel::table! {
    time_forms (id) { id -> Integer, value -> Integer, updated_at -> Timestamp, }
}

diesel::table! {
    time_instant_forms (id) { id -> Integer, value -> Integer, updated_at -> TimestamptzSqlite, }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = time_forms)]
struct Stamp {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: PrimitiveDateTime,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = time_instant_forms)]
struct Instant {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: OffsetDateTime,
}

/// Row `$id` of `$entity`, holding `$form`, saves and reads back as saved; a stale
/// writer of it conflicts.
macro_rules! saves_and_a_stale_writer_conflicts {
    ($conn:ident, $entity:ident, $id:expr, $form:expr, $type:literal) => {{
        let (ty, form) = ($type, $form);
        let mut mine = $entity::find(&mut $conn, $id).unwrap();
        let mut stale = mine.clone();
        mine.value = 1;
        let saved = mine.save_checked(&mut $conn);
        saved.unwrap_or_else(|e| panic!("a {ty} row holding {form:?} saves: {e:?}"));
        assert_eq!($entity::find(&mut $conn, $id).unwrap(), mine);
        stale.value = 2;
        let saved = stale.save_checked(&mut $conn);
        let conflicts = matches!(saved, Err(Error::Conflict(_)));
        assert!(conflicts, "a stale {ty} writer of {form:?} conflicts");
    }};
}

#[test]
fn rows_stored_in_other_text_forms_save() {
    let db = test_db!();
    let mut conn = db.conn();
    let forms: Vec<&str> = OTHER_FORMS.iter().chain(OFFSET_FORMS).copied().collect();
    for table in ["time_forms", "time_instant_forms"] {
        let mut sql = super::create_table(table, "TEXT") + ";";
        for (id, form) in forms.iter().enumerate() {
            sql += &format!("INSERT INTO {table} VALUES ({id}, 0, '{form}');");
        }
        conn.batch_execute(&sql).unwrap();
    }
    for (id, form) in (0..).zip(&forms) {
        saves_and_a_stale_writer_conflicts!(conn, Stamp, id, form, "PrimitiveDateTime");
        saves_and_a_stale_writer_conflicts!(conn, Instant, id, form, "OffsetDateTime");
    }
}
