//! Versionless entities, in both flavours.

flavour_prelude!();

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use diesel::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Error, InvalidTokenReason, Tracked};
use diesel_occ_tests::statements::{StatementCounter, sql_only};

use super::entities::{Item, current_values, expect_conflict, expected_values, item};
use super::schema;

/// A label as a conflict shows it.
const BLUE: Option<&str> = Some("Some(\"blue\")");
const RED: Option<&str> = Some("Some(\"red\")");

#[flavour]
async fn seed(db: &TestDb<Conn>, row: Item) {
    let mut conn = db.conn().await;
    insert_rows!(&mut conn, schema::shelf_items::table, row);
}

#[flavour]
async fn stored(conn: &mut Conn) -> Item {
    Item::find(conn, 1).await.expect("the item")
}

/// The item's `qty` as stored now, read on a connection of its own.
#[flavour]
async fn stored_qty(db: &TestDb<Conn>) -> i32 {
    stored(&mut db.conn().await).await.qty
}

#[flavour(test)]
async fn tracked_save_is_one_update_guarded_by_the_check_columns_as_read() {
    let db = db!();
    seed(&db, item(Some("red"), 3)).await;
    let mut conn = db.conn().await;
    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().qty = 4;
    tracked.edit().note = "recounted".into();

    let log = StatementCounter::install_in_flavour(&mut conn);
    tracked.save_checked(&mut conn).await.expect("tracked save");
    let statements = log.take_sql();
    assert_eq!(statements.len(), 1, "one statement: {statements:?}");
    let sql = sql_only(&statements[0]);
    let guard = &sql[sql.find("WHERE").expect("a WHERE")..];
    let (label, qty) = (guard.contains("label"), guard.contains("qty"));
    assert!(label, "the unedited check column is compared: {sql}");
    assert!(qty, "the edited check column is compared: {sql}");
    assert!(!guard.contains("note"), "an unchecked column is not: {sql}");

    let base = tracked.original();
    assert_eq!(base, tracked.current(), "saved values become the base");
    let row = stored(&mut conn).await;
    assert_eq!((row.qty, row.note.as_str()), (4, "recounted"));
    // The next save is guarded by the values just written.
    tracked.edit().qty = 5;
    tracked.save_checked(&mut conn).await.expect("second save");
    assert_eq!(stored(&mut conn).await.qty, 5);
}

#[flavour(test)]
async fn a_null_check_column_matches_null_and_detects_null_to_value_and_back() {
    let db = db!();
    seed(&db, item(None, 3)).await;
    let mut conn = db.conn().await;

    // NULL as read, NULL now: the save matches (a plain `=` never would).
    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().note = "first".into();
    let saved = tracked.save_checked(&mut conn).await;
    saved.expect("NULL matches NULL");

    // NULL -> 'blue' by another writer: detected.
    let mut stale = Tracked::new(stored(&mut conn).await);
    raw_sql(&db, "UPDATE shelf_items SET label = 'blue' WHERE id = 1").await;
    stale.edit().note = "lost".into();
    let conflict = expect_conflict(stale.save_checked(&mut conn).await);
    assert_eq!(current_values(&conflict).get("label"), BLUE);
    assert_eq!(current_values(&conflict).get("qty"), Some("3"));
    assert_eq!(expected_values(&conflict).get("label"), Some("None"));
    let shown = format!("{conflict} {conflict:?}");
    let no_row_data = shown.contains("label") && !shown.contains("blue");
    assert!(no_row_data, "no row data: {shown}");
    assert_eq!(stale.note, "lost", "the entity is left as it was");
    assert_eq!(stale.original().label, None);

    // 'blue' -> NULL by another writer: detected too.
    let mut stale = Tracked::new(stored(&mut conn).await);
    raw_sql(&db, "UPDATE shelf_items SET label = NULL WHERE id = 1").await;
    stale.edit().note = "lost".into();
    let conflict = expect_conflict(stale.save_checked(&mut conn).await);
    assert_eq!(current_values(&conflict).get("label"), Some("None"));
    assert_eq!(expected_values(&conflict).get("label"), BLUE);
    let note = stored(&mut conn).await.note;
    assert_eq!(note, "first", "neither stale save wrote");
}

/// Only the check columns are compared, as EF Core's `[ConcurrencyCheck]`: the columns
/// to check are those whose concurrent change must be detected.
#[flavour(test)]
async fn only_the_check_columns_are_compared() {
    let db = db!();
    seed(&db, item(Some("red"), 3)).await;
    let mut conn = db.conn().await;

    // A concurrent change of the unchecked `note` is not detected: last writer wins.
    let mut mine = Tracked::new(stored(&mut conn).await);
    raw_sql(&db, "UPDATE shelf_items SET note = 'theirs' WHERE id = 1").await;
    mine.edit().note = "mine".into();
    let saved = mine.save_checked(&mut conn).await;
    saved.expect("note is unchecked");
    assert_eq!(stored(&mut conn).await.note, "mine");

    // A concurrent change of a check column is, even when the edit leaves it alone.
    let mut mine = Tracked::new(stored(&mut conn).await);
    raw_sql(&db, "UPDATE shelf_items SET qty = 7 WHERE id = 1").await;
    mine.edit().note = "mine again".into();
    let conflict = expect_conflict(mine.save_checked(&mut conn).await);
    assert_eq!(current_values(&conflict).get("qty"), Some("7"));

    // With nothing edited, the save still checks the columns as read.
    let mut unchanged = Tracked::new(item(Some("red"), 3));
    assert!(unchanged.is_unchanged());
    let conflict = expect_conflict(unchanged.save_checked(&mut conn).await);
    let stale = matches!(conflict.state(), ConflictState::Stale { .. });
    assert!(stale, "{conflict:?}");
    let mut fresh = Tracked::new(stored(&mut conn).await);
    let saved = fresh.save_checked(&mut conn).await;
    saved.expect("an unedited save of the current row");
    assert_eq!(stored(&mut conn).await.note, "mine", "nothing lost");
}

