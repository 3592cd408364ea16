//! The guarded writes on a blocking connection.

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{ConflictState, Error, InvalidTokenReason, TokenValue, UuidToken};
use diesel_occ_tests::TestDb;
use diesel_occ_tests::statements::StatementCounter;

use super::super::{Counter, counter, state};
use super::{Conn, schema};
use diesel_occ_tests::schema::pg::counters;
use schema::stock;

/// A migrated database holding counters 1 (value 10) and 2 (value 20), or `None` after
/// a SKIPPED line when the backend is unreachable and not required.
fn database(scenario: &str) -> Option<TestDb<Conn>> {
    let db = TestDb::<Conn>::create(&format!("client_token_{scenario}"))?;
    diesel::insert_into(counters::table)
        .values([counter(1, 10), counter(2, 20)])
        .execute(&mut db.conn())
        .expect("seed counters");
    Some(db)
}

/// The row as the database holds it now.
fn row(conn: &mut Conn, id: i32) -> Option<(i32, i32)> {
    counters::table
        .find(id)
        .select((counters::value, counters::version))
        .get_result(conn)
        .optional()
        .expect("read the row")
}

#[test]
fn save_where_writes_when_the_predicate_holds() {
    let Some(db) = database("save_where_writes_when_the_predicate_holds") else {
        return;
    };
    let conn = &mut db.conn();
    let mut entity = Counter::find(conn, 1).unwrap();
    entity.value = 11;
    entity
        .save_checked_where(conn, counters::value.eq(10))
        .unwrap();
    assert_eq!(entity.version, 2);
    assert_eq!(row(conn, 1), Some((11, 2)));
}

#[test]
fn save_where_is_unmatched_when_the_predicate_fails() {
    let Some(db) = database("save_where_is_unmatched_when_the_predicate_fails") else {
        return;
    };
    let conn = &mut db.conn();
    let mut entity = Counter::find(conn, 1).unwrap();
    entity.value = 11;
    let error = entity
        .save_checked_where(conn, counters::value.gt(100))
        .unwrap_err();
    assert_eq!(state(&error), &ConflictState::Unmatched);
    assert_eq!(entity.version, 1, "the entity keeps the token it read");
    assert_eq!(row(conn, 1), Some((10, 1)), "nothing written");
}

#[test]
fn save_where_reports_a_stale_row() {
    let Some(db) = database("save_where_reports_a_stale_row") else {
        return;
    };
    let conn = &mut db.conn();
    let mut stale = Counter::find(conn, 1).unwrap();
    let mut first = stale.clone();
    first.value = 12;
    first.save_checked(conn).unwrap();

    stale.value = 13;
    let error = stale
        .save_checked_where(conn, counters::value.eq(10))
        .unwrap_err();
    assert_eq!(error.as_conflict().unwrap().current::<i32>(), Some(2));
    assert_eq!(
        row(conn, 1),
        Some((12, 2)),
        "the first writer's value stays"
    );
}

#[test]
fn update_by_key_writes_in_one_statement() {
    let Some(db) = database("update_by_key_writes_in_one_statement") else {
        return;
    };
    let conn = &mut db.conn();
    let statements = StatementCounter::install(conn);
    let fresh = Counter::update_by_key(conn, 1, &1, counters::value.eq(15)).unwrap();
    assert_eq!(fresh, 2);
    assert_eq!(statements.take(), 1, "no read before the write");
    assert_eq!(row(conn, 1), Some((15, 2)));
    assert_eq!(row(conn, 2), Some((20, 1)), "only the keyed row");

    let next = Counter::update_by_key(conn, 1, &fresh, counters::value.eq(16)).unwrap();
    assert_eq!((next, row(conn, 1)), (3, Some((16, 3))));
}

#[test]
fn update_by_key_refuses_a_stale_or_missing_row() {
    let Some(db) = database("update_by_key_refuses_a_stale_or_missing_row") else {
        return;
    };
    let conn = &mut db.conn();
    Counter::update_by_key(conn, 1, &1, counters::value.eq(15)).unwrap();

    let stale = Counter::update_by_key(conn, 1, &1, counters::value.eq(0)).unwrap_err();
    assert_eq!(
        state(&stale),
        &ConflictState::Stale {
            current: TokenValue::Integer(2)
        }
    );
    assert_eq!(
        row(conn, 1),
        Some((15, 2)),
        "the stale client wrote nothing"
    );

    let missing = Counter::update_by_key(conn, 9, &1, counters::value.eq(0)).unwrap_err();
    assert_eq!(state(&missing), &ConflictState::Deleted);
}

#[test]
fn update_by_key_refuses_an_invalid_token_without_a_query() {
    let Some(db) = database("update_by_key_refuses_an_invalid_token_without_a_query") else {
        return;
    };
    let conn = &mut db.conn();
    #[derive(Debug, Clone, Queryable, Selectable, diesel_occ::Versioned)]
    #[diesel(table_name = stock)]
    struct Stock {
        id: i32,
        available: i32,
        #[occ(version)]
        version: UuidToken,
    }
    let statements = StatementCounter::install(conn);
    let nil = UuidToken::from(uuid::Uuid::nil());
    let error = Stock::update_by_key(conn, 1, &nil, stock::available.eq(1)).unwrap_err();
    let Error::InvalidToken(invalid) = error else {
        panic!("expected InvalidToken, got {error:?}");
    };
    assert_eq!(&invalid.reason, &InvalidTokenReason::Nil);
    assert_eq!(statements.take(), 0);
}

#[test]
fn delete_by_key_deletes_only_with_the_current_token() {
    let Some(db) = database("delete_by_key_deletes_only_with_the_current_token") else {
        return;
    };
    let conn = &mut db.conn();
    let stale = Counter::delete_by_key(conn, 1, &7).unwrap_err();
    assert_eq!(
        state(&stale),
        &ConflictState::Stale {
            current: TokenValue::Integer(1)
        }
    );
    assert!(row(conn, 1).is_some(), "a stale delete leaves the row");

    let statements = StatementCounter::install(conn);
    Counter::delete_by_key(conn, 1, &1).unwrap();
    assert_eq!(statements.take(), 1);
    assert_eq!(row(conn, 1), None);

    let again = Counter::delete_by_key(conn, 1, &1).unwrap_err();
    assert_eq!(state(&again), &ConflictState::Deleted);
}
