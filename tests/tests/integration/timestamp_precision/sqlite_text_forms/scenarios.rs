//! The scenarios, in both flavours, on SQLite.

flavour_prelude!();

use chrono::TimeDelta;
use diesel::ExpressionMethods;
use diesel_occ::{Error, Tracked};

use super::super::ahead_of_clock;
use super::{
    CREATE, CREATE_CHECKED, CREATE_UTC, CheckedStamp, OFFSET_FORMS, OTHER_FORMS, Stamp, StampUtc,
    THEIR_STAMP, assert_stale, checked_rows, stamps, stamps_utc, with_offset,
};

#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_columns_stored_in_other_text_forms_save() {
    let db = db!();
    let mut conn = db.conn().await;
    raw_sql(&db, CREATE_CHECKED).await;
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

        // Another writer moves the timestamp: the stale save still conflicts.
        raw_sql(&db, &format!("{THEIR_STAMP}{id}")).await;
        mine.edit().value = 2;
        assert_stale(mine.save_checked(&mut conn).await, form);

        // A plain delete is guarded by the fields as read, in the row's form.
        let read = CheckedStamp::find(&mut conn, id).await.unwrap();
        read.delete_checked(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("a row read from {form:?} deletes: {e:?}"));
    }
}

#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_stored_in_other_text_forms_save() {
    let db = db!();
    let mut conn = db.conn().await;
    raw_sql(&db, CREATE).await;
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

#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_stored_with_a_utc_offset_save() {
    let db = db!();
    let mut conn = db.conn().await;
    raw_sql(&db, CREATE).await;
    raw_sql(&db, CREATE_UTC).await;
    for (id, form) in OFFSET_FORMS.iter().enumerate() {
        for table in ["stamps", "stamps_utc"] {
            diesel::sql_query(format!("INSERT INTO {table} VALUES ({id}, 0, '{form}')"))
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
    // A row of `$entity` holding `form` saves; a stale writer of it conflicts.
    macro_rules! saves_and_a_stale_writer_conflicts {
        ($entity:ident, $id:expr, $form:expr, $type:literal) => {{
            let mut mine = $entity::find(&mut conn, $id).await.unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("a {} row holding {:?} saves: {e:?}", $type, $form));
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn).await, Err(Error::Conflict(_))),
                "a stale {} writer of {:?} conflicts",
                $type,
                $form
            );
        }};
    }
    for (id, form) in OFFSET_FORMS.iter().enumerate() {
        let id = i32::try_from(id).unwrap();
        saves_and_a_stale_writer_conflicts!(Stamp, id, form, "NaiveDateTime");
        saves_and_a_stale_writer_conflicts!(StampUtc, id, form, "DateTime<Utc>");
    }
}

#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_update_moves_a_token_stored_with_a_utc_offset_forward() {
    let db = db!();
    let mut conn = db.conn().await;
    raw_sql(&db, CREATE).await;
    raw_sql(&db, CREATE_UTC).await;
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

    // The bulk update moves the token of `$entity` forward: the row as read no longer
    // saves, the row as stored does.
    macro_rules! a_bulk_update_moves_the_token_forward {
        ($entity:ident, $table:ident, $type:literal) => {{
            let mut stale = $entity::find(&mut conn, 1).await.unwrap();
            $entity::bulk_update($table::table, $table::value.eq(7))
                .execute(&mut conn)
                .await
                .unwrap();
            let mut bulk = $entity::find(&mut conn, 1).await.unwrap();
            assert!(
                bulk.updated_at > stale.updated_at,
                "{}: the bulk update moved {} to {}",
                $type,
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
        }};
    }
    a_bulk_update_moves_the_token_forward!(Stamp, stamps, "NaiveDateTime");
    a_bulk_update_moves_the_token_forward!(StampUtc, stamps_utc, "DateTime<Utc>");
}
