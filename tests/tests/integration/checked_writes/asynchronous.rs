//! Checked saves and deletes on an async connection (diesel-async): forced races
//! between two writers, the typed conflict, and the statements a save costs.

use std::sync::Arc;

use diesel::{Insertable, Queryable, Selectable};
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::{ConflictState, Operation};
use diesel_occ_tests::AsyncTestDb;
use diesel_occ_tests::statements::StatementCounter;
use tokio::sync::Barrier;

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

impl Counter {
    fn increment(&mut self) {
        self.value += 1;
        self.label = Some(self.value.to_string());
    }
}

async fn seed(db: &AsyncTestDb<Conn>, id: i32) {
    let mut conn = db.conn().await;
    diesel::insert_into(schema::counters::table)
        .values(Counter {
            id,
            value: 0,
            label: Some("0".into()),
            version: 1,
        })
        .execute(&mut conn)
        .await
        .expect("seed");
}

async fn load(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).await.expect("counter row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_writers_from_one_version_exactly_one_wins() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let barrier = Arc::new(Barrier::new(2));
    let mut writers = Vec::new();
    for writer in 0..2_i32 {
        let mut conn = db.conn().await;
        let barrier = Arc::clone(&barrier);
        // tokio::spawn: the save_checked future is Send.
        writers.push(tokio::spawn(async move {
            let mut row = load(&mut conn, 1).await;
            barrier.wait().await;
            row.value += 10 * (writer + 1);
            row.label = Some(format!("writer {writer}"));
            let result = row.save_checked(&mut conn).await;
            (result, row)
        }));
    }
    let mut outcomes = Vec::new();
    for writer in writers {
        outcomes.push(writer.await.expect("writer task"));
    }
    let winners: Vec<_> = outcomes.iter().filter(|(r, _)| r.is_ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one winner: {outcomes:?}");
    let winner = &winners[0].1;
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
    assert_eq!(&load(&mut db.conn().await, 1).await, winner);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn update_after_delete_and_delete_after_update() {
    let db = async_test_db!();
    seed(&db, 1).await;
    seed(&db, 2).await;
    let (mut a, mut b) = (db.conn().await, db.conn().await);

    // Delete first, then update: Deleted.
    let deleter = load(&mut a, 1).await;
    let mut writer = load(&mut b, 1).await;
    deleter.delete_checked(&mut a).await.expect("delete wins");
    writer.value = 7;
    let error = writer.save_checked(&mut b).await.unwrap_err();
    let conflict = error.as_conflict().expect("a conflict");
    assert_eq!(conflict.state(), &ConflictState::Deleted);
    assert_eq!(
        (writer.version, writer.value),
        (1, 7),
        "token untouched, edits kept"
    );
    assert!(
        Counter::find(&mut a, 1).await.unwrap_err().is_not_found(),
        "not resurrected"
    );

    // Update first, then delete: Stale, naming the update's token.
    let mut writer = load(&mut a, 2).await;
    let deleter = load(&mut b, 2).await;
    writer.increment();
    writer.save_checked(&mut a).await.expect("update wins");
    let error = deleter.delete_checked(&mut b).await.unwrap_err();
    let conflict = error.as_conflict().expect("a conflict");
    assert_eq!(conflict.operation(), Operation::Delete);
    assert_eq!(conflict.current::<i32>(), Some(writer.version));
    assert_eq!(
        load(&mut a, 2).await,
        writer,
        "the row survives with the update"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_statement_on_success_and_a_stale_client_token_is_rejected_unwritten() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let mut conn = db.conn().await;
    let client_token = load(&mut conn, 1).await.version;
    let mut row = load(&mut conn, 1).await;
    let statements = StatementCounter::install_async(&mut conn);

    row.increment();
    row.save_checked(&mut conn).await.expect("save");
    assert_eq!(statements.take(), 1, "one UPDATE on success");
    assert_eq!(row.version, 2);
    row.increment();
    row.save_checked(&mut conn).await.expect("second save");
    assert_eq!(statements.take(), 1);
    let cached = statements.take_cached();
    assert_eq!(
        cached.len(),
        1,
        "the UPDATE is prepared once, then reused: {cached:?}"
    );
    assert!(cached[0].starts_with("UPDATE"), "{cached:?}");

    let mut stale = row.clone();
    stale.version = 1;
    assert!(
        stale
            .save_checked(&mut conn)
            .await
            .unwrap_err()
            .is_conflict()
    );
    assert_eq!(statements.take(), 2, "the conflict path adds one read");

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
    assert_eq!(conflict.current::<i32>(), Some(row.version));
    assert_eq!(load(&mut conn, 1).await, row, "nothing written");
    let fresh = Counter::find_checked(&mut conn, 1, &row.version)
        .await
        .expect("current");
    assert_eq!(fresh, row);
}
