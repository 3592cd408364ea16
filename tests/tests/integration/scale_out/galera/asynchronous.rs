//! Galera on async connections (`AsyncMysqlConnection`, no client library): the
//! twins of `blocking.rs`, and pessimistic locking on a node that stops answering
//! (only the async driver lets the helper bound that wait on the client).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::dsl::sql;
use diesel::sql_types::Text;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{
    AsyncConnection, AsyncMysqlConnection as Conn, RunQueryDsl, SimpleAsyncConnection,
};
use diesel_occ::asynchronous as occ;
use diesel_occ::asynchronous::EntityDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::multi_host::{MultiHost, UrlSource};
use diesel_occ::retry::Attempt;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::testing::Race;
use diesel_occ::{Error, TransientKind};
use diesel_occ_tests::schema::mysql as schema;
use diesel_occ_tests::{Access, GaleraDb, connect_async};
use tokio::sync::{Barrier, watch};
use tokio::task::JoinSet;

use super::common::{
    AFTER_REJOIN, AttemptCounts, CAUSAL_READS, CREATE_INCREMENT_LOG, Counter, INCREMENTS, KILL_AT,
    KillSteps, Loss, NODE_STATE, NodeKillRun, PROGRESS_TIMEOUT, ROUNDS, STALE_READS_ALLOWED,
    STOP_APPLYING, WHILE_DOWN, WORKERS, check_certification, check_multi_host_run,
    check_race_round, describe, hot_row_policy, increment_log, loss, seed_row, value_of,
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
        check_race_round(round, &report, &row_everywhere(&db).await, &mut losses);
    }
    eprintln!(
        "{}: losers over {ROUNDS} rounds: {losses:?}",
        module_path!()
    );
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
        (
            AtomicBool::load(&saved_locally, Ordering::SeqCst),
            committed,
        )
    };
    let (first, second) = tokio::join!(writer(0), writer(1));
    let outcomes = [first, second];
    check_certification(&outcomes, row_everywhere(&db).await.value);
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

/// One increment of row 1, as a retry attempt on whatever node the source gave it.
async fn increment(conn: &mut Conn, attempt: &Attempt) -> Result<(), Error> {
    let mut row: Counter = attempt.find(conn, 1).await?;
    row.value += 1;
    row.save_checked(conn).await
}

/// Async twin: 8 tasks increment row 1 250 times each through a `MultiHost` over the
/// three nodes' deadpool pools; the row ends at exactly 2000 everywhere and every node
/// served attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_increment_through_all_three_nodes_to_exactly_2000() {
    let db = galera_db!(Access::Shared);
    seed(&db).await;
    let pools = db.urls().iter().map(|url| {
        // Like r2d2's, deadpool's default recycling pings every connection it hands
        // out; a checked-out connection that died fails its statement instead.
        let mut config = ManagerConfig::default();
        config.recycling_method = RecyclingMethod::Fast;
        Pool::builder(AsyncDieselConnectionManager::<Conn>::new_with_config(
            url, config,
        ))
        .max_size(WORKERS)
        .build()
        .expect("pool")
    });
    let nodes = Arc::new(MultiHost::new(pools));
    let counts = Arc::new(AttemptCounts::default());
    let start = Arc::new(Barrier::new(WORKERS));
    let started = Instant::now();
    let mut workers = JoinSet::new();
    for _ in 0..WORKERS {
        let (nodes, counts, start) = (nodes.clone(), counts.clone(), start.clone());
        workers.spawn(async move {
            let policy = hot_row_policy();
            start.wait().await;
            for _ in 0..INCREMENTS {
                let counts = &counts;
                occ::retry(&*nodes, &policy, async |conn, attempt| {
                    let result = increment(conn, &attempt).await;
                    counts.record(&result);
                    result
                })
                .await
                .expect("every increment ends saved");
            }
        });
    }
    while let Some(worker) = workers.join_next().await {
        worker.expect("worker");
    }
    let elapsed = started.elapsed();
    check_multi_host_run(
        module_path!(),
        &row_everywhere(&db).await,
        &counts,
        &nodes.node_stats(),
        elapsed,
    );
}

/// Waits until `target` increments were acknowledged (at most [`PROGRESS_TIMEOUT`]);
/// `step` names the run's step for the message when they were not.
async fn wait_for(acked: &watch::Sender<u64>, target: u64, step: &str) -> u64 {
    let mut rx = acked.subscribe();
    match tokio::time::timeout(PROGRESS_TIMEOUT, rx.wait_for(|n| *n >= target)).await {
        Ok(Ok(n)) => *n,
        _ => panic!(
            "{step}: only {} of {target} increments acknowledged after {PROGRESS_TIMEOUT:?}",
            *acked.borrow()
        ),
    }
}

