//! Galera in both flavours (see `mod.rs`): blocking on threads, async on tasks. Only
//! the async driver lets the helper bound a wait on a node that stops answering on the
//! client.

flavour_prelude!();

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::dsl::sql;
use diesel::result::ConnectionResult;
use diesel::sql_types::Text;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_occ::multi_host::{MultiHost, UrlSource};
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::testing::Race;
use diesel_occ::{Error, TransientKind};
use diesel_occ_tests::schema::mysql as schema;
use diesel_occ_tests::{Access, GaleraDb};

use super::common::{
    AFTER_REJOIN, AttemptCounts, CAUSAL_READS, CREATE_INCREMENT_LOG, Counter, INCREMENTS, KILL_AT,
    KillSteps, Loss, NODE_STATE, Op, Progress, ROUNDS, STALE_READS_ALLOWED, STOP_APPLYING,
    Snapshot, StopOnDrop, WHILE_DOWN, WORKERS, check_certification, check_kill_run,
    check_multi_host_run, check_race_round, hot_row_policy, increment_log, loss, seed_row,
    value_of,
};

#[flavour(blocking)]
use {
    super::common::{Ended, check_ledger, show},
    diesel::r2d2::{ConnectionManager, Pool},
    diesel_occ::blocking::retry,
    std::{sync::Barrier, thread},
};

#[flavour(asynchronous)]
use {
    diesel_async::pooled_connection::deadpool::Pool,
    diesel_async::pooled_connection::{
        AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
    },
    diesel_occ::asynchronous::retry,
    tokio::{sync::Barrier, task::JoinSet},
};

/// A new connection to `url`.
#[flavour(blocking)]
fn connect(url: &str) -> ConnectionResult<Conn> {
    Conn::establish(url)
}

/// A new connection to `url`, set up as every async test connection.
#[flavour(asynchronous)]
async fn connect(url: &str) -> ConnectionResult<Conn> {
    diesel_occ_tests::connect_async(url).await
}

/// Row 1, read on `conn`.
#[flavour]
async fn row1(conn: &mut Conn) -> Counter {
    Counter::find(conn, 1).await.expect("row 1")
}

/// A session on node `node` (1 to 3) whose reads are causal.
#[flavour]
async fn causal(db: &GaleraDb, node: usize) -> Conn {
    let conn = connect(db.url(node)).await;
    let mut conn = conn.unwrap_or_else(|e| panic!("connect to node {node}: {e}"));
    run_sql(&mut conn, CAUSAL_READS).await;
    conn
}

#[flavour]
async fn seed(db: &GaleraDb) {
    let mut conn = causal(db, 1).await;
    insert_rows!(&mut conn, schema::counters::table, seed_row());
}

/// Row 1 as every node holds it (causal reads), after checking that they agree.
#[flavour]
async fn row_everywhere(db: &GaleraDb) -> Counter {
    let mut rows = Vec::new();
    for node in 1..=db.nodes() {
        rows.push(row1(&mut causal(db, node).await).await);
    }
    assert!(
        rows.iter().all(|row| *row == rows[0]),
        "the nodes disagree: {rows:?}"
    );
    rows[0].clone()
}

