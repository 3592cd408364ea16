//! Galera on async connections (`AsyncMysqlConnection`, no client library): the
//! twins of `blocking.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use diesel::dsl::sql;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncMysqlConnection as Conn, RunQueryDsl, SimpleAsyncConnection};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_tests::schema::mysql as schema;
use diesel_occ_tests::{Access, GaleraDb, connect_async};
use tokio::sync::Barrier;

use super::common::{
    CAUSAL_READS, Counter, Loss, NODE_STATE, STALE_READS_ALLOWED, STOP_APPLYING, loss, seed_row,
    value_of,
};

/// A session on node `node` (1 to 3) whose reads are causal.
async fn causal(db: &GaleraDb, node: usize) -> Conn {
    let mut conn = connect_async::<Conn>(db.url(node))
        .await
        .unwrap_or_else(|e| panic!("connect to node {node}: {e}"));
    conn.batch_execute(CAUSAL_READS)
        .await
        .expect("wsrep_sync_wait");
    conn
}

async fn seed(db: &GaleraDb) {
    diesel::insert_into(schema::counters::table)
        .values(seed_row())
        .execute(&mut causal(db, 1).await)
        .await
        .expect("seed");
}

/// Row 1 as every node holds it (causal reads), after checking that they agree.
async fn row_everywhere(db: &GaleraDb) -> Counter {
    let mut rows = Vec::new();
    for node in 1..=db.nodes() {
        let mut conn = causal(db, node).await;
        rows.push(Counter::find(&mut conn, 1).await.expect("row 1"));
    }
    assert!(
        rows.iter().all(|row| *row == rows[0]),
        "the nodes disagree: {rows:?}"
    );
    rows[0].clone()
}

const ROUNDS: usize = 5;

/// Async twin of the blocking race: writers on nodes 1 and 2 read, meet at the race's
/// barrier, save; exactly one wins each round, the other loses by a typed conflict or a
/// certification failure, and the row holds the winner's value everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_on_two_nodes_race_one_row_and_exactly_one_wins() {
    let db = galera_db!(Access::Shared);
    seed(&db).await;
    let mut losses: HashMap<Loss, usize> = HashMap::new();
    for round in 0..ROUNDS {
        let report = Race::new(2)
            .run_asynchronous(
                async |writer| {
                    let mut conn = causal(&db, writer + 1).await;
                    let row: Counter = Counter::find(&mut conn, 1).await.expect("row 1");
                    (conn, row)
                },
                async |writer, (mut conn, mut row): (Conn, Counter)| {
                    row.value = value_of(round, writer);
                    row.save_checked(&mut conn).await.map(|()| row.value)
                },
            )
            .await;
        let winners: Vec<_> = report.winners().collect();
        assert_eq!(winners.len(), 1, "round {round}: {report:?}");
        let losers: Vec<_> = report.losers().collect();
        assert_eq!(losers.len(), 1, "round {round}: {report:?}");
        *losses.entry(loss(losers[0].1)).or_default() += 1;
        let row = row_everywhere(&db).await;
        assert_eq!(row.value, *winners[0].1, "round {round}: the winner's value");
        assert_eq!(row.version, 2 + i32::try_from(round).unwrap());
    }
    eprintln!("{}: losers over {ROUNDS} rounds: {losses:?}", module_path!());
}

/// Async twin: both writers save in a transaction on their own node (each save matches
/// there), meet at a barrier, then commit; certification lets exactly one commit and
/// fails the other with 1213, retryable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saves_that_both_match_on_their_nodes_lose_one_commit_to_certification() {
    let db = galera_db!(Access::Shared);
    seed(&db).await;
    let barrier = Barrier::new(2);
    let writer = async |writer: usize| {
        let mut conn = causal(&db, writer + 1).await;
        let saved_locally = AtomicBool::new(false);
        let value = value_of(0, writer);
        let (barrier, saved) = (&barrier, &saved_locally);
        let committed = conn
            .transaction::<_, Error, _>(async move |conn| {
                let save = match Counter::find(conn, 1).await {
                    Ok(mut row) => {
                        row.value = value;
                        row.save_checked(conn).await
                    }
                    Err(error) => Err(error),
                };
                saved.store(save.is_ok(), Ordering::SeqCst);
                // Both have saved (or failed) before either commits.
                barrier.wait().await;
                save.map(|()| value)
            })
            .await;
        (AtomicBool::load(&saved_locally, Ordering::SeqCst), committed)
    };
    let (first, second) = tokio::join!(writer(0), writer(1));
    let outcomes = [first, second];
    assert!(
        outcomes.iter().all(|(saved, _)| *saved),
        "both checked saves match on their own node: {outcomes:?}"
    );
    let winners: Vec<i32> = outcomes
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().copied())
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let error = outcomes
        .iter()
        .find_map(|(_, r)| r.as_ref().err())
        .expect("a loser");
    assert_eq!(loss(error), Loss::Certification, "{error:?}");
    assert_eq!(row_everywhere(&db).await.value, winners[0]);
}

/// Async twin of the stale read: node 2 stops applying (its global read lock), node 1
/// saves, node 2 reads the old row with `wsrep_sync_wait = 0` (stale, asserted); after
/// the lock is released, node 2's checked save of the stale entity fails and node 1's
/// change stays everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_read_on_a_lagging_node_never_becomes_a_lost_update() {
    let db = galera_db!(Access::Exclusive);
    seed(&db).await;
    let mut reader = causal(&db, 2).await;
    assert_eq!(
        Counter::find(&mut reader, 1).await.expect("row 1"),
        seed_row()
    );
    reader
        .batch_execute(STALE_READS_ALLOWED)
        .await
        .expect("wsrep_sync_wait");

    let mut lock = causal(&db, 2).await;
    lock.batch_execute(STOP_APPLYING)
        .await
        .expect("global read lock");
    let state: String = diesel::select(sql::<Text>(NODE_STATE))
        .get_result(&mut lock)
        .await
        .expect("node state");
    eprintln!("{}: node 2 holding its read lock: {state}", module_path!());

    let mut writer = causal(&db, 1).await;
    let mut fresh = Counter::find(&mut writer, 1).await.expect("row 1");
    fresh.value = 111;
    fresh.save_checked(&mut writer).await.expect("node 1 saves");

    let mut stale = Counter::find(&mut reader, 1).await.expect("row 1");
    assert_eq!(
        (stale.value, stale.version),
        (0, 1),
        "node 2 lags: its read is stale"
    );

    lock.batch_execute("UNLOCK TABLES").await.expect("unlock");
    drop(lock);
    stale.value = 222;
    let error = stale
        .save_checked(&mut reader)
        .await
        .expect_err("a stale save must not succeed");
    eprintln!(
        "{}: the stale save on node 2 lost by {:?}",
        module_path!(),
        loss(&error)
    );
    let row = row_everywhere(&db).await;
    assert_eq!((row.value, row.version), (111, 2), "node 1's change stays");
}