/// Async twin of the node kill: 8 tasks increment through a `MultiHost` of connections
/// per attempt, logging each increment's id in its transaction; node 3 is SIGKILLed
/// after 100 acknowledged increments and restarted after 100 more, the run stops 100
/// after it is back. Unknown outcomes are reconciled through the log; attempts move to
/// nodes 1 and 2 and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_killed_under_load_loses_no_acknowledged_increment() {
    let db = galera_db!(Access::Exclusive);
    seed(&db).await;
    causal(&db, 1)
        .await
        .batch_execute(CREATE_INCREMENT_LOG)
        .await
        .expect("increment_log");
    for node in 2..=3 {
        let rows: i64 = increment_log::table
            .count()
            .get_result(&mut causal(&db, node).await)
            .await
            .expect("increment_log replicated");
        assert_eq!(rows, 0);
    }
    let nodes: Arc<MultiHost<UrlSource<Conn>>> = Arc::new(
        MultiHost::from_urls(db.urls().iter().cloned()).cool_down(Duration::from_millis(200)),
    );
    let counts = Arc::new(AttemptCounts::default());
    let acked = Arc::new(watch::Sender::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::<i64>::new()));
    let unknown = Arc::new(Mutex::new(Vec::<(i64, String)>::new()));
    let started = Instant::now();
    let mut workers = JoinSet::new();
    for worker in 0..WORKERS {
        let (nodes, counts, acked, stop) =
            (nodes.clone(), counts.clone(), acked.clone(), stop.clone());
        let (acknowledged, unknown) = (acknowledged.clone(), unknown.clone());
        workers.spawn(async move {
            let policy = hot_row_policy();
            for i in 0..100_000 {
                if AtomicBool::load(&stop, Ordering::SeqCst) {
                    break;
                }
                let op = i64::try_from(worker * 1_000_000 + i).unwrap();
                let counts = &counts;
                let result = occ::retry(&*nodes, &policy, async |conn, attempt| {
                    let result = conn
                        .transaction::<_, Error, _>(async |conn| {
                            increment(conn, &attempt).await?;
                            diesel::insert_into(increment_log::table)
                                .values(increment_log::op.eq(op))
                                .execute(conn)
                                .await?;
                            Ok(())
                        })
                        .await;
                    counts.record(&result);
                    result
                })
                .await;
                match result {
                    Ok(()) => {
                        acknowledged.lock().unwrap().push(op);
                        acked.send_modify(|n| *n += 1);
                    }
                    Err(error) => unknown.lock().unwrap().push((op, describe(&error))),
                }
            }
        });
    }
    // Stops the workers when the controller is done, or fails.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let stopper = StopOnDrop(stop.clone());
    wait_for(&acked, KILL_AT, "before the kill").await;
    // The script runs on this worker thread; the workers go on on the others.
    let down = tokio::task::block_in_place(|| db.kill_node(3));
    let killed = (*acked.borrow(), nodes.node_stats());
    wait_for(&acked, killed.0 + WHILE_DOWN, "node 3 down").await;
    let restarting = (*acked.borrow(), nodes.node_stats());
    let restart = tokio::task::block_in_place(|| down.restart());
    let rejoined = (*acked.borrow(), nodes.node_stats());
    wait_for(&acked, rejoined.0 + AFTER_REJOIN, "node 3 rejoined").await;
    let steps = KillSteps {
        killed,
        restarting,
        restart,
        rejoined,
        end: (*acked.borrow(), nodes.node_stats()),
    };
    drop(stopper);
    while let Some(worker) = workers.join_next().await {
        worker.expect("worker");
    }
    let elapsed = started.elapsed();

    let acknowledged = acknowledged.lock().unwrap().iter().copied().collect();
    let unknown = unknown.lock().unwrap().clone();
    NodeKillRun {
        acknowledged,
        unknown,
        logged: increment_log::table
            .select(increment_log::op)
            .load(&mut causal(&db, 1).await)
            .await
            .expect("the log")
            .into_iter()
            .collect(),
        row: row_everywhere(&db).await,
        steps,
        elapsed,
    }
    .check(module_path!(), &counts);
}

/// The deadline of the pessimistic run on a node that stops answering.
const PESSIMISTIC_DEADLINE: Duration = Duration::from_secs(2);
/// How long the control waits for a read bounded only on the server before giving up
/// on it: five times the deadline.
const NO_ANSWER_CAP: Duration = Duration::from_secs(10);