/// Writer 0 on node 1 and writer 1 on node 2 both read row 1, meet at the race's barrier,
/// then save it with the token they read (autocommit), in each of a few rounds. Exactly
/// one wins each round; the other's write matched no row (the winner's write set was
/// applied first: a typed conflict) or failed certification (1213, retryable). The
/// row holds the winner's value, on every node.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_on_two_nodes_race_one_row_and_exactly_one_wins() {
    let db = cluster_db!(GaleraDb, Access::Shared);
    seed(&db).await;
    let mut losses: HashMap<Loss, usize> = HashMap::new();
    for round in 0..ROUNDS {
        let report = Race::new(2)
            .run_in_flavour(
                async |writer| {
                    let mut conn = causal(&db, writer + 1).await;
                    let row = row1(&mut conn).await;
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

/// Runs `writer(0)` and `writer(1)` at once, each on a thread of its own.
#[flavour(blocking)]
fn both<T: Send>(writer: impl Fn(usize) -> T + Sync) -> [T; 2] {
    let writer = &writer;
    thread::scope(|scope| {
        [0, 1]
            .map(|n| scope.spawn(move || writer(n)))
            .map(|w| w.join().unwrap())
    })
}

/// Polls `writer(0)` and `writer(1)` together on the test's task.
#[flavour(asynchronous)]
async fn both<T>(writer: impl AsyncFn(usize) -> T) -> [T; 2] {
    let (first, second) = tokio::join!(writer(0), writer(1));
    [first, second]
}

/// Both writers save inside a transaction, each on its own node, and meet at a barrier
/// after the save, before the commit. Neither has committed, so each checked save
/// matches row 1 on its own node: the token check alone cannot stop the second writer
/// here. Certification does: exactly one commit succeeds, the other fails with error
/// 1213, which `is_retryable` says a retry would resolve, and the row holds the
/// winner's value on every node.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saves_that_both_match_on_their_nodes_lose_one_commit_to_certification() {
    let db = cluster_db!(GaleraDb, Access::Shared);
    seed(&db).await;
    let barrier = Barrier::new(2);
    let outcomes = both(async |writer: usize| {
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
        (saved_locally.into_inner(), committed)
    })
    .await;
    check_certification(&outcomes, row_everywhere(&db).await.value);
}

/// Node 2 stops applying (a session there holds its global read lock), node 1 saves a
/// change, and a session on node 2 with stale reads allowed (`wsrep_sync_wait = 0`)
/// reads the old row: the read IS stale. Once node 2 applies again, saving that stale
/// entity there must fail, as a conflict or a certification failure, never succeed:
/// the row keeps node 1's change on every node.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_read_on_a_lagging_node_never_becomes_a_lost_update() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db).await;
    let mut reader = causal(&db, 2).await;
    assert_eq!(row1(&mut reader).await, seed_row());
    run_sql(&mut reader, STALE_READS_ALLOWED).await;

    let mut lock = causal(&db, 2).await;
    run_sql(&mut lock, STOP_APPLYING).await;
    let state: String = diesel::select(sql::<Text>(NODE_STATE))
        .get_result(&mut lock)
        .await
        .expect("node state");
    eprintln!("{}: node 2 holding its read lock: {state}", module_path!());

    let mut writer = causal(&db, 1).await;
    let mut fresh = row1(&mut writer).await;
    fresh.value = 111;
    fresh.save_checked(&mut writer).await.expect("node 1 saves");

    let mut stale = row1(&mut reader).await;
    let read = (stale.value, stale.version);
    assert_eq!(read, (0, 1), "node 2 lags: its read is stale");

    run_sql(&mut lock, "UNLOCK TABLES").await;
    drop(lock);
    stale.value = 222;
    let saved = stale.save_checked(&mut reader).await;
    let lost_by = loss(&saved.expect_err("a stale save must not succeed"));
    eprintln!(
        "{}: the stale save on node 2 lost by {lost_by:?}",
        module_path!()
    );
    let row = row_everywhere(&db).await;
    assert_eq!((row.value, row.version), (111, 2), "node 1's change stays");
}

/// Creates the increment log on node 1 and checks that the other nodes have it.
#[flavour]
async fn create_increment_log(db: &GaleraDb) {
    run_sql(&mut causal(db, 1).await, CREATE_INCREMENT_LOG).await;
    for node in 2..=3 {
        let rows: i64 = increment_log::table
            .count()
            .get_result(&mut causal(db, node).await)
            .await
            .expect("increment_log replicated");
        assert_eq!(rows, 0);
    }
}

/// The operation ids the increment log holds (read on node 1, causally).
#[flavour]
async fn logged(db: &GaleraDb) -> HashSet<i64> {
    increment_log::table
        .select(increment_log::op)
        .load(&mut causal(db, 1).await)
        .await
        .expect("the log")
        .into_iter()
        .collect()
}

/// One increment of row 1, as a retry attempt on whatever node the source gave it.
#[flavour]
async fn increment(conn: &mut Conn, attempt: &Attempt) -> Result<(), Error> {
    let mut row: Counter = attempt.find(conn, 1).await?;
    row.value += 1;
    row.save_checked(conn).await
}

/// What each of a run's [`WORKERS`] workers does, shared by them all.
#[flavour]
trait Work: Send + Sync + 'static {
    /// Worker `worker`'s part of the run.
    fn work(&self, worker: usize) -> impl Future<Output = ()> + Send;
}

