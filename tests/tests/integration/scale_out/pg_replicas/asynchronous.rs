//! PostgreSQL primary and standby on async connections.

use diesel_async::{AsyncPgConnection as Conn, RunQueryDsl};
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::schema::pg as schema;
use diesel_occ_tests::{Access, PgReplicasDb, connect_async};

use super::common::{Counter, seed_row};

async fn connect(url: &str) -> Conn {
    connect_async::<Conn>(url).await.expect("connect")
}

/// Seeds row 1 on the primary and waits until the standby has replayed it.
async fn seed(db: &PgReplicasDb) {
    diesel::insert_into(schema::counters::table)
        .values(seed_row())
        .execute(&mut connect(db.primary_url()).await)
        .await
        .expect("seed");
    db.wait_replayed();
}

/// Async twin: a standby read is stale while its replay is paused, current once it
/// resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_read_is_stale_while_its_replay_is_paused() {
    let db = pg_replicas_db!(Access::Exclusive);
    seed(&db).await;
    let mut standby = connect(db.standby_url()).await;
    assert_eq!(
        Counter::find(&mut standby, 1).await.expect("row 1"),
        seed_row()
    );

    let paused = db.pause_replay();
    let mut primary = connect(db.primary_url()).await;
    let mut row = Counter::find(&mut primary, 1).await.expect("row 1");
    row.value = 7;
    row.save_checked(&mut primary)
        .await
        .expect("the primary saves");
    let stale = Counter::find(&mut standby, 1).await.expect("row 1");
    assert_eq!((stale.value, stale.version), (0, 1), "the standby is stale");

    paused.resume();
    let caught_up = Counter::find(&mut standby, 1).await.expect("row 1");
    assert_eq!((caught_up.value, caught_up.version), (7, 2));
}
