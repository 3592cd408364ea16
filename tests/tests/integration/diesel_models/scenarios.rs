//! Diesel models in the checked writes, in both flavours.

flavour_prelude!();

use diesel::prelude::{ExpressionMethods, Insertable, QueryDsl, Queryable, Selectable};
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Error, Operation, Upserted, VersionToken};

use super::entities::{
    Counter, CounterPatch, CounterPut, NewCounter, Stock, counter, expect_conflict,
};
use super::schema;
use schema::counters;

#[flavour]
async fn stored(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).await.expect("the counter")
}

/// Inserts `counter(id, value)` and returns it as inserted, token and all.
#[flavour]
async fn inserted(conn: &mut Conn, id: i32, value: i32) -> Counter {
    let mut row = counter(id, value);
    row.insert_checked(conn).await.expect("insert");
    row
}

fn patch(value: Option<i32>, label: Option<Option<&str>>) -> CounterPatch {
    let label = label.map(|label| label.map(String::from));
    CounterPatch { value, label }
}

fn labelled(id: i32, value: i32, label: Option<&str>, version: i32) -> Counter {
    let mut row = counter(id, value);
    (row.label, row.version) = (label.map(String::from), version);
    row
}

#[flavour(test)]
async fn a_derived_patch_form_writes_its_set_fields_and_the_token() {
    let (_db, mut conn) = db_and_conn!();
    let etag = inserted(&mut conn, 1, 5).await.version;
    let six = patch(Some(6), None);
    let etag = Counter::update_by_key(&mut conn, 1, &etag, &six).await;
    assert_eq!(etag.expect("patch"), 2);
    let named = patch(None, Some(Some("six")));
    let etag = Counter::update_by_key(&mut conn, 1, &2, named).await;
    let expected = labelled(1, 6, Some("six"), etag.expect("owned patch"));
    assert_eq!(stored(&mut conn, 1).await, expected);

    // A form sent with a stale token is refused and writes nothing.
    let stale = patch(Some(0), None);
    let conflict = expect_conflict(Counter::update_by_key(&mut conn, 1, &2, &stale).await);
    assert_eq!(conflict.current::<i32>(), Some(3));
    assert_eq!(stored(&mut conn, 1).await.value, 6);
}

#[flavour(test)]
async fn a_derived_put_form_writes_none_as_null() {
    let (_db, mut conn) = db_and_conn!();
    let mut row = labelled(1, 5, Some("five"), 0);
    let etag = row.insert_checked(&mut conn).await.expect("insert");

    let label = None;
    let put = CounterPut { value: 7, label };
    let etag = Counter::update_by_key(&mut conn, 1, &etag, &put).await;
    let etag = etag.expect("put");
    assert_eq!(stored(&mut conn, 1).await, labelled(1, 7, None, etag));
}

#[flavour(test)]
async fn derived_forms_drive_soft_delete_and_bulk_update() {
    let (_db, mut conn) = db_and_conn!();
    let mut first = inserted(&mut conn, 1, 5).await;
    inserted(&mut conn, 2, 50).await;
    let mut in_flight = first.clone();

    let tombstone = patch(None, Some(Some("deleted")));
    let deleted = first.soft_delete_checked(&mut conn, &tombstone).await;
    deleted.expect("soft delete");
    assert_eq!(first.version, 2);
    assert_eq!(stored(&mut conn, 1).await.label.as_deref(), Some("deleted"));
    in_flight.value = 0;
    expect_conflict(in_flight.save_checked(&mut conn).await);

    let reset = patch(Some(0), None);
    let touched = Counter::bulk_update(counters::table.filter(counters::value.gt(10)), &reset)
        .execute(&mut conn)
        .await;
    assert_eq!(touched.expect("bulk update"), 1);
    assert_eq!(stored(&mut conn, 2).await, labelled(2, 0, None, 2));
}

#[flavour(test)]
async fn insert_checked_sets_the_initial_token_of_each_kind() {
    let (_db, mut conn) = db_and_conn!();
    let mut row = counter(1, 5);
    row.version = 41; // whatever the field held
    assert_eq!(row.insert_checked(&mut conn).await.expect("insert"), 1);
    assert_eq!(row.version, 1);
    assert_eq!(stored(&mut conn, 1).await, row);

    let placeholder = diesel_occ::UuidToken::initial();
    let mut stock = Stock {
        id: 1,
        available: 3,
        version: placeholder,
    };
    let etag = stock.insert_checked(&mut conn).await.expect("insert stock");
    assert_ne!(etag, placeholder, "a fresh initial token");
    assert!(etag.validate().is_ok());
    let stored_stock = Stock::find(&mut conn, 1).await.expect("stock");
    assert_eq!(stored_stock.version, etag);
}

#[flavour(test)]
async fn insert_checked_from_an_insertable_struct_adds_the_token() {
    let (_db, mut conn) = db_and_conn!();
    let new = NewCounter {
        id: 3,
        value: 9,
        label: Some("new"),
    };
    let etag = Counter::insert_checked_from(&mut conn, &new).await;
    assert_eq!(etag.expect("insert"), 1);
    assert_eq!(stored(&mut conn, 3).await, labelled(3, 9, Some("new"), 1));
    match Counter::insert_checked_from(&mut conn, new).await {
        Err(Error::UniqueViolation(taken)) => assert_eq!(taken.key(), None),
        other => panic!("expected a unique violation, got {other:?}"),
    }
}