/// Pessimistic locking (`escalate_after(0)`: every attempt reads with `SELECT ... FOR
/// UPDATE` in its own transaction) with a 2 s deadline, on node 3, which stops
/// answering (`galera.sh freeze 3`, SIGSTOP: no socket is closed, as when its host dies)
/// right after the helper opened the attempt's transaction. The locking read gets no
/// answer; the helper abandons it at the deadline (plus a grace), discards the
/// connection and ends with `RetriesExhausted`, deadline reached, the last error a lock
/// wait timeout: nothing was written (no COMMIT was sent). The wait is printed.
///
/// Control, the read as the helper ran it before it had a client-side bound: bounded on
/// the server only (`SET STATEMENT max_statement_time = 2 FOR ... FOR UPDATE`), on a
/// frozen node it gets no answer at all; the test stops waiting after 10 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pessimistic_read_on_a_node_that_stops_answering_ends_at_the_deadline() {
    let db = galera_db!(Access::Exclusive);
    seed(&db).await;
    let node3: MultiHost<UrlSource<Conn>> = MultiHost::from_urls([db.url(3).to_owned()]);
    let policy = RetryPolicy::new()
        .escalate_after(0)
        .deadline(PESSIMISTIC_DEADLINE);
    let frozen = Mutex::new(None);
    let started = Instant::now();
    let result = occ::retry(&node3, &policy, async |conn, attempt| {
        assert!(attempt.is_escalated(), "pessimistic from the first attempt");
        // The attempt's transaction is open on node 3: now the node stops answering.
        let guard = tokio::task::block_in_place(|| db.freeze_node(3));
        *frozen.lock().unwrap() = Some(guard);
        let mut row: Counter = attempt.find(conn, 1).await?;
        row.value += 1;
        row.save_checked(conn).await
    })
    .await;
    let waited = started.elapsed();
    let guard = frozen.into_inner().unwrap().expect("node 3 was frozen");
    let thawed = tokio::task::block_in_place(|| guard.thaw());
    eprintln!(
        "{}: pessimistic, deadline {PESSIMISTIC_DEADLINE:?}, node 3 frozen under the locking \
         read: the helper returned after {waited:.2?} with {result:?}; thawed and Synced in \
         {thawed:.2?}",
        module_path!()
    );
    match &result {
        Err(Error::RetriesExhausted(exhausted)) => {
            assert!(exhausted.deadline_reached(), "{exhausted:?}");
            assert_eq!(
                exhausted.last_error().transient_kind(),
                Some(TransientKind::LockWaitTimeout),
                "{exhausted:?}"
            );
        }
        other => panic!("expected the deadline reached, got {other:?}"),
    }
    // Coarse: the helper did not wait for the node to come back.
    assert!(waited < NO_ANSWER_CAP, "{waited:?}");

    // Control: the same locking read, bounded on the server only.
    let mut conn = connect_async::<Conn>(db.url(3)).await.expect("node 3");
    conn.batch_execute("BEGIN").await.expect("BEGIN");
    let guard = tokio::task::block_in_place(|| db.freeze_node(3));
    let started = Instant::now();
    let read = tokio::time::timeout(
        NO_ANSWER_CAP,
        <Counter as EntityDsl<Conn>>::find_locked(&mut conn, 1, Some(PESSIMISTIC_DEADLINE)),
    )
    .await;
    let control = started.elapsed();
    // The read is still in flight on it: never use it again.
    drop(conn);
    let thawed = tokio::task::block_in_place(|| guard.thaw());
    eprintln!(
        "{}: control, the read bounded on the server only: {} after {control:.2?}; thawed and \
         Synced in {thawed:.2?}",
        module_path!(),
        if read.is_err() {
            "no answer, given up"
        } else {
            "answered"
        }
    );
    assert!(read.is_err(), "a frozen node answered a read: {read:?}");

    // After a node kill instead: node 3 SIGKILLed at the same point. Its sockets close
    // with it, so the read fails at once (a lost connection, whose outcome the helper
    // hands back without retrying); no deadline is needed to end the wait.
    let killed = Mutex::new(None);
    let started = Instant::now();
    let result = occ::retry(&node3, &policy, async |conn, attempt| {
        let guard = tokio::task::block_in_place(|| db.kill_node(3));
        *killed.lock().unwrap() = Some(guard);
        let mut row: Counter = attempt.find(conn, 1).await?;
        row.value += 1;
        row.save_checked(conn).await
    })
    .await;
    let after_kill = started.elapsed();
    let guard = killed.into_inner().unwrap().expect("node 3 was killed");
    let (restart, how) = tokio::task::block_in_place(|| guard.restart());
    eprintln!(
        "{}: pessimistic, node 3 SIGKILLed under the locking read: the helper returned \
         after {after_kill:.2?} with {result:?}; restarted in {restart:.2?} ({how})",
        module_path!()
    );
    assert!(result.is_err(), "{result:?}");
    let row = row_everywhere(&db).await;
    assert_eq!((row.value, row.version), (0, 1), "nothing was written");
}
