//! The scenarios, in both flavours, on SQLite.

flavour_prelude!();

use chrono::TimeDelta;
use diesel::ExpressionMethods;
use diesel_occ::{Error, Tracked};
use diesel_occ_tests::expect_conflict;

use super::super::{ahead_of_clock, create_table};
use super::{
    CREATE_CHECKED, CheckedStamp, OFFSET_FORMS, OTHER_FORMS, Stamp, StampUtc, THEIR_STAMP,
    assert_stale, checked_rows, stamps, stamps_utc, with_offset,
};

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn check_columns_stored_in_other_text_forms_save() {
    let (db, mut conn) = db_and_conn!();
    raw_sql(&db, CREATE_CHECKED).await;
    let rows = checked_rows();
    for (_, _, insert) in &rows {
        raw_sql(&db, insert).await;
    }
    for (id, form, _) in rows {
        let mut mine = Tracked::new(CheckedStamp::find(&mut conn, id).await.unwrap());
        mine.edit().value = 1;
        let saved = mine.save_checked(&mut conn).await;
        saved.unwrap_or_else(|e| panic!("a row holding {form:?} saves: {e:?}"));
        assert_eq!(CheckedStamp::find(&mut conn, id).await.unwrap().value, 1);

        // Another writer moves the timestamp: the stale save still conflicts.
        raw_sql(&db, &format!("{THEIR_STAMP}{id}")).await;
        mine.edit().value = 2;
        assert_stale(mine.save_checked(&mut conn).await, form);

        // A plain delete is guarded by the fields as read, in the row's form.
        let read = CheckedStamp::find(&mut conn, id).await.unwrap();
        let deleted = read.delete_checked(&mut conn).await;
        deleted.unwrap_or_else(|e| panic!("a row read from {form:?} deletes: {e:?}"));
    }
}

/// Inserts a row `(id, 0, form)` into `table` for each of `forms`, its index the id.
#[flavour]
async fn insert_forms(conn: &mut Conn, table: &str, forms: &[&str]) {
    for (id, form) in forms.iter().enumerate() {
        let insert = format!("INSERT INTO {table} VALUES ({id}, 0, '{form}')");
        run_sql(conn, &insert).await;
    }
}

/// Row `$id` of `$entity`, holding `$form`, saves and reads back as saved; a stale
/// writer of it conflicts.
#[flavour]
macro_rules! saves_and_a_stale_writer_conflicts {
    ($conn:ident, $entity:ident, $id:expr, $form:expr, $type:literal) => {{
        let (ty, form) = ($type, $form);
        let mut mine = $entity::find(&mut $conn, $id).await.unwrap();
        let mut stale = mine.clone();
        mine.value = 1;
        let saved = mine.save_checked(&mut $conn).await;
        saved.unwrap_or_else(|e| panic!("a {ty} row holding {form:?} saves: {e:?}"));
        assert_eq!($entity::find(&mut $conn, $id).await.unwrap(), mine);
        stale.value = 2;
        let saved = stale.save_checked(&mut $conn).await;
        let conflicts = matches!(saved, Err(Error::Conflict(_)));
        assert!(conflicts, "a stale {ty} writer of {form:?} conflicts");
    }};
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn rows_stored_in_other_text_forms_save() {
    let (db, mut conn) = db_and_conn!();
    raw_sql(&db, &create_table("stamps", "TIMESTAMP")).await;
    insert_forms(&mut conn, "stamps", OTHER_FORMS).await;
    for (id, form) in (0..).zip(OTHER_FORMS) {
        saves_and_a_stale_writer_conflicts!(conn, Stamp, id, form, "NaiveDateTime");
    }
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn rows_stored_with_a_utc_offset_save() {
    let (db, mut conn) = db_and_conn!();
    raw_sql(&db, &create_table("stamps", "TIMESTAMP")).await;
    raw_sql(&db, &create_table("stamps_utc", "TEXT")).await;
    insert_forms(&mut conn, "stamps", OFFSET_FORMS).await;
    insert_forms(&mut conn, "stamps_utc", OFFSET_FORMS).await;
    for (id, form) in (0..).zip(OFFSET_FORMS) {
        saves_and_a_stale_writer_conflicts!(conn, Stamp, id, form, "NaiveDateTime");
        saves_and_a_stale_writer_conflicts!(conn, StampUtc, id, form, "DateTime<Utc>");
    }
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_bulk_update_moves_a_token_stored_with_a_utc_offset_forward() {
    let (db, mut conn) = db_and_conn!();
    raw_sql(&db, &create_table("stamps", "TIMESTAMP")).await;
    raw_sql(&db, &create_table("stamps_utc", "TEXT")).await;
    // An hour ahead of the clock, written two hours east of UTC.
    let wall = ahead_of_clock() + TimeDelta::hours(2);
    let form = with_offset(wall, 2);
    insert_forms(&mut conn, "stamps", &[&form]).await;
    insert_forms(&mut conn, "stamps_utc", &[&form]).await;

    // The bulk update moves the token of `$entity` forward: the row as read no longer
    // saves, the row as stored does.
    macro_rules! a_bulk_update_moves_the_token_forward {
        ($entity:ident, $table:ident, $type:literal) => {{
            let mut stale = $entity::find(&mut conn, 0).await.unwrap();
            let update = $entity::bulk_update($table::table, $table::value.eq(7));
            update.execute(&mut conn).await.unwrap();
            let mut bulk = $entity::find(&mut conn, 0).await.unwrap();
            let (ty, before, after) = ($type, stale.updated_at, bulk.updated_at);
            assert!(after > before, "{ty}: moved {before} to {after}");
            stale.value = 9;
            expect_conflict(stale.save_checked(&mut conn).await);
            bulk.value = 8;
            let saved = bulk.save_checked(&mut conn).await;
            saved.expect("the row saves after the bulk update");
        }};
    }
    a_bulk_update_moves_the_token_forward!(Stamp, stamps, "NaiveDateTime");
    a_bulk_update_moves_the_token_forward!(StampUtc, stamps_utc, "DateTime<Utc>");
}
