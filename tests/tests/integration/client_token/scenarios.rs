//! The guarded writes, in both flavours.

flavour_prelude!();

use diesel::prelude::{ExpressionMethods, OptionalExtension, QueryDsl, Queryable, Selectable};
use diesel_occ::{ConflictState, Error, InvalidTokenReason, TokenValue, UuidToken};
use diesel_occ_tests::statements::StatementCounter;

use super::super::{Counter, state};
use super::schema;
use diesel_occ_tests::schema::pg::counters;
use schema::stock;

/// Seeds counters 1 (value 10) and 2 (value 20); returns a connection.
#[flavour]
async fn seeded(db: &TestDb<Conn>) -> Conn {
    let mut conn = db.conn().await;
    // A row at a time: diesel-async's SQLite connection inserts no batch.
    for row in [Counter::new(1, 10), Counter::new(2, 20)] {
        insert_rows!(&mut conn, counters::table, row);
    }
    conn
}

/// The row as the database holds it now.
#[flavour]
async fn row(conn: &mut Conn, id: i32) -> Option<(i32, i32)> {
    let query = counters::table.find(id);
    let query = query.select((counters::value, counters::version));
    let row = query.get_result(conn).await.optional();
    row.expect("read the row")
}

/// A stale conflict's state, the row at `current`.
fn stale_at(current: i64) -> ConflictState {
    ConflictState::Stale {
        current: TokenValue::Integer(current),
    }
}

#[flavour(test)]
async fn save_where_writes_when_the_predicate_holds() {
    let db = db!();
    let conn = &mut seeded(&db).await;
    let mut entity = Counter::find(conn, 1).await.unwrap();
    entity.value = 11;
    let at_ten = counters::value.eq(10);
    entity.save_checked_where(conn, at_ten).await.unwrap();
    assert_eq!(entity.version, 2);
    assert_eq!(row(conn, 1).await, Some((11, 2)));
}

#[flavour(test)]
async fn save_where_is_unmatched_when_the_predicate_fails() {
    let db = db!();
    let conn = &mut seeded(&db).await;
    let mut entity = Counter::find(conn, 1).await.unwrap();
    entity.value = 11;
    let over_100 = counters::value.gt(100);
    let error = entity.save_checked_where(conn, over_100).await;
    let error = error.unwrap_err();
    assert_eq!(state(&error), &ConflictState::Unmatched);
    assert_eq!(entity.version, 1, "the entity keeps the token it read");
    assert_eq!(row(conn, 1).await, Some((10, 1)), "nothing written");
}

#[flavour(test)]
async fn save_where_reports_a_stale_row() {
    let db = db!();
    let conn = &mut seeded(&db).await;
    let mut stale = Counter::find(conn, 1).await.unwrap();
    let mut first = stale.clone();
    first.value = 12;
    first.save_checked(conn).await.unwrap();

    stale.value = 13;
    let error = stale.save_checked_where(conn, counters::value.eq(10)).await;
    assert_eq!(state(&error.unwrap_err()), &stale_at(2));
    assert_eq!(row(conn, 1).await, Some((12, 2)), "the first writer's");
}

#[flavour(test)]
async fn update_by_key_writes_in_one_statement() {
    let db = db!();
    let conn = &mut seeded(&db).await;
    let statements = StatementCounter::install_in_flavour(conn);
    let fresh = Counter::update_by_key(conn, 1, &1, counters::value.eq(15)).await;
    let fresh = fresh.unwrap();
    assert_eq!(fresh, 2);
    assert_eq!(statements.take(), 1, "no read before the write");
    assert_eq!(row(conn, 1).await, Some((15, 2)));
    assert_eq!(row(conn, 2).await, Some((20, 1)), "only the keyed row");

    let next = Counter::update_by_key(conn, 1, &fresh, counters::value.eq(16)).await;
    let next = next.unwrap();
    assert_eq!((next, row(conn, 1).await), (3, Some((16, 3))));
}

#[flavour(test)]
async fn update_by_key_refuses_a_stale_or_missing_row() {
    let db = db!();
    let conn = &mut seeded(&db).await;
    let fresh = Counter::update_by_key(conn, 1, &1, counters::value.eq(15)).await;
    fresh.unwrap();

    let stale = Counter::update_by_key(conn, 1, &1, counters::value.eq(0)).await;
    assert_eq!(state(&stale.unwrap_err()), &stale_at(2));
    assert_eq!(row(conn, 1).await, Some((15, 2)), "stale wrote nothing");

    let missing = Counter::update_by_key(conn, 9, &1, counters::value.eq(0)).await;
    assert_eq!(state(&missing.unwrap_err()), &ConflictState::Deleted);
}

#[flavour(test)]
async fn update_by_key_refuses_an_invalid_token_without_a_query() {
    let db = db!();
    let conn = &mut seeded(&db).await;
    #[derive(Debug, Clone, Queryable, Selectable, diesel_occ::Versioned)]
    #[diesel(table_name = stock)]
    struct Stock {
        id: i32,
        available: i32,
        #[occ(version)]
        version: UuidToken,
    }
    let statements = StatementCounter::install_in_flavour(conn);
    let nil = UuidToken::from(uuid::Uuid::nil());
    let error = Stock::update_by_key(conn, 1, &nil, stock::available.eq(1)).await;
    let Err(Error::InvalidToken(invalid)) = error else {
        panic!("expected InvalidToken, got {error:?}");
    };
    assert_eq!(&invalid.reason, &InvalidTokenReason::Nil);
    assert_eq!(statements.take(), 0);
}

#[flavour(test)]
async fn delete_by_key_deletes_only_with_the_current_token() {
    let db = db!();
    let conn = &mut seeded(&db).await;
    let stale = Counter::delete_by_key(conn, 1, &7).await.unwrap_err();
    assert_eq!(state(&stale), &stale_at(1));
    assert!(row(conn, 1).await.is_some(), "the stale delete left it");

    let statements = StatementCounter::install_in_flavour(conn);
    Counter::delete_by_key(conn, 1, &1).await.unwrap();
    assert_eq!(statements.take(), 1);
    assert_eq!(row(conn, 1).await, None);

    let again = Counter::delete_by_key(conn, 1, &1).await.unwrap_err();
    assert_eq!(state(&again), &ConflictState::Deleted);
}
