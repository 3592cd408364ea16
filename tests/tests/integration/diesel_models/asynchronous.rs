//! Diesel models in the checked writes, on an async connection (diesel-async): the twins
//! of the blocking scenarios.

use diesel::prelude::{ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Error, Operation, Upserted, VersionToken};

use super::entities::{
    Counter, CounterPatch, CounterPut, NewCounter, Stock, counter, expect_conflict,
};
use super::{AsyncConn as Conn, schema};
use schema::counters;

async fn stored(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).await.expect("the counter")
}

#[tokio::test]
async fn derived_forms_drive_update_by_key_soft_delete_and_bulk_update() {
    let db = async_test_db!();
    let mut conn = db.conn().await;
    let mut first = counter(1, 5);
    let etag = first.insert_checked(&mut conn).await.expect("insert");
    counter(2, 50).insert_checked(&mut conn).await.expect("insert");

    let patch = CounterPatch {
        value: Some(6),
        label: None,
    };
    let etag = Counter::update_by_key(&mut conn, 1, &etag, &patch)
        .await
        .expect("patch");
    let put = CounterPut {
        value: 7,
        label: None,
    };
    let etag = Counter::update_by_key(&mut conn, 1, &etag, &put)
        .await
        .expect("put");
    assert_eq!(etag, 3);
    let conflict = expect_conflict(Counter::update_by_key(&mut conn, 1, &1, &patch).await);
    assert_eq!(conflict.current::<i32>(), Some(3));

    let mut first = stored(&mut conn, 1).await;
    let tombstone = CounterPatch {
        value: None,
        label: Some(Some("deleted".into())),
    };
    first
        .soft_delete_checked(&mut conn, &tombstone)
        .await
        .expect("soft delete");
    assert_eq!(stored(&mut conn, 1).await.label.as_deref(), Some("deleted"));

    let reset = CounterPatch {
        value: Some(0),
        label: None,
    };
    let touched = Counter::bulk_update(counters::table.filter(counters::value.gt(10)), &reset)
        .execute(&mut conn)
        .await
        .expect("bulk update");
    assert_eq!(touched, 1);
    assert_eq!(stored(&mut conn, 2).await.version, 2);
}

#[tokio::test]
async fn checked_inserts_set_the_initial_token_and_refuse_a_taken_key() {
    let db = async_test_db!();
    let mut conn = db.conn().await;
    let mut row = counter(1, 5);
    row.version = 41;
    assert_eq!(row.insert_checked(&mut conn).await.expect("insert"), 1);
    assert_eq!(stored(&mut conn, 1).await, row);

    let mut stock = Stock {
        id: 1,
        available: 3,
        version: diesel_occ::UuidToken::initial(),
    };
    let placeholder = stock.version;
    let etag = stock.insert_checked(&mut conn).await.expect("insert stock");
    assert_ne!(etag, placeholder);
    assert_eq!(Stock::find(&mut conn, 1).await.expect("stock").version, etag);

    let new = NewCounter {
        id: 3,
        value: 9,
        label: None,
    };
    assert_eq!(
        Counter::insert_checked_from(&mut conn, &new).await.expect("insert from"),
        1
    );

    let mut again = counter(1, 6);
    match again.insert_checked(&mut conn).await {
        Err(Error::UniqueViolation(taken)) => assert_eq!(taken.table(), "counters"),
        other => panic!("expected a unique violation, got {other:?}"),
    }
    assert_eq!(again.version, 0, "untouched");
}