/// Runs `run`'s workers, each on a thread of its own, beside `control` on the test's
/// thread; returns what `control` returns once the workers are done.
#[flavour(blocking)]
fn beside_workers<W: Work, T>(run: &Arc<W>, control: impl FnOnce() -> T) -> T {
    thread::scope(|scope| {
        for worker in 0..WORKERS {
            let run = &**run;
            scope.spawn(move || run.work(worker));
        }
        control()
    })
}

/// Runs `run`'s workers, each on a task of its own, beside `control` on the test's
/// task; returns what `control` returns once the workers are done.
#[flavour(asynchronous)]
async fn beside_workers<W: Work, T>(run: &Arc<W>, control: impl AsyncFnOnce() -> T) -> T {
    let mut workers = JoinSet::new();
    for worker in 0..WORKERS {
        let run = Arc::clone(run);
        workers.spawn(async move { run.work(worker).await });
    }
    let result = control().await;
    while let Some(worker) = workers.join_next().await {
        worker.expect("worker");
    }
    result
}

/// Runs a blocking step of a run's controller (a cluster script, a wait on the
/// workers' progress) on the test's thread.
#[flavour(blocking)]
fn in_place<T>(step: impl FnOnce() -> T) -> T {
    step()
}

/// Runs a blocking step of a run's controller (a cluster script, a wait on the
/// workers' progress) in place, the workers' tasks going on on the other threads.
#[flavour(asynchronous)]
fn in_place<T>(step: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(step)
}

/// The pools the multi-host run goes through, one per node.
#[flavour(blocking)]
type NodePool = Pool<ConnectionManager<Conn>>;
#[flavour(asynchronous)]
type NodePool = Pool<Conn>;

/// A pool of `WORKERS` connections to `url`.
#[flavour(blocking)]
fn pool(url: &str) -> NodePool {
    Pool::builder()
        .max_size(u32::try_from(WORKERS).unwrap())
        .connection_timeout(Duration::from_secs(5))
        .build(ConnectionManager::<Conn>::new(url))
        .expect("pool")
}

/// A pool of `WORKERS` connections to `url`.
#[flavour(asynchronous)]
fn pool(url: &str) -> NodePool {
    // Like r2d2's, deadpool's default recycling pings every connection it hands out; a
    // checked-out connection that died fails its statement instead.
    let mut config = ManagerConfig::default();
    config.recycling_method = RecyclingMethod::Fast;
    Pool::builder(AsyncDieselConnectionManager::<Conn>::new_with_config(
        url, config,
    ))
    .max_size(WORKERS)
    .build()
    .expect("pool")
}

/// The multi-host run: each worker increments row 1 [`INCREMENTS`] times through the
/// nodes' pools, all workers starting together.
struct Increments {
    nodes: MultiHost<NodePool>,
    policy: RetryPolicy,
    counts: AttemptCounts,
    start: Barrier,
}

#[flavour]
impl Work for Increments {
    async fn work(&self, _: usize) {
        self.start.wait().await;
        for _ in 0..INCREMENTS {
            let counts = &self.counts;
            retry(&self.nodes, &self.policy, async |conn, attempt| {
                let result = increment(conn, &attempt).await;
                counts.record(&result);
                result
            })
            .await
            .expect("every increment ends saved");
        }
    }
}

/// 8 workers increment row 1 250 times each through a `MultiHost` over the three
/// nodes' pools, with the retry helper (reads are not causal: an attempt may read a
/// stale row on its node, and then conflicts). The row ends at exactly 2000, on every
/// node, and every node served attempts.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_increment_through_all_three_nodes_to_exactly_2000() {
    let db = cluster_db!(GaleraDb, Access::Shared);
    seed(&db).await;
    let run = Arc::new(Increments {
        nodes: MultiHost::new(db.urls().iter().map(|url| pool(url))),
        policy: hot_row_policy(),
        counts: AttemptCounts::default(),
        start: Barrier::new(WORKERS),
    });
    let started = Instant::now();
    beside_workers(&run, async || ()).await;
    let elapsed = started.elapsed();
    check_multi_host_run(
        module_path!(),
        &row_everywhere(&db).await,
        &run.counts,
        &run.nodes.node_stats(),
        elapsed,
    );
}

