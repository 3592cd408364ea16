//! Diesel models in the checked writes, on a blocking connection.

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Error, Operation, Upserted, VersionToken};

use super::entities::{
    Counter, CounterPatch, CounterPut, NewCounter, Stock, counter, expect_conflict,
};
use super::{Conn, schema};
use schema::counters;

fn stored(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).expect("the counter")
}

#[test]
fn a_derived_patch_form_writes_its_set_fields_and_the_token() {
    let db = test_db!();
    let mut conn = db.conn();
    let etag = counter(1, 5).insert_checked(&mut conn).expect("insert");

    let patch = CounterPatch {
        value: Some(6),
        label: None,
    };
    let etag = Counter::update_by_key(&mut conn, 1, &etag, &patch).expect("patch");
    assert_eq!(etag, 2);
    let patch = CounterPatch {
        value: None,
        label: Some(Some("six".into())),
    };
    let etag = Counter::update_by_key(&mut conn, 1, &etag, patch).expect("owned patch");
    assert_eq!(
        stored(&mut conn, 1),
        Counter {
            id: 1,
            value: 6,
            label: Some("six".into()),
            version: etag,
        }
    );

    // A form sent with a stale token is refused and writes nothing.
    let stale = CounterPatch {
        value: Some(0),
        label: None,
    };
    let conflict = expect_conflict(Counter::update_by_key(&mut conn, 1, &2, &stale));
    assert_eq!(conflict.current::<i32>(), Some(3));
    assert_eq!(stored(&mut conn, 1).value, 6);
}

#[test]
fn a_derived_put_form_writes_none_as_null() {
    let db = test_db!();
    let mut conn = db.conn();
    let mut row = counter(1, 5);
    row.label = Some("five".into());
    let etag = row.insert_checked(&mut conn).expect("insert");

    let put = CounterPut {
        value: 7,
        label: None,
    };
    let etag = Counter::update_by_key(&mut conn, 1, &etag, &put).expect("put");
    assert_eq!(stored(&mut conn, 1), Counter { id: 1, value: 7, label: None, version: etag });
}

#[test]
fn derived_forms_drive_soft_delete_and_bulk_update() {
    let db = test_db!();
    let mut conn = db.conn();
    let mut first = counter(1, 5);
    first.insert_checked(&mut conn).expect("insert");
    counter(2, 50).insert_checked(&mut conn).expect("insert");
    let mut in_flight = first.clone();

    let tombstone = CounterPatch {
        value: None,
        label: Some(Some("deleted".into())),
    };
    first.soft_delete_checked(&mut conn, &tombstone).expect("soft delete");
    assert_eq!(first.version, 2);
    assert_eq!(stored(&mut conn, 1).label.as_deref(), Some("deleted"));
    in_flight.value = 0;
    expect_conflict(in_flight.save_checked(&mut conn));

    let reset = CounterPatch {
        value: Some(0),
        label: None,
    };
    let touched = Counter::bulk_update(counters::table.filter(counters::value.gt(10)), &reset)
        .execute(&mut conn)
        .expect("bulk update");
    assert_eq!(touched, 1);
    assert_eq!(
        (stored(&mut conn, 2).value, stored(&mut conn, 2).version),
        (0, 2)
    );
}

#[test]
fn insert_checked_sets_the_initial_token_of_each_kind() {
    let db = test_db!();
    let mut conn = db.conn();
    let mut row = counter(1, 5);
    row.version = 41; // whatever the field held
    assert_eq!(row.insert_checked(&mut conn).expect("insert"), 1);
    assert_eq!(row.version, 1);
    assert_eq!(stored(&mut conn, 1), row);

    let mut stock = Stock {
        id: 1,
        available: 3,
        version: diesel_occ::UuidToken::initial(),
    };
    let placeholder = stock.version;
    let etag = stock.insert_checked(&mut conn).expect("insert stock");
    assert_ne!(etag, placeholder, "a fresh initial token");
    assert!(etag.validate().is_ok());
    assert_eq!(Stock::find(&mut conn, 1).expect("stock").version, etag);
}

#[test]
fn insert_checked_from_an_insertable_struct_adds_the_token() {
    let db = test_db!();
    let mut conn = db.conn();
    let new = NewCounter {
        id: 3,
        value: 9,
        label: Some("new"),
    };
    let etag = Counter::insert_checked_from(&mut conn, &new).expect("insert");
    assert_eq!(etag, 1);
    assert_eq!(
        stored(&mut conn, 3),
        Counter { id: 3, value: 9, label: Some("new".into()), version: 1 }
    );
    match Counter::insert_checked_from(&mut conn, new) {
        Err(Error::UniqueViolation(taken)) => assert_eq!(taken.key(), None),
        other => panic!("expected a unique violation, got {other:?}"),
    }
}