#[tokio::test]
async fn upsert_inserts_updates_and_refuses_by_the_expected_token() {
    let db = async_test_db!();
    let mut conn = db.conn().await;
    let mut row = counter(1, 5);
    assert_eq!(
        row.upsert_checked(&mut conn, None).await.expect("upsert"),
        Upserted::Inserted(1)
    );
    row.value = 6;
    assert_eq!(
        row.upsert_checked(&mut conn, Some(&1)).await.expect("upsert"),
        Upserted::Updated(2)
    );
    assert_eq!(stored(&mut conn, 1).await, row);

    let conflict = expect_conflict(counter(1, 0).upsert_checked(&mut conn, Some(&1)).await);
    assert_eq!(conflict.operation(), Operation::ClientToken);
    assert_eq!(conflict.current::<i32>(), Some(2));
    let conflict = expect_conflict(counter(1, 0).upsert_checked(&mut conn, None).await);
    assert_eq!(
        conflict.state(),
        &ConflictState::Stale {
            current: 2.to_value()
        }
    );
    assert_eq!(stored(&mut conn, 1).await.value, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_upserts_of_one_key_insert_once_and_lose_nothing() {
    let db = async_test_db!();
    let report = Race::new(4)
        .run_asynchronous(
            async |_| db.conn().await,
            async |writer, mut conn: Conn| {
                let mut row = counter(1, writer as i32);
                let outcome = row.upsert_checked(&mut conn, None).await;
                outcome.map(|outcome| (outcome, row))
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let inserted: Vec<_> = outcomes.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(inserted.len(), 1, "{outcomes:?}");
    assert_eq!(inserted[0].0, Upserted::Inserted(1));
    assert_eq!(stored(&mut db.conn().await, 1).await, inserted[0].1);

    let report = Race::new(4)
        .run_asynchronous(
            async |_| db.conn().await,
            async |writer, mut conn: Conn| {
                let mut row = counter(1, 10 + writer as i32);
                let outcome = row.upsert_checked(&mut conn, Some(&1)).await;
                outcome.map(|outcome| (outcome, row))
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let updated: Vec<_> = outcomes.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(updated.len(), 1, "{outcomes:?}");
    assert_eq!(updated[0].0, Upserted::Updated(2));
    for loss in outcomes.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(loss.as_conflict().and_then(|c| c.current::<i32>()), Some(2));
    }
    assert_eq!(stored(&mut db.conn().await, 1).await, updated[0].1);
}

/// An acknowledged delete is never undone by a writer that read the row before it.
#[tokio::test]
async fn an_upsert_expecting_a_token_never_recreates_a_deleted_row() {
    let db = async_test_db!();
    let mut conn = db.conn().await;
    let mut stale = counter(1, 5);
    let read = stale.insert_checked(&mut conn).await.expect("insert");
    Counter::delete_by_key(&mut conn, 1, &read).await.expect("the acknowledged delete");

    stale.value = 6;
    let conflict = expect_conflict(stale.upsert_checked(&mut conn, Some(&read)).await);
    assert!(conflict.is_deleted(), "{conflict:?}");
    assert!(!conflict.is_retryable(), "a client-token conflict is not retried");
    assert_eq!(stale.version, read, "untouched");
    assert!(Counter::find(&mut conn, 1).await.unwrap_err().is_not_found(), "still deleted");
}

diesel::table! {
    /// A table with a unique value besides its key.
    coded (id) {
        id -> Integer,
        code -> Text,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, diesel::Queryable, diesel::Selectable, diesel::Insertable, Versioned)]
#[diesel(table_name = coded)]
struct Coded {
    id: i32,
    code: String,
    #[occ(version)]
    version: i32,
}

/// Another unique value taken is a typed unique violation, from the insert of an
/// upsert that expects no row and from the update of one that expects a token.
#[tokio::test]
async fn an_upsert_that_meets_another_unique_value_is_a_typed_unique_violation() {
    let db = async_test_db!();
    let mut conn = db.conn().await;
    diesel::sql_query(
        "CREATE TABLE coded (id INTEGER PRIMARY KEY, code VARCHAR(16) NOT NULL UNIQUE, \
         version INTEGER NOT NULL)",
    )
    .execute(&mut conn)
    .await
    .expect("table");
    let coded = |id, code: &str| Coded { id, code: code.into(), version: 0 };
    coded(1, "a").insert_checked(&mut conn).await.expect("insert");
    let mut second = coded(2, "b");
    second.insert_checked(&mut conn).await.expect("insert");

    match coded(3, "a").upsert_checked(&mut conn, None).await {
        Err(Error::UniqueViolation(_)) => {}
        other => panic!("expected a unique violation, got {other:?}"),
    }
    second.code = "a".into();
    match second.upsert_checked(&mut conn, Some(&1)).await {
        Err(Error::UniqueViolation(_)) => {}
        other => panic!("expected a unique violation, got {other:?}"),
    }
    assert_eq!(second.version, 1, "untouched");
    assert_eq!(Coded::find(&mut conn, 2).await.expect("read").code, "b");
}

/// A client-token conflict is returned after one attempt by the async retry helper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_token_conflicts_are_not_retried_nor_hot() {
    use diesel_occ::retry::{HotRows, RetryPolicy};
    use std::time::Duration;

    let db = async_test_db!();
    let mut conn = db.conn().await;
    let mut row = counter(1, 5);
    row.insert_checked(&mut conn).await.expect("insert");
    row.save_checked(&mut conn).await.expect("the row moves to version 2");
    let memory = HotRows::new();
    let policy = RetryPolicy::new()
        .max_attempts(5)
        .backoff(Duration::from_millis(1), Duration::from_millis(2))
        .escalate_hot_rows_with(&memory, 1, Duration::from_secs(60));
    let pool = crate::pools::warm_pool(&db, 1).await;
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let attempts = &attempts;
    let outcome = diesel_occ::asynchronous::retry(&pool, &policy, async |conn, _| {
        attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let patch = CounterPatch { value: Some(0), label: None };
        Counter::update_by_key(conn, 1, &1, &patch).await
    })
    .await;
    let conflict = expect_conflict(outcome);
    assert_eq!(conflict.operation(), Operation::ClientToken);
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 1, "not retried");
    assert!(!memory.is_hot::<Counter>(&1), "the row is not hot");
    assert_eq!(stored(&mut conn, 1).await, row, "nothing written");
}