#[flavour(test)]
async fn a_taken_key_is_a_typed_unique_violation_and_the_entity_is_untouched() {
    let (_db, mut conn) = db_and_conn!();
    inserted(&mut conn, 1, 5).await;
    let mut again = labelled(1, 6, None, 7);
    let error = again.insert_checked(&mut conn).await.unwrap_err();
    assert!(!error.is_retryable());
    match error {
        Error::UniqueViolation(taken) => {
            assert_eq!(taken.table(), "counters");
            let key = taken.key().map(ToString::to_string);
            assert_eq!(key.as_deref(), Some("(id=1)"));
        }
        other => panic!("expected a unique violation, got {other:?}"),
    }
    assert_eq!(again.version, 7, "untouched");
    assert_eq!(stored(&mut conn, 1).await.value, 5);
}

#[flavour(test)]
async fn upsert_inserts_updates_and_refuses_by_the_expected_token() {
    let (_db, mut conn) = db_and_conn!();
    let mut row = counter(1, 5);
    let upserted = row.upsert_checked(&mut conn, None).await;
    assert_eq!(upserted.expect("upsert"), Upserted::Inserted(1));
    assert_eq!(row.version, 1);

    row.value = 6;
    let upserted = row.upsert_checked(&mut conn, Some(&1)).await;
    assert_eq!(upserted.expect("upsert"), Upserted::Updated(2));
    assert_eq!(stored(&mut conn, 1).await, row);

    // A stale token: a conflict with the current one, nothing written.
    let mut stale = counter(1, 0);
    let conflict = expect_conflict(stale.upsert_checked(&mut conn, Some(&1)).await);
    assert_eq!(conflict.operation(), Operation::ClientToken);
    let tokens = (conflict.expected::<i32>(), conflict.current::<i32>());
    assert_eq!(tokens, (Some(1), Some(2)));
    // Expecting no row while one exists: a conflict too, even though the row holds
    // the very token an insert would store.
    inserted(&mut conn, 2, 1).await;
    let conflict = expect_conflict(counter(2, 0).upsert_checked(&mut conn, None).await);
    let current = 1.to_value();
    assert_eq!(conflict.state(), &ConflictState::Stale { current });
    assert_eq!(stale.version, 0, "untouched");
    assert_eq!(stored(&mut conn, 1).await.value, 6);
    assert_eq!(stored(&mut conn, 2).await.value, 1);
}

#[flavour(test)]
async fn an_upsert_expecting_a_token_updates_to_the_next_one() {
    let (_db, mut conn) = db_and_conn!();
    let at_version_0 = labelled(1, 1, None, 0);
    let seeded = diesel::insert_into(counters::table).values(&at_version_0);
    seeded.execute(&mut conn).await.expect("a row at version 0");
    let mut row = counter(1, 2);
    let upserted = row.upsert_checked(&mut conn, Some(&0)).await;
    assert_eq!(upserted.expect("upsert"), Upserted::Updated(1));
    assert_eq!(stored(&mut conn, 1).await, row);
}

/// An acknowledged delete is never undone by a writer that read the row before it: an
/// upsert that states the token it read gets a `Deleted` conflict and inserts nothing.
#[flavour(test)]
async fn an_upsert_expecting_a_token_never_recreates_a_deleted_row() {
    let (_db, mut conn) = db_and_conn!();
    let mut stale = inserted(&mut conn, 1, 5).await;
    let read = stale.version;
    let deleted = Counter::delete_by_key(&mut conn, 1, &read).await;
    deleted.expect("the acknowledged delete");

    stale.value = 6;
    let conflict = expect_conflict(stale.upsert_checked(&mut conn, Some(&read)).await);
    assert!(conflict.is_deleted(), "{conflict:?}");
    let retryable = conflict.is_retryable();
    assert!(!retryable, "a client-token conflict is not retried");
    assert_eq!(stale.version, read, "untouched");
    let gone = Counter::find(&mut conn, 1).await.unwrap_err();
    assert!(gone.is_not_found(), "still deleted");
}

diesel::table! {
    /// A table with a unique value besides its key.
    coded (id) {
        id -> Integer,
        code -> Text,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = coded)]
struct Coded {
    id: i32,
    code: String,
    #[occ(version)]
    version: i32,
}

fn coded(id: i32, code: &str) -> Coded {
    Coded {
        id,
        code: code.into(),
        version: 0,
    }
}