/// The load of the node-kill and partition runs: each worker increments row 1 through
/// a `MultiHost` over the three nodes (a connection per attempt), each increment also
/// logging its operation id in the same transaction, until the controller stops it.
struct Load {
    nodes: MultiHost<UrlSource<Conn>>,
    policy: RetryPolicy,
    counts: AttemptCounts,
    progress: Progress,
    ops: Mutex<Vec<Op>>,
}

impl Load {
    fn new(db: &GaleraDb, policy: RetryPolicy) -> Arc<Self> {
        Arc::new(Self {
            nodes: MultiHost::from_urls(db.urls().iter().cloned())
                .cool_down(Duration::from_millis(200)),
            policy,
            counts: AttemptCounts::default(),
            progress: Progress::default(),
            ops: Mutex::default(),
        })
    }

    /// The increments acknowledged so far and each node's stats.
    fn snapshot(&self) -> Snapshot {
        (self.progress.acked(), self.nodes.node_stats())
    }

    /// The operations run, once the workers are done.
    fn ops(&self) -> Vec<Op> {
        std::mem::take(&mut self.ops.lock().unwrap())
    }
}

#[flavour]
impl Work for Load {
    async fn work(&self, worker: usize) {
        for i in 0..100_000 {
            if self.progress.stopped() {
                break;
            }
            let id = i64::try_from(worker * 1_000_000 + i).unwrap();
            let refused = AtomicBool::new(false);
            let began = Instant::now();
            let (counts, refused_ref) = (&self.counts, &refused);
            let result = retry(&self.nodes, &self.policy, async |conn, attempt| {
                let result = conn
                    .transaction::<_, Error, _>(async |conn| {
                        increment(conn, &attempt).await?;
                        diesel::insert_into(increment_log::table)
                            .values(increment_log::op.eq(id))
                            .execute(conn)
                            .await?;
                        Ok(())
                    })
                    .await;
                counts.record(&result);
                let kind = result.as_ref().err().and_then(Error::transient_kind);
                refused_ref.fetch_or(kind == Some(TransientKind::NodeNotReady), Ordering::SeqCst);
                result
            })
            .await;
            if result.is_ok() {
                self.progress.ack();
            }
            let refused = AtomicBool::load(&refused, Ordering::SeqCst);
            let op = Op::new(id, refused, began.elapsed(), result);
            self.ops.lock().unwrap().push(op);
        }
    }
}

/// A node-kill run: after 100 acknowledged increments node 3 is SIGKILLed; after 100
/// more it is restarted (it rejoins by IST) while the workers go on, and the run stops
/// 100 increments after it is back. Attempts move to nodes 1 and 2 while node 3 is
/// down and back to it after; the increments whose outcome the workers never learnt
/// (their connection died) are reconciled through the log: the final count is the
/// acknowledged increments plus the unknown ones that committed, and equals the number
/// of log rows.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_killed_under_load_loses_no_acknowledged_increment() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db).await;
    create_increment_log(&db).await;
    let load = Load::new(&db, hot_row_policy());
    let started = Instant::now();
    let steps = beside_workers(&load, async || {
        let progress = &load.progress;
        let _stop = StopOnDrop(progress);
        in_place(|| progress.wait_for(KILL_AT, "before the kill"));
        let down = in_place(|| db.kill_node(3));
        let killed = load.snapshot();
        in_place(|| progress.wait_for(killed.0 + WHILE_DOWN, "node 3 down"));
        let restarting = load.snapshot();
        let restart = in_place(|| down.restart());
        let rejoined = load.snapshot();
        in_place(|| progress.wait_for(rejoined.0 + AFTER_REJOIN, "node 3 rejoined"));
        let end = load.snapshot();
        KillSteps {
            killed,
            restarting,
            restart,
            rejoined,
            end,
        }
    })
    .await;
    let elapsed = started.elapsed();
    let (ops, logged, row) = (load.ops(), logged(&db).await, row_everywhere(&db).await);
    eprintln!("{}: in {elapsed:.2?}, {:?}", module_path!(), load.counts);
    check_kill_run(module_path!(), &ops, &logged, &row, &steps);
}

