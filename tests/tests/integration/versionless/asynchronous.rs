//! Versionless entities on an async connection (diesel-async): the twin of `blocking.rs`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::asynchronous::{self as occ};
use diesel_occ::retry::RetryPolicy;
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Error, Tracked};
use diesel_occ_tests::AsyncTestDb;
use diesel_occ_tests::statements::{StatementCounter, sql_only};
use tokio::sync::Mutex;

use super::entities::{Item, current_values, expect_conflict, expected_values, item};
use super::{AsyncConn as Conn, schema};

async fn seed(db: &AsyncTestDb<Conn>, row: Item) {
    diesel::insert_into(schema::shelf_items::table)
        .values(row)
        .execute(&mut db.conn().await)
        .await
        .expect("insert the item");
}

async fn stored(conn: &mut Conn) -> Item {
    Item::find(conn, 1).await.expect("the item")
}

/// A write that bypasses diesel-occ.
async fn raw_update(conn: &mut Conn, sql: &str) {
    diesel::sql_query(sql)
        .execute(conn)
        .await
        .expect("raw update");
}

#[tokio::test]
async fn tracked_save_is_one_update_guarded_by_the_check_columns_as_read() {
    let db = async_test_db!();
    seed(&db, item(Some("red"), 3)).await;
    let mut conn = db.conn().await;
    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().qty = 4;

    let log = StatementCounter::install_async(&mut conn);
    tracked.save_checked(&mut conn).await.expect("tracked save");
    let statements = log.take_sql();
    assert_eq!(statements.len(), 1, "one statement: {statements:?}");
    let sql = sql_only(&statements[0]);
    let guard = &sql[sql.find("WHERE").expect("a WHERE")..];
    assert!(guard.contains("label") && guard.contains("qty"), "{sql}");
    assert!(!guard.contains("note"), "an unchecked column is not compared: {sql}");
    assert_eq!(stored(&mut conn).await.qty, 4);
}

#[tokio::test]
async fn a_null_check_column_matches_null_and_detects_null_to_value_and_back() {
    let db = async_test_db!();
    seed(&db, item(None, 3)).await;
    let mut conn = db.conn().await;

    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().note = "first".into();
    tracked.save_checked(&mut conn).await.expect("NULL matches NULL");

    let mut stale = Tracked::new(stored(&mut conn).await);
    raw_update(&mut db.conn().await, "UPDATE shelf_items SET label = 'blue' WHERE id = 1").await;
    stale.edit().note = "lost".into();
    let conflict = expect_conflict(stale.save_checked(&mut conn).await);
    assert_eq!(current_values(&conflict).get("label"), Some("Some(\"blue\")"));
    assert_eq!(expected_values(&conflict).get("label"), Some("None"));

    let mut stale = Tracked::new(stored(&mut conn).await);
    raw_update(&mut db.conn().await, "UPDATE shelf_items SET label = NULL WHERE id = 1").await;
    stale.edit().note = "lost".into();
    let conflict = expect_conflict(stale.save_checked(&mut conn).await);
    assert_eq!(current_values(&conflict).get("label"), Some("None"));
    assert_eq!(stored(&mut conn).await.note, "first", "neither stale save wrote");
}

#[tokio::test]
async fn two_writers_one_wins_and_the_loser_names_the_current_values() {
    let db = async_test_db!();
    seed(&db, item(Some("red"), 10)).await;
    let report = Race::new(2)
        .run_asynchronous(
            async |_| {
                let mut conn = db.conn().await;
                let tracked = Tracked::new(stored(&mut conn).await);
                (conn, tracked)
            },
            async |writer, (mut conn, mut tracked): (Conn, Tracked<Item>)| {
                tracked.edit().qty -= 1 + i32::try_from(writer).unwrap();
                tracked.save_checked(&mut conn).await.map(|()| tracked.qty)
            },
        )
        .await;
    assert_eq!(report.winners().count(), 1, "{report:?}");
    assert_eq!(report.conflicts().count(), 1, "{report:?}");
    let (_, won) = report.winners().next().unwrap();
    let (_, conflict) = report.conflicts().next().unwrap();
    assert_eq!(current_values(conflict).get("qty"), Some(won.to_string().as_str()));
    assert_eq!(stored(&mut db.conn().await).await.qty, *won);
}

