//! The guarded writes, in both flavours.

flavour_prelude!();

use diesel::prelude::{ExpressionMethods, OptionalExtension, QueryDsl, Queryable, Selectable};
use diesel_occ::{ConflictState, Error, InvalidTokenReason, TokenValue, UuidToken};
use diesel_occ_tests::statements::StatementCounter;

use super::super::{Counter, state};
use super::schema;
use diesel_occ_tests::schema::pg::counters;
use schema::stock;

/// A migrated database holding counters 1 (value 10) and 2 (value 20), or `None` after
/// a SKIPPED line when the backend is unreachable and not required.
#[flavour]
async fn database(scenario: &str) -> Option<TestDb<Conn>> {
    let db = TestDb::<Conn>::create(&format!("{}_{scenario}", module_path!())).await?;
    let mut conn = db.conn().await;
    // A row at a time: diesel-async's SQLite connection inserts no batch.
    for row in [Counter::new(1, 10), Counter::new(2, 20)] {
        diesel::insert_into(counters::table)
            .values(row)
            .execute(&mut conn)
            .await
            .expect("seed counters");
    }
    Some(db)
}

/// The row as the database holds it now.
#[flavour]
async fn row(conn: &mut Conn, id: i32) -> Option<(i32, i32)> {
    counters::table
        .find(id)
        .select((counters::value, counters::version))
        .get_result(conn)
        .await
        .optional()
        .expect("read the row")
}

#[flavour]
#[tokio::test]
async fn save_where_writes_when_the_predicate_holds() {
    let Some(db) = database("save_where_writes").await else {
        return;
    };
    let conn = &mut db.conn().await;
    let mut entity = Counter::find(conn, 1).await.unwrap();
    entity.value = 11;
    entity
        .save_checked_where(conn, counters::value.eq(10))
        .await
        .unwrap();
    assert_eq!(entity.version, 2);
    assert_eq!(row(conn, 1).await, Some((11, 2)));
}

#[flavour]
#[tokio::test]
async fn save_where_is_unmatched_when_the_predicate_fails() {
    let Some(db) = database("save_where_is_unmatched").await else {
        return;
    };
    let conn = &mut db.conn().await;
    let mut entity = Counter::find(conn, 1).await.unwrap();
    entity.value = 11;
    let error = entity
        .save_checked_where(conn, counters::value.gt(100))
        .await
        .unwrap_err();
    assert_eq!(state(&error), &ConflictState::Unmatched);
    assert_eq!(entity.version, 1, "the entity keeps the token it read");
    assert_eq!(row(conn, 1).await, Some((10, 1)), "nothing written");
}

#[flavour]
#[tokio::test]
async fn save_where_reports_a_stale_row() {
    let Some(db) = database("save_where_reports_a_stale_row").await else {
        return;
    };
    let conn = &mut db.conn().await;
    let mut stale = Counter::find(conn, 1).await.unwrap();
    let mut first = stale.clone();
    first.value = 12;
    first.save_checked(conn).await.unwrap();

    stale.value = 13;
    let error = stale
        .save_checked_where(conn, counters::value.eq(10))
        .await
        .unwrap_err();
    assert_eq!(error.as_conflict().unwrap().current::<i32>(), Some(2));
    assert_eq!(
        row(conn, 1).await,
        Some((12, 2)),
        "the first writer's value stays"
    );
}

#[flavour]
#[tokio::test]
async fn update_by_key_writes_in_one_statement() {
    let Some(db) = database("update_by_key_writes").await else {
        return;
    };
    let conn = &mut db.conn().await;
    let statements = StatementCounter::install_in_flavour(conn);
    let fresh = Counter::update_by_key(conn, 1, &1, counters::value.eq(15))
        .await
        .unwrap();
    assert_eq!(fresh, 2);
    assert_eq!(statements.take(), 1, "no read before the write");
    assert_eq!(row(conn, 1).await, Some((15, 2)));
    assert_eq!(row(conn, 2).await, Some((20, 1)), "only the keyed row");

    let next = Counter::update_by_key(conn, 1, &fresh, counters::value.eq(16))
        .await
        .unwrap();
    assert_eq!((next, row(conn, 1).await), (3, Some((16, 3))));
}

#[flavour]
#[tokio::test]
async fn update_by_key_refuses_a_stale_or_missing_row() {
    let Some(db) = database("update_by_key_refuses_a_stale").await else {
        return;
    };
    let conn = &mut db.conn().await;
    Counter::update_by_key(conn, 1, &1, counters::value.eq(15))
        .await
        .unwrap();

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

#[flavour]
#[tokio::test]
async fn update_by_key_refuses_an_invalid_token_without_a_query() {
    let Some(db) = database("update_by_key_refuses_an_invalid").await else {
        return;
    };
    let conn = &mut db.conn().await;
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
    let error = Stock::update_by_key(conn, 1, &nil, stock::available.eq(1))
        .await
        .unwrap_err();
    let Error::InvalidToken(invalid) = error else {
        panic!("expected InvalidToken, got {error:?}");
    };
    assert_eq!(&invalid.reason, &InvalidTokenReason::Nil);
    assert_eq!(statements.take(), 0);
}

#[flavour]
#[tokio::test]
async fn delete_by_key_deletes_only_with_the_current_token() {
    let Some(db) = database("delete_by_key").await else {
        return;
    };
    let conn = &mut db.conn().await;
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

    let statements = StatementCounter::install_in_flavour(conn);
    Counter::delete_by_key(conn, 1, &1).await.unwrap();
    assert_eq!(statements.take(), 1);
    assert_eq!(row(conn, 1).await, None);

    let again = Counter::delete_by_key(conn, 1, &1).await.unwrap_err();
    assert_eq!(state(&again), &ConflictState::Deleted);
}