#[flavour(test)]
async fn two_writers_one_wins_and_the_loser_names_the_current_values() {
    let db = db!();
    seed(&db, item(Some("red"), 10)).await;
    let report = Race::new(2)
        .run_in_flavour(
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
    let won_qty = won.to_string();
    assert_eq!(current_values(conflict).get("qty"), Some(won_qty.as_str()));
    assert_eq!(expected_values(conflict).get("qty"), Some("10"));
    assert!(conflict.is_retryable());
    assert_eq!(conflict.current::<i32>(), None, "not an integer token");
    assert_eq!(stored_qty(&db).await, *won, "the winner's write stands");
}

/// The control: the same race through an UPDATE by key alone loses an update, so the
/// race above really overlaps its writers.
#[flavour(test)]
async fn the_same_race_without_the_check_loses_an_update() {
    let db = db!();
    seed(&db, item(Some("red"), 10)).await;
    let report = Race::new(2)
        .run_in_flavour(
            async |_| {
                let mut conn = db.conn().await;
                let row = stored(&mut conn).await;
                (conn, row)
            },
            async |_, (mut conn, row): (Conn, Item)| {
                use schema::shelf_items::{qty, table};
                let update = diesel::update(table.find(row.id)).set(qty.eq(row.qty - 1));
                update.execute(&mut conn).await.map_err(Error::from)
            },
        )
        .await;
    assert_eq!(report.winners().count(), 2, "{report:?}");
    assert_eq!(stored_qty(&db).await, 9, "two decrements, one stored");
}

#[flavour(test)]
async fn delete_checked_plain_guards_with_the_fields_and_tracked_with_the_values_as_read() {
    let db = db!();
    seed(&db, item(None, 3)).await;
    let mut conn = db.conn().await;

    // Plain: the entity's fields are the values as read.
    let read = stored(&mut conn).await;
    raw_sql(&db, "UPDATE shelf_items SET qty = 4 WHERE id = 1").await;
    let conflict = expect_conflict(read.delete_checked(&mut conn).await);
    assert_eq!(current_values(&conflict).get("qty"), Some("4"));
    assert!(expected_values(&conflict).is_as_read());
    let read = stored(&mut conn).await;
    let deleted = read.delete_checked(&mut conn).await;
    deleted.expect("delete as read");
    let conflict = expect_conflict(read.delete_checked(&mut conn).await);
    assert_eq!(conflict.state(), &ConflictState::Deleted);

    // Tracked: guarded by the original values, whatever the edits.
    seed(&db, item(Some("red"), 3)).await;
    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().qty = 99;
    tracked.edit().label = None;
    raw_sql(&db, "UPDATE shelf_items SET label = 'blue' WHERE id = 1").await;
    let conflict = expect_conflict(tracked.delete_checked(&mut conn).await);
    assert_eq!(expected_values(&conflict).get("label"), RED);
    assert_eq!(current_values(&conflict).get("label"), BLUE);
    let mut tracked = Tracked::new(stored(&mut conn).await);
    tracked.edit().qty = 99;
    let deleted = tracked.delete_checked(&mut conn).await;
    deleted.expect("the original values still match");
    assert!(Item::find(&mut conn, 1).await.unwrap_err().is_not_found());
}

/// Another writer takes one between the first attempt's read and its save: the retry
/// helper reads again and the second attempt saves, both decrements kept.
#[flavour(test)]
async fn the_retry_helper_rereads_after_a_forced_conflict_and_saves() {
    let db = db!();
    seed(&db, item(Some("red"), 10)).await;
    let attempts = AtomicU32::new(0);
    let source = || async { Ok::<_, diesel::ConnectionError>(db.conn().await) };
    let policy = RetryPolicy::new().max_attempts(3);
    let policy = policy.backoff(Duration::ZERO, Duration::ZERO);
    let saved = retry(&source, &policy, async |conn, attempt| {
        attempts.store(attempt.number(), Ordering::SeqCst);
        let mut tracked = Tracked::new(attempt.find::<Item>(conn, 1).await?);
        if attempt.number() == 1 {
            raw_sql(&db, "UPDATE shelf_items SET qty = qty - 1 WHERE id = 1").await;
        }
        tracked.edit().qty -= 1;
        tracked.save_checked(conn).await.map(|()| tracked.qty)
    })
    .await
    .expect("the second attempt saves");
    assert_eq!((attempts.into_inner(), saved), (2, 8));
    assert_eq!(stored_qty(&db).await, 8, "both decrements kept");
}

#[flavour(test)]
async fn a_versionless_entity_has_no_client_token() {
    let db = db!();
    seed(&db, item(Some("red"), 3)).await;
    let mut conn = db.conn().await;
    let read = stored(&mut conn).await;
    let found = Item::find_checked(&mut conn, 1, read.token()).await;
    let Err(Error::InvalidToken(invalid)) = found else {
        panic!("expected an invalid token, got {found:?}");
    };
    assert_eq!(invalid.reason, InvalidTokenReason::Versionless);
    let decoded = <<Item as Versioned>::Token as VersionToken>::decode("3");
    assert_eq!(decoded.unwrap_err().reason, InvalidTokenReason::Versionless);
    assert_eq!(read.token().encode(), "", "nothing to send a client");
}