#[test]
fn a_taken_key_is_a_typed_unique_violation_and_the_entity_is_untouched() {
    let db = test_db!();
    let mut conn = db.conn();
    counter(1, 5).insert_checked(&mut conn).expect("insert");
    let mut again = counter(1, 6);
    again.version = 7;
    let error = again.insert_checked(&mut conn).unwrap_err();
    assert!(!error.is_retryable());
    match error {
        Error::UniqueViolation(taken) => {
            assert_eq!(taken.table(), "counters");
            assert_eq!(taken.key().map(ToString::to_string).as_deref(), Some("(id=1)"));
        }
        other => panic!("expected a unique violation, got {other:?}"),
    }
    assert_eq!(again.version, 7, "untouched");
    assert_eq!(stored(&mut conn, 1).value, 5);
}

#[test]
fn upsert_inserts_updates_and_refuses_by_the_expected_token() {
    let db = test_db!();
    let mut conn = db.conn();
    let mut row = counter(1, 5);
    assert_eq!(row.upsert_checked(&mut conn, None).expect("upsert"), Upserted::Inserted(1));
    assert_eq!(row.version, 1);

    row.value = 6;
    assert_eq!(row.upsert_checked(&mut conn, Some(&1)).expect("upsert"), Upserted::Updated(2));
    assert_eq!(stored(&mut conn, 1), row);

    // A stale token: a conflict with the current one, nothing written.
    let mut stale = counter(1, 0);
    let conflict = expect_conflict(stale.upsert_checked(&mut conn, Some(&1)));
    assert_eq!(conflict.operation(), Operation::Upsert);
    assert_eq!(
        (conflict.expected::<i32>(), conflict.current::<i32>()),
        (Some(1), Some(2))
    );
    // Expecting no row while one exists: a conflict too, even though the row holds
    // the very token an insert would store.
    let mut create = counter(2, 1);
    create.insert_checked(&mut conn).expect("insert");
    let conflict = expect_conflict(counter(2, 0).upsert_checked(&mut conn, None));
    assert_eq!(
        conflict.state(),
        &ConflictState::Stale { current: 1.to_value() }
    );
    assert_eq!(stale.version, 0, "untouched");
    assert_eq!(stored(&mut conn, 1).value, 6);
    assert_eq!(stored(&mut conn, 2).value, 1);
}

#[test]
fn an_update_that_would_store_the_initial_token_skips_past_it() {
    let db = test_db!();
    let mut conn = db.conn();
    diesel::insert_into(counters::table)
        .values((counters::id.eq(1), counters::value.eq(1), counters::version.eq(0)))
        .execute(&mut conn)
        .expect("a row at version 0");
    let mut row = counter(1, 2);
    assert_eq!(row.upsert_checked(&mut conn, Some(&0)).expect("upsert"), Upserted::Updated(2));
    assert_eq!(stored(&mut conn, 1).version, 2);
}

#[test]
fn concurrent_upserts_of_one_key_insert_once_and_lose_nothing() {
    let db = test_db!();
    // Four clients create the same row: one insert, three conflicts.
    let report = Race::new(4).run(
        |_| db.conn(),
        |writer, mut conn| {
            let mut row = counter(1, writer as i32);
            row.upsert_checked(&mut conn, None).map(|outcome| (outcome, row))
        },
    );
    let outcomes = report.into_values().unwrap();
    let inserted: Vec<_> = outcomes.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(inserted.len(), 1, "{outcomes:?}");
    let (outcome, winner) = inserted[0];
    assert_eq!(outcome, &Upserted::Inserted(1));
    for loss in outcomes.iter().filter_map(|r| r.as_ref().err()) {
        let conflict = loss.as_conflict().expect("a conflict");
        assert_eq!(conflict.current::<i32>(), Some(1), "{loss:?}");
    }
    assert_eq!(stored(&mut db.conn(), 1), *winner);

    // Four clients update it from the token they all read: one update, three conflicts.
    let report = Race::new(4).run(
        |_| db.conn(),
        |writer, mut conn| {
            let mut row = counter(1, 10 + writer as i32);
            row.upsert_checked(&mut conn, Some(&1)).map(|outcome| (outcome, row))
        },
    );
    let outcomes = report.into_values().unwrap();
    let updated: Vec<_> = outcomes.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(updated.len(), 1, "{outcomes:?}");
    let (outcome, winner) = updated[0];
    assert_eq!(outcome, &Upserted::Updated(2));
    assert_eq!(outcomes.iter().filter(|r| r.is_err()).count(), 3);
    assert_eq!(stored(&mut db.conn(), 1), *winner, "the one acknowledged write is stored");
}