#[tokio::test]
async fn the_same_race_without_the_check_loses_an_update() {
    let db = async_test_db!();
    seed(&db, item(Some("red"), 10)).await;
    let report = Race::new(2)
        .run_asynchronous(
            async |_| {
                let mut conn = db.conn().await;
                let row = stored(&mut conn).await;
                (conn, row)
            },
            async |_, (mut conn, row): (Conn, Item)| {
                diesel::update(schema::shelf_items::table.find(row.id))
                    .set(schema::shelf_items::qty.eq(row.qty - 1))
                    .execute(&mut conn)
                    .await
                    .map_err(Error::from)
            },
        )
        .await;
    assert_eq!(report.winners().count(), 2, "{report:?}");
    assert_eq!(stored(&mut db.conn().await).await.qty, 9, "two decrements, one stored");
}

#[tokio::test]
async fn delete_checked_plain_guards_with_the_fields_and_tracked_with_the_values_as_read() {
    let db = async_test_db!();
    seed(&db, item(None, 3)).await;
    let mut conn = db.conn().await;

    let read = stored(&mut conn).await;
    raw_update(&mut db.conn().await, "UPDATE shelf_items SET qty = 4 WHERE id = 1").await;
    let conflict = expect_conflict(read.delete_checked(&mut conn).await);
    assert_eq!(current_values(&conflict).get("qty"), Some("4"));
    let read = stored(&mut conn).await;
    read.delete_checked(&mut conn).await.expect("delete as read");
    let conflict = expect_conflict(read.delete_checked(&mut conn).await);
    assert_eq!(conflict.state(), &ConflictState::Deleted);

    seed(&db, item(Some("red"), 3)).await;
    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().qty = 99;
    raw_update(&mut db.conn().await, "UPDATE shelf_items SET label = 'blue' WHERE id = 1").await;
    let conflict = expect_conflict(tracked.delete_checked(&mut conn).await);
    assert_eq!(expected_values(&conflict).get("label"), Some("Some(\"red\")"));
    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().qty = 99;
    tracked.delete_checked(&mut conn).await.expect("the original values still match");
    assert!(Item::find(&mut conn, 1).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn the_retry_helper_rereads_after_a_forced_conflict_and_saves() {
    let db = async_test_db!();
    seed(&db, item(Some("red"), 10)).await;
    let other = Mutex::new(db.conn().await);
    let attempts = AtomicU32::new(0);
    let source = || async { Ok::<_, diesel::ConnectionError>(db.conn().await) };
    let policy = RetryPolicy::new()
        .max_attempts(3)
        .backoff(Duration::ZERO, Duration::ZERO);
    let saved = occ::retry(&source, &policy, async |conn, attempt| {
        attempts.store(attempt.number(), Ordering::SeqCst);
        let mut tracked = Tracked::new(attempt.find::<Item>(conn, 1).await?);
        if attempt.number() == 1 {
            // Another writer takes one between this attempt's read and its save.
            let mut other = other.lock().await;
            raw_update(&mut other, "UPDATE shelf_items SET qty = qty - 1 WHERE id = 1").await;
        }
        tracked.edit().qty -= 1;
        tracked.save_checked(conn).await.map(|()| tracked.qty)
    })
    .await
    .expect("the second attempt saves");
    assert_eq!((AtomicU32::load(&attempts, Ordering::SeqCst), saved), (2, 8));
    assert_eq!(stored(&mut db.conn().await).await.qty, 8, "both decrements kept");
}