/// Acknowledged increments before the cut, while node 3 is cut off, and after the heal.
#[flavour(blocking)]
const CUT_AT: u64 = 100;
#[flavour(blocking)]
const WHILE_CUT: u64 = 150;
#[flavour(blocking)]
const AFTER_HEAL: u64 = 100;

/// The partition run's policy: the hot-row policy with a deadline that an operation
/// caught by the cut must be done within, on a node of the primary component.
#[flavour(blocking)]
const PARTITION_DEADLINE: Duration = Duration::from_secs(10);

/// The load of the node-kill run under a policy with a 10 s deadline. After 100
/// acknowledged increments node 3's group traffic is cut (`galera.sh partition 3`:
/// iptables, clients still reach it); it goes non-primary and refuses statements with
/// 1047, which the helper retries on the next node. After 150 more the cut is healed
/// (`galera.sh heal` waits until all three are Synced, size 3), and the run stops 100
/// increments later. Checked: the log reconciles as in the node-kill run (nothing lost
/// or committed twice), an operation that gave up wrote nothing; operations refused by
/// node 3 while it was cut off moved to the primary component (they ended
/// acknowledged); node 3 served again after the heal.
#[flavour(blocking)]
#[test]
fn a_node_cut_off_by_a_partition_loses_no_acknowledged_increment() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db);
    create_increment_log(&db);
    let load = Load::new(&db, hot_row_policy().deadline(PARTITION_DEADLINE));
    let started = Instant::now();
    let (cut, healing, healed, end, cut_took, heal) = beside_workers(&load, || {
        let progress = &load.progress;
        let _stop = StopOnDrop(progress);
        progress.wait_for(CUT_AT, "before the cut");
        let partition = db.partition_node(3);
        let cut_took = partition.took();
        let cut = load.snapshot();
        progress.wait_for(cut.0 + WHILE_CUT, "node 3 cut off");
        let healing = load.snapshot();
        let heal = partition.heal();
        let healed = load.snapshot();
        progress.wait_for(healed.0 + AFTER_HEAL, "healed");
        (cut, healing, healed, load.snapshot(), cut_took, heal)
    });
    let elapsed = started.elapsed();

    let (ops, logged) = (load.ops(), logged(&db));
    let ended = |kind: fn(&Ended) -> bool| -> Vec<&Op> {
        ops.iter().filter(|op| kind(&op.ended)).collect()
    };
    let gave_up = ended(|ended| matches!(ended, Ended::GaveUp(_)));
    let unknown = ended(|ended| matches!(ended, Ended::Unknown(_)));
    let committed_unknown = unknown.iter().filter(|op| logged.contains(&op.id)).count();
    let errors: Vec<_> = unknown
        .iter()
        .map(|op| (op.id, op.took, op.error()))
        .collect();
    let moved: Vec<&Op> = ops
        .iter()
        .filter(|op| op.refused && op.acknowledged())
        .collect();
    let slowest_moved = moved.iter().map(|op| op.took).max();
    let slowest = ops.iter().map(|op| op.took).max();
    eprintln!(
        "{}: {} operations in {elapsed:.2?}: {} gave up (nothing written), {} with the \
         outcome unknown ({committed_unknown} of them committed) {errors:?}; {} refused by \
         node 3 (1047) and moved to the primary component, the slowest in {slowest_moved:?}; \
         slowest operation {slowest:?} (deadline {PARTITION_DEADLINE:?}); {:?}\n  node 3 cut \
         {} in {cut_took:.2?}; healing {}, failures {:?}; healed in {:.2?} ({}) {}; stopped {}",
        module_path!(),
        ops.len(),
        gave_up.len(),
        unknown.len(),
        moved.len(),
        load.counts,
        show(&cut),
        show(&healing),
        healing
            .1
            .iter()
            .map(|node| node.failures)
            .collect::<Vec<_>>(),
        heal.0,
        heal.1,
        show(&healed),
        show(&end),
    );

    // Never an unknown outcome reported as a success, and nothing lost or doubled.
    assert!(
        gave_up.iter().all(|op| !logged.contains(&op.id)),
        "an operation that gave up (every attempt failed before writing) wrote nothing: \
         {gave_up:?}"
    );
    check_ledger(&ops, &logged, &row_everywhere(&db));

    // While cut off, node 3 served attempts that it refused (1047), and the operations
    // they belonged to went on on nodes 1 and 2 and were acknowledged there.
    assert!(
        healing.1[2].served > cut.1[2].served,
        "node 3 was still handed attempts while cut off: {healing:?}"
    );
    assert!(
        !moved.is_empty(),
        "operations refused by node 3 moved to the primary component and were acknowledged"
    );
    for node in 0..2 {
        assert!(healing.1[node].served > cut.1[node].served);
    }
    // After the heal node 3 is Synced again (the heal waited for it) and serves again.
    assert!(end.1[2].served > healed.1[2].served, "{end:?}");
    assert!(heal.1.contains("Synced with cluster size 3"), "{}", heal.1);
}

