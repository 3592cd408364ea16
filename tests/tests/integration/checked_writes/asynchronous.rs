//! Checked saves and deletes on an async connection (diesel-async): the twins of the
//! blocking races, ordered interleavings and statement counts.
//!
//! Ordered interleavings run on two connections from one task, step by step; the
//! symmetric race runs two writers that both read, meet at a barrier, then write.

use diesel::{Insertable, Queryable, Selectable};
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Error, Operation};
use diesel_occ_tests::AsyncTestDb;
use diesel_occ_tests::statements::StatementCounter;

use super::{AsyncConn as Conn, schema};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::counters)]
struct Counter {
    id: i32,
    value: i32,
    label: Option<String>,
    #[occ(version)]
    version: i32,
}

async fn counter(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).await.expect("counter row")
}

/// A writer's own connection and its read of counter 1.
async fn read_counter(db: &AsyncTestDb<Conn>) -> (Conn, Counter) {
    let mut conn = db.conn().await;
    let row = counter(&mut conn, 1).await;
    (conn, row)
}

async fn seed_counter(db: &AsyncTestDb<Conn>) -> Counter {
    let row = Counter {
        id: 1,
        value: 0,
        label: None,
        version: 1,
    };
    diesel::insert_into(schema::counters::table)
        .values(row.clone())
        .execute(&mut db.conn().await)
        .await
        .expect("insert");
    row
}

fn expect_conflict(result: Result<(), Error>) -> diesel_occ::ConcurrencyConflict {
    match result {
        Err(Error::Conflict(conflict)) => conflict,
        other => panic!("expected a concurrency conflict, got {other:?}"),
    }
}

/// Compiles only for a future that can move to another thread (`tokio::spawn`).
fn assert_send<F: Future + Send>(future: F) -> F {
    future
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writers_from_one_version_exactly_one_wins() {
    let db = async_test_db!();
    seed_counter(&db).await;
    let report = Race::new(2)
        .run_asynchronous(
            async |_| read_counter(&db).await,
            async |writer, (mut conn, mut row): (Conn, Counter)| {
                row.value += 10 * (writer as i32 + 1);
                row.label = Some(format!("writer {writer}"));
                let result = assert_send(row.save_checked(&mut conn)).await;
                (result, row)
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let winners: Vec<_> = outcomes.iter().filter(|(r, _)| r.is_ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one winner: {outcomes:?}");
    let (_, winner) = winners[0];
    let (loss, loser) = outcomes.iter().find(|(r, _)| r.is_err()).unwrap();

    let conflict = loss
        .as_ref()
        .unwrap_err()
        .as_conflict()
        .expect("a conflict");
    assert_eq!(conflict.operation(), Operation::Update);
    assert_eq!(conflict.table(), "counters");
    assert_eq!(conflict.expected::<i32>(), Some(1));
    assert_eq!(
        conflict.current::<i32>(),
        Some(winner.version),
        "names the winner's token"
    );
    assert_eq!(loser.version, 1, "the loser's token is not advanced");

    let stored = counter(&mut db.conn().await, 1).await;
    assert_eq!(
        &stored, winner,
        "the row holds the winner's values and token"
    );
    assert_eq!(stored.version, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn save_runs_exactly_one_statement_and_advances_the_token() {
    let db = async_test_db!();
    seed_counter(&db).await;
    let mut conn = db.conn().await;
    let mut row = counter(&mut conn, 1).await;
    let statements = StatementCounter::install_async(&mut conn);

    row.value = 5;
    row.save_checked(&mut conn).await.expect("save");
    assert_eq!(statements.take(), 1, "one UPDATE on success");
    assert_eq!(row.version, 2);

    row.value = 6;
    row.save_checked(&mut conn).await.expect("second save");
    assert_eq!(statements.take(), 1);
    let cached = statements.take_cached();
    assert_eq!(
        cached.len(),
        1,
        "the UPDATE is prepared once, then reused: {cached:?}"
    );
    assert!(cached[0].starts_with("UPDATE"), "{cached:?}");
    assert_eq!(counter(&mut conn, 1).await, row);
    statements.take();

    let mut stale = row.clone();
    stale.version = 1;
    expect_conflict(stale.save_checked(&mut conn).await);
    assert_eq!(
        statements.take(),
        2,
        "the conflict path adds one classification query"
    );

    row.delete_checked(&mut conn).await.expect("delete");
    assert_eq!(statements.take(), 1, "one DELETE on success");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn update_after_a_delete_is_a_deleted_conflict() {
    let db = async_test_db!();
    seed_counter(&db).await;
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    let deleter = counter(&mut a, 1).await;
    let mut writer = counter(&mut b, 1).await;

    deleter.delete_checked(&mut a).await.expect("delete wins");
    writer.value = 7;
    let conflict = expect_conflict(writer.save_checked(&mut b).await);
    assert_eq!(conflict.state(), &ConflictState::Deleted);
    assert!(conflict.is_deleted());
    assert_eq!(writer.version, 1, "token untouched");
    assert_eq!(writer.value, 7, "edits kept for the caller");
    assert!(
        matches!(Counter::find(&mut a, 1).await, Err(Error::NotFound(_))),
        "not resurrected"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delete_after_an_update_is_a_stale_conflict() {
    let db = async_test_db!();
    seed_counter(&db).await;
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    let mut writer = counter(&mut a, 1).await;
    let deleter = counter(&mut b, 1).await;

    writer.value = 3;
    writer.save_checked(&mut a).await.expect("update wins");
    let conflict = expect_conflict(deleter.delete_checked(&mut b).await);
    assert_eq!(conflict.operation(), Operation::Delete);
    assert_eq!(conflict.current::<i32>(), Some(writer.version));
    assert_eq!(
        counter(&mut a, 1).await,
        writer,
        "the row survives with the update"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_client_token_is_rejected_before_any_write() {
    let db = async_test_db!();
    seed_counter(&db).await;
    let mut conn = db.conn().await;
    let client_token = counter(&mut conn, 1).await.version;

    let mut other = counter(&mut conn, 1).await;
    other.value = 42;
    other.save_checked(&mut conn).await.expect("another writer");

    let statements = StatementCounter::install_async(&mut conn);
    let error = Counter::find_checked(&mut conn, 1, &client_token)
        .await
        .unwrap_err();
    assert_eq!(statements.take(), 1, "one SELECT, no write");
    let conflict = error.as_conflict().expect("stale client token");
    assert_eq!(conflict.operation(), Operation::ClientToken);
    assert_eq!(
        conflict.expected::<i32>(),
        Some(client_token),
        "the client's token is kept"
    );
    assert_eq!(conflict.current::<i32>(), Some(other.version));
    assert_eq!(counter(&mut conn, 1).await, other, "nothing written");

    let fresh = Counter::find_checked(&mut conn, 1, &other.version)
        .await
        .expect("current token");
    assert_eq!(fresh, other);
}