/// Another unique value taken is a typed unique violation, from the insert of an
/// upsert that expects no row and from the update of one that expects a token.
#[flavour(test)]
async fn an_upsert_that_meets_another_unique_value_is_a_typed_unique_violation() {
    let (_db, mut conn) = db_and_conn!();
    let create = "CREATE TABLE coded (id INTEGER PRIMARY KEY, \
        code VARCHAR(16) NOT NULL UNIQUE, version INTEGER NOT NULL)";
    run_sql(&mut conn, create).await;
    coded(1, "a").insert_checked(&mut conn).await.expect("a");
    let mut second = coded(2, "b");
    second.insert_checked(&mut conn).await.expect("insert");

    let taken = coded(3, "a").upsert_checked(&mut conn, None).await;
    assert!(matches!(taken, Err(Error::UniqueViolation(_))), "{taken:?}");
    second.code = "a".into();
    let taken = second.upsert_checked(&mut conn, Some(&1)).await;
    assert!(matches!(taken, Err(Error::UniqueViolation(_))), "{taken:?}");
    assert_eq!(second.version, 1, "untouched");
    assert_eq!(Coded::find(&mut conn, 2).await.expect("read").code, "b");
}

/// Inside a transaction whose snapshot predates the row (MySQL's default REPEATABLE
/// READ), an upsert expecting no row meets the latest row: a conflict, not a unique
/// violation. PostgreSQL's default READ COMMITTED sees it too; SQLite has one writer.
#[flavour(test)]
async fn an_upsert_expecting_no_row_meets_a_row_its_snapshot_does_not_see() {
    use diesel_occ_tests::Backend;
    if Conn::BACKEND == Backend::Sqlite {
        return;
    }
    let db = db!();
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    let outcome = a
        .transaction(async |a| {
            let none = Counter::find(a, 1).await.unwrap_err();
            assert!(none.is_not_found(), "the snapshot: no row");
            inserted(&mut b, 1, 5).await;
            Ok::<_, Error>(counter(1, 6).upsert_checked(a, None).await)
        })
        .await;
    let conflict = expect_conflict(outcome.expect("the transaction commits"));
    assert_eq!(conflict.current::<i32>(), Some(1));
    assert_eq!(stored(&mut b, 1).await.value, 5);
}

/// A conflict of a write that takes the token as an argument cannot be resolved by
/// running the same call again: the retry helper returns it after one attempt, as a
/// client-token conflict, and does not count the row as hot.
#[flavour(test)]
async fn client_token_conflicts_are_not_retried_nor_hot() {
    let (db, mut conn) = db_and_conn!();
    let mut row = inserted(&mut conn, 1, 5).await;
    row.save_checked(&mut conn).await.expect("version 2");
    let memory = diesel_occ::retry::HotRows::new();
    // Five attempts; the row would be hot after one conflict.
    let policy = diesel_occ::retry::RetryPolicy::new().max_attempts(5);
    let policy = policy.escalate_hot_rows_with(&memory, 1, std::time::Duration::from_secs(60));
    let source = || async { Ok::<_, diesel::ConnectionError>(db.conn().await) };
    for write in ["update_by_key", "delete_by_key", "upsert_checked"] {
        let attempts = std::sync::atomic::AtomicU32::new(0);
        let outcome = retry(&source, &policy, async |conn, _| {
            attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            match write {
                "update_by_key" => {
                    let patch = patch(Some(0), None);
                    Counter::update_by_key(conn, 1, &1, patch).await.map(drop)
                }
                "delete_by_key" => Counter::delete_by_key(conn, 1, &1).await,
                _ => counter(1, 0).upsert_checked(conn, Some(&1)).await.map(drop),
            }
        })
        .await;
        let conflict = expect_conflict(outcome);
        assert_eq!(conflict.operation(), Operation::ClientToken, "{write}");
        assert_eq!(attempts.into_inner(), 1, "{write} is not retried");
    }
    assert!(!memory.is_hot::<Counter>(&1), "the row is not hot");
    assert_eq!(stored(&mut conn, 1).await, row, "nothing written");
}

/// Four clients upsert row 1 from `expected` at once: one `wins`, the others conflict
/// with the winner's token, and the winner's row is stored.
#[flavour]
async fn one_upsert_wins(db: &TestDb<Conn>, expected: Option<i32>, wins: Upserted<i32>) {
    let connect = async |_: usize| db.conn().await;
    let report = Race::new(4)
        .run_in_flavour(connect, async |writer, mut conn: Conn| {
            let mut row = counter(1, 10 + writer as i32);
            let outcome = row.upsert_checked(&mut conn, expected.as_ref()).await;
            outcome.map(|outcome| (outcome, row))
        })
        .await;
    let outcomes = report.into_values().unwrap();
    let won: Vec<_> = outcomes.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "{outcomes:?}");
    let (outcome, winner) = won[0];
    assert_eq!(outcome, &wins);
    for loss in outcomes.iter().filter_map(|r| r.as_ref().err()) {
        let current = loss.as_conflict().and_then(|c| c.current::<i32>());
        assert_eq!(current, Some(*wins.token()), "{loss:?}");
    }
    let stored_row = stored(&mut db.conn().await, 1).await;
    assert_eq!(stored_row, *winner, "the acknowledged write");
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn concurrent_upserts_of_one_key_insert_once_and_lose_nothing() {
    let db = db!();
    one_upsert_wins(&db, None, Upserted::Inserted(1)).await;
    // All four read the inserted token: one update, three conflicts.
    one_upsert_wins(&db, Some(1), Upserted::Updated(2)).await;
}