/// The deadline of the pessimistic run on a node that stops answering.
#[flavour(asynchronous)]
const PESSIMISTIC_DEADLINE: Duration = Duration::from_secs(2);
/// How long the control waits for a read bounded only on the server before giving up
/// on it: five times the deadline.
#[flavour(asynchronous)]
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
#[flavour(asynchronous)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pessimistic_read_on_a_node_that_stops_answering_ends_at_the_deadline() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db).await;
    let node3: MultiHost<UrlSource<Conn>> = MultiHost::from_urls([db.url(3).to_owned()]);
    let policy = RetryPolicy::new().escalate_after(0);
    let policy = policy.deadline(PESSIMISTIC_DEADLINE);
    let frozen = Mutex::new(None);
    let started = Instant::now();
    let result = retry(&node3, &policy, async |conn, attempt| {
        assert!(attempt.is_escalated(), "pessimistic from the first attempt");
        // The attempt's transaction is open on node 3: now the node stops answering.
        let guard = in_place(|| db.freeze_node(3));
        *frozen.lock().unwrap() = Some(guard);
        increment(conn, &attempt).await
    })
    .await;
    let waited = started.elapsed();
    let guard = frozen.into_inner().unwrap().expect("node 3 was frozen");
    let thawed = in_place(|| guard.thaw());
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
    let mut conn = connect(db.url(3)).await.expect("node 3");
    run_sql(&mut conn, "BEGIN").await;
    let guard = in_place(|| db.freeze_node(3));
    let started = Instant::now();
    let locked_read = Counter::find_locked(&mut conn, 1, Some(PESSIMISTIC_DEADLINE));
    let read = tokio::time::timeout(NO_ANSWER_CAP, locked_read).await;
    let control = started.elapsed();
    // The read is still in flight on it: never use it again.
    drop(conn);
    let thawed = in_place(|| guard.thaw());
    eprintln!(
        "{}: control, the read bounded on the server only: {} after {control:.2?}; thawed and \
         Synced in {thawed:.2?}",
        module_path!(),
        read.as_ref().map_or("no answer, given up", |_| "answered")
    );
    assert!(read.is_err(), "a frozen node answered a read: {read:?}");

    // After a node kill instead: node 3 SIGKILLed at the same point. Its sockets close
    // with it, so the read fails at once (a lost connection, whose outcome the helper
    // hands back without retrying); no deadline is needed to end the wait.
    let killed = Mutex::new(None);
    let started = Instant::now();
    let result = retry(&node3, &policy, async |conn, attempt| {
        let guard = in_place(|| db.kill_node(3));
        *killed.lock().unwrap() = Some(guard);
        increment(conn, &attempt).await
    })
    .await;
    let after_kill = started.elapsed();
    let guard = killed.into_inner().unwrap().expect("node 3 was killed");
    let (restart, how) = in_place(|| guard.restart());
    eprintln!(
        "{}: pessimistic, node 3 SIGKILLed under the locking read: the helper returned \
         after {after_kill:.2?} with {result:?}; restarted in {restart:.2?} ({how})",
        module_path!()
    );
    assert!(result.is_err(), "{result:?}");
    let row = row_everywhere(&db).await;
    assert_eq!((row.value, row.version), (0, 1), "nothing was written");
}
