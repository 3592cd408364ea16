//! The guarded writes on an async connection (diesel-async).

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::{ConflictState, TokenValue};
use diesel_occ_tests::AsyncTestDb;
use diesel_occ_tests::statements::StatementCounter;

use super::super::{Counter, counter, state};
use super::AsyncConn as Conn;
use diesel_occ_tests::schema::pg::counters;

/// A migrated database holding counters 1 (value 10) and 2 (value 20), and an async
/// connection to it.
async fn database(scenario: &str) -> Option<(AsyncTestDb<Conn>, Conn)> {
    let db = AsyncTestDb::<Conn>::create(&format!("client_token_async_{scenario}")).await?;
    let mut conn = db.conn().await;
    for row in [counter(1, 10), counter(2, 20)] {
        diesel::insert_into(counters::table)
            .values(row)
            .execute(&mut conn)
            .await
            .expect("seed counters");
    }
    Some((db, conn))
}

/// The row as the database holds it now.
async fn row(conn: &mut Conn, id: i32) -> Option<(i32, i32)> {
    counters::table
        .find(id)
        .select((counters::value, counters::version))
        .get_result(conn)
        .await
        .optional()
        .expect("read the row")
}

#[tokio::test]
async fn save_where_writes_only_while_the_predicate_holds() {
    let Some((_db, mut conn)) = database("save_where").await else {
        return;
    };
    let conn = &mut conn;
    let mut entity = Counter::find(conn, 1).await.unwrap();
    entity.value = 11;
    let error = entity
        .save_checked_where(conn, counters::value.gt(100))
        .await
        .unwrap_err();
    assert_eq!(state(&error), &ConflictState::Unmatched);
    assert_eq!(entity.version, 1, "the entity keeps the token it read");
    assert_eq!(row(conn, 1).await, Some((10, 1)), "nothing written");

    entity
        .save_checked_where(conn, counters::value.eq(10))
        .await
        .unwrap();
    assert_eq!(entity.version, 2);
    assert_eq!(row(conn, 1).await, Some((11, 2)));
}

#[tokio::test]
async fn update_by_key_writes_in_one_statement_and_refuses_a_stale_token() {
    let Some((_db, mut conn)) = database("update_by_key").await else {
        return;
    };
    let conn = &mut conn;
    let statements = StatementCounter::install_async(conn);
    let fresh = Counter::update_by_key(conn, 1, &1, counters::value.eq(15))
        .await
        .unwrap();
    assert_eq!((fresh, statements.take()), (2, 1), "one statement, no read");
    assert_eq!(row(conn, 1).await, Some((15, 2)));

    let stale = Counter::update_by_key(conn, 1, &1, counters::value.eq(0))
        .await
        .unwrap_err();
    assert_eq!(
        state(&stale),
        &ConflictState::Stale {
            current: TokenValue::Integer(2)
        }
    );
    assert_eq!(
        row(conn, 1).await,
        Some((15, 2)),
        "the stale client wrote nothing"
    );

    let missing = Counter::update_by_key(conn, 9, &1, counters::value.eq(0))
        .await
        .unwrap_err();
    assert_eq!(state(&missing), &ConflictState::Deleted);
}

#[tokio::test]
async fn delete_by_key_deletes_only_with_the_current_token() {
    let Some((_db, mut conn)) = database("delete_by_key").await else {
        return;
    };
    let conn = &mut conn;
    let stale = Counter::delete_by_key(conn, 1, &7).await.unwrap_err();
    assert_eq!(
        state(&stale),
        &ConflictState::Stale {
            current: TokenValue::Integer(1)
        }
    );
    assert!(
        row(conn, 1).await.is_some(),
        "a stale delete leaves the row"
    );

    Counter::delete_by_key(conn, 1, &1).await.unwrap();
    assert_eq!(row(conn, 1).await, None);
    let again = Counter::delete_by_key(conn, 1, &1).await.unwrap_err();
    assert_eq!(state(&again), &ConflictState::Deleted);
}
