//! Galera in both flavours (blocking on threads, async on tasks). Only the async driver lets
//! the helper bound, on the client, a wait on a node that stops answering.

flavour_prelude!();

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use diesel::dsl::sql;
use diesel::result::ConnectionResult;
use diesel::sql_types::Text;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_occ::multi_host::{MultiHost, NodeStats, UrlSource};
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::testing::Race;
use diesel_occ::{Error, TransientKind};
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::schema::mysql as schema;
use diesel_occ_tests::{Access, GaleraDb};

#[flavour(blocking)]
use {
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

/// Reads wait until the node applied every write set committed before them: never stale.
const CAUSAL_READS: &str = "SET SESSION wsrep_sync_wait = 1";

/// Reads take whatever the node has applied (the default): stale on a node that lags.
const STALE_READS_ALLOWED: &str = "SET SESSION wsrep_sync_wait = 0";

/// The node's global read lock: MariaDB desyncs the node and pauses its applier (the other
/// nodes' write sets queue up) while its reads still answer, until `UNLOCK TABLES`.
const STOP_APPLYING: &str = "FLUSH TABLES WITH READ LOCK";

/// `wsrep_local_state_comment` of the session's node.
const NODE_STATE: &str = "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
     WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT')";

/// Error 1047, from a node that is not ready (joining, or not in the primary component).
const NOT_READY: &str = "WSREP has not yet prepared node for application use";

/// How a writer that did not win lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Loss {
    /// A `ConcurrencyConflict`: the winner's write set was applied on its node first.
    Conflict,
    /// Matched on its node, refused at commit: failed certification or a brute-force abort (1213).
    Certification,
}

/// How `error` lost, after checking that it is retryable; panics on any other error.
fn loss(error: &Error) -> Loss {
    let retryable = error.is_retryable();
    assert!(retryable, "a loser's error is retryable: {error:?}");
    if error.is_conflict() {
        return Loss::Conflict;
    }
    let deadlock = error.transient_kind() == Some(TransientKind::Deadlock);
    assert!(deadlock, "no conflict, so certification (1213): {error:?}");
    Loss::Certification
}

/// The value writer `writer` of round `round` writes: distinct per writer and round.
fn value_of(round: usize, writer: usize) -> i32 {
    i32::try_from(1000 * (round + 1) + writer + 1).expect("small")
}

/// Rounds of the two-node race.
const ROUNDS: usize = 5;

/// Checks the certification race from each writer's (saved on its node, committed value)
/// and the row's value: both saves matched, one commit won, the other failed certification.
fn check_certification(outcomes: &[(bool, Result<i32, Error>)], value: i32) {
    let saved = outcomes.iter().all(|(saved, _)| *saved);
    assert!(saved, "both saves match on their nodes: {outcomes:?}");
    let results = outcomes.iter().map(|(_, result)| result.as_ref());
    let winners: Vec<i32> = results.clone().filter_map(|r| r.ok().copied()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let error = results.filter_map(Result::err).next().expect("a loser");
    assert_eq!(loss(error), Loss::Certification, "{error:?}");
    assert_eq!(value, winners[0], "the winner's value on every node");
}

diesel::table! {
    /// One row per committed increment of the node-kill scenario, in its transaction: an
    /// increment whose outcome the client never learnt committed exactly if its row is here.
    increment_log (op) {
        op -> BigInt,
    }
}

/// Creates [`increment_log`] (run on node 1; Galera replicates the DDL).
const CREATE_INCREMENT_LOG: &str = "CREATE TABLE increment_log (op BIGINT PRIMARY KEY)";

/// The multi-host run: workers, increments each.
const WORKERS: usize = 8;
const INCREMENTS: usize = 250;

/// Retries for a row 8 writers on 3 nodes increment: many attempts, a short jittered backoff.
fn hot_row_policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(500)
        .backoff(Duration::from_millis(1), Duration::from_millis(40))
}

/// How the attempts of a run ended, counted by the attempts themselves.
#[derive(Debug, Default)]
struct AttemptCounts {
    attempts: AtomicU64,
    conflicts: AtomicU64,
    certification_failures: AtomicU64,
}

impl AttemptCounts {
    /// Counts one attempt and, when it failed with a retryable error, how.
    fn record<T>(&self, result: &Result<T, Error>) {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        let counter = match result {
            Err(error) if error.is_conflict() => &self.conflicts,
            Err(error) if error.transient_kind() == Some(TransientKind::Deadlock) => {
                &self.certification_failures
            }
            _ => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The served counts of `stats`.
fn served(stats: &[NodeStats]) -> Vec<u64> {
    stats.iter().map(|node| node.served).collect()
}

/// Acknowledged increments before the kill, while the node is down, after it rejoined.
const KILL_STEPS: [u64; 3] = [100, 100, 100];

/// How long a node-kill or partition run waits for its next acknowledged increments.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(60);

/// The acknowledged increments and each node's stats at one step of a run.
type Snapshot = (u64, Vec<NodeStats>);

/// A snapshot, for messages.
fn show((acked, stats): &Snapshot) -> String {
    let failures: Vec<_> = stats.iter().map(|node| node.failures).collect();
    let served = served(stats);
    format!("at {acked} acked, served {served:?}, failures {failures:?}")
}

/// What a run's workers acknowledged, for the controller to wait on (not a sleep); and a stop.
#[derive(Debug, Default)]
struct Progress {
    acked: Mutex<u64>,
    changed: Condvar,
    stop: AtomicBool,
}

impl Progress {
    fn ack(&self) {
        *self.acked.lock().unwrap() += 1;
        self.changed.notify_all();
    }

    fn acked(&self) -> u64 {
        *self.acked.lock().unwrap()
    }

    /// Blocks until `target` increments were acknowledged, at most [`PROGRESS_TIMEOUT`].
    fn wait_for(&self, target: u64, step: &str) {
        let acked = self.acked.lock().unwrap();
        let (acked, timeout) = self
            .changed
            .wait_timeout_while(acked, PROGRESS_TIMEOUT, |acked| *acked < target)
            .unwrap();
        let (on_time, acked) = (!timeout.timed_out(), *acked);
        assert!(on_time, "{step}: {acked} of {target} acked, timed out");
    }

    fn stopped(&self) -> bool {
        AtomicBool::load(&self.stop, Ordering::SeqCst)
    }
}

/// Stops the workers when the controller is done, or fails.
struct StopOnDrop<'a>(&'a Progress);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
    }
}

/// One operation of a node-kill or partition run (`refused`, `took`: for the partition run).
#[derive(Debug)]
#[allow(dead_code)]
struct Op {
    id: i64,
    /// Whether an attempt of it was refused by a node that was not ready (1047).
    refused: bool,
    took: Duration,
    /// `Err(RetriesExhausted)`: every attempt failed retryably before writing: not applied. Any
    /// other error: maybe committed (a lost connection, a COMMIT the cut node could not replicate).
    result: Result<(), Error>,
}

impl Op {
    fn acknowledged(&self) -> bool {
        self.result.is_ok()
    }

    /// An unacknowledged operation's error with the driver's message (printed by these tests,
    /// not by a service), marked when not a database error.
    fn error(&self) -> Option<String> {
        Some(match self.result.as_ref().err()? {
            Error::Database(database) => database.diesel_error().to_string(),
            other => format!("NOT A DATABASE ERROR: {other:?}"),
        })
    }
}

#[flavour(blocking)]
impl Op {
    fn gave_up(&self) -> bool {
        matches!(self.result, Err(Error::RetriesExhausted(_)))
    }
}

/// Checks a run's operations against the increment log and the row on every node: every
/// acknowledged increment committed, every logged one was attempted, and the row counts the
/// acknowledged ones and the unacknowledged ones that committed, one log row and token step each.
fn check_ledger(ops: &[Op], logged: &HashSet<i64>, row: &Counter) {
    let acked = ops.iter().filter(|op| op.acknowledged());
    let acknowledged: HashSet<i64> = acked.map(|op| op.id).collect();
    let committed = acknowledged.is_subset(logged);
    assert!(committed, "every acknowledged increment committed");
    let attempted: HashSet<i64> = ops.iter().map(|op| op.id).collect();
    let ran = logged.is_subset(&attempted);
    assert!(ran, "every logged increment was attempted");
    let unacknowledged = ops.iter().filter(|op| !op.acknowledged());
    let committed_unknown = unacknowledged.filter(|op| logged.contains(&op.id)).count();
    let value = usize::try_from(row.value).unwrap();
    assert_eq!(value, acknowledged.len() + committed_unknown);
    assert_eq!(value, logged.len(), "one log row per applied increment");
    assert_eq!(row.version, row.value + 1, "one token step per increment");
}

/// Prints a node-kill run and checks it: an increment refused (1047) never ran, only a
/// database error left one unacknowledged, the log reconciles ([`check_ledger`]), and the
/// load left node 3 while it was down and came back after it rejoined by IST. `steps`: the
/// snapshots at the kill, restart, rejoin and end; `restart`: its duration, how it rejoined.
fn check_kill_run(
    test: &str,
    (ops, logged, row): (&[Op], &HashSet<i64>, &Counter),
    steps: &[Snapshot; 4],
    restart: &(Duration, String),
) {
    let [killed, restarting, rejoined, end] = steps;
    let errors = ops.iter().filter_map(|op| Some((op.id, op.error()?)));
    let unknown: Vec<(i64, String)> = errors.collect();
    let committed_unknown = unknown.iter().filter(|(op, _)| logged.contains(op)).count();
    // A rejoining node accepts connections before it is ready and refuses statements (1047,
    // unexecuted); the helper retries them, and an operation whose attempts ran out never ran.
    let (refused, lost): (Vec<_>, Vec<_>) =
        unknown.iter().partition(|(_, e)| e.contains(NOT_READY));
    let (acked, unacked) = (ops.len() - unknown.len(), unknown.len());
    let (refused_n, lost_n) = (refused.len(), lost.len());
    let [at_kill, at_restart, at_rejoin, at_end] = steps.each_ref().map(show);
    let (restart_took, how) = restart;
    eprintln!(
        "{test}: {acked} acknowledged, {unacked} unacknowledged ({committed_unknown} of them \
         committed): {refused_n} refused by a node not ready (1047), {lost_n} with the outcome \
         unknown {lost:?}\n  node 3 killed {at_kill}; restarted {at_restart}; rejoined in \
         {restart_took:.2?} ({how}) {at_rejoin}; stopped {at_end}"
    );
    let refused_ran = refused.iter().any(|(op, _)| logged.contains(op));
    assert!(!refused_ran, "an increment refused (1047) never ran");
    let database = unknown
        .iter()
        .all(|(_, e)| !e.starts_with("NOT A DATABASE ERROR"));
    // Only a database error (a lost connection) leaves an increment unacknowledged.
    assert!(database, "{unknown:?}");
    check_ledger(ops, logged, row);

    // Node 3 served nothing while it was down and was tried (and skipped); nodes 1
    // and 2 took the load; after it rejoined it served again.
    let (before, down) = (&killed.1, &restarting.1);
    assert_eq!(down[2].served, before[2].served, "{restarting:?}");
    assert!(down[2].failures > before[2].failures, "{restarting:?}");
    for node in 0..2 {
        let took_load = down[node].served > before[node].served;
        assert!(took_load, "{killed:?} {restarting:?}");
    }
    assert!(end.1[2].served > rejoined.1[2].served, "{end:?}");
    assert!(how.contains("IST completed"), "rejoined by IST: {how}");
}

/// A new connection to `url`.
#[flavour(blocking)]
fn connect(url: &str) -> ConnectionResult<Conn> {
    Conn::establish(url)
}

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

/// Seeds row 1: value 0 at token 1.
#[flavour]
async fn seed(db: &GaleraDb) {
    let mut conn = causal(db, 1).await;
    insert_rows!(&mut conn, schema::counters::table, Counter::new(1, 0));
}

/// Row 1 as every node holds it (causal reads), after checking that they agree.
#[flavour]
async fn row_everywhere(db: &GaleraDb) -> Counter {
    let mut rows = Vec::new();
    for node in 1..=db.nodes() {
        rows.push(row1(&mut causal(db, node).await).await);
    }
    let agree = rows.iter().all(|row| *row == rows[0]);
    assert!(agree, "the nodes disagree: {rows:?}");
    rows[0].clone()
}

/// Writers on nodes 1 and 2 read row 1, meet at the race's barrier and save (autocommit),
/// for a few rounds: one wins each round, the other loses (`Loss`), every node has the winner's.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn writers_on_two_nodes_race_one_row_and_exactly_one_wins() {
    let db = cluster_db!(GaleraDb, Access::Shared);
    seed(&db).await;
    let mut losses: HashMap<Loss, usize> = HashMap::new();
    for round in 0..ROUNDS {
        let read = async |writer: usize| {
            let mut conn = causal(&db, writer + 1).await;
            let row = row1(&mut conn).await;
            (conn, row)
        };
        let write = async |writer: usize, (mut conn, mut row): (Conn, Counter)| {
            row.value = value_of(round, writer);
            row.save_checked(&mut conn).await.map(|()| row.value)
        };
        let report = Race::new(2).run_in_flavour(read, write).await;
        // One winner, whose value the row holds on every node, one token step a round.
        let winners: Vec<_> = report.winners().collect();
        let losers: Vec<_> = report.losers().collect();
        let counts = (winners.len(), losers.len());
        assert_eq!(counts, (1, 1), "round {round}: {report:?}");
        *losses.entry(loss(losers[0].1)).or_default() += 1;
        let row = row_everywhere(&db).await;
        let winner = *winners[0].1;
        assert_eq!(row.value, winner, "round {round}: the winner's value");
        assert_eq!(row.version, 2 + i32::try_from(round).unwrap());
    }
    let test = module_path!();
    eprintln!("{test}: losers over {ROUNDS} rounds: {losses:?}");
}

/// Runs `writer(0)` and `writer(1)` at once, each on a thread of its own.
#[flavour(blocking)]
fn both<T: Send>(writer: impl Fn(usize) -> T + Sync) -> [T; 2] {
    let writer = &writer;
    thread::scope(|scope| {
        let writers = [0, 1].map(|n| scope.spawn(move || writer(n)));
        writers.map(|w| w.join().unwrap())
    })
}

/// Polls `writer(0)` and `writer(1)` together on the test's task.
#[flavour(asynchronous)]
async fn both<T>(writer: impl AsyncFn(usize) -> T) -> [T; 2] {
    let (first, second) = tokio::join!(writer(0), writer(1));
    [first, second]
}

/// Writers on nodes 1 and 2 save in a transaction and meet at a barrier before the commit: the
/// token check stops neither, certification fails one (1213), and every node has the winner's.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn saves_that_both_match_on_their_nodes_lose_one_commit_to_certification() {
    let db = cluster_db!(GaleraDb, Access::Shared);
    seed(&db).await;
    let barrier = Barrier::new(2);
    let outcomes = both(async |writer: usize| {
        let mut conn = causal(&db, writer + 1).await;
        let saved_locally = AtomicBool::new(false);
        let value = value_of(0, writer);
        let (barrier, saved) = (&barrier, &saved_locally);
        let save_then_meet = async move |conn: &mut Conn| {
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
        };
        let committed = conn.transaction::<_, Error, _>(save_then_meet).await;
        (saved_locally.into_inner(), committed)
    })
    .await;
    check_certification(&outcomes, row_everywhere(&db).await.value);
}

/// Node 2 stops applying (a session holds its global read lock), node 1 saves a change, and a
/// session on node 2 allowing stale reads reads the old row. Once node 2 applies again, saving
/// that stale entity there fails (`Loss`): the row keeps node 1's change on every node.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_stale_read_on_a_lagging_node_never_becomes_a_lost_update() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db).await;
    let mut reader = causal(&db, 2).await;
    assert_eq!(row1(&mut reader).await, Counter::new(1, 0));
    run_sql(&mut reader, STALE_READS_ALLOWED).await;

    let mut lock = causal(&db, 2).await;
    run_sql(&mut lock, STOP_APPLYING).await;
    let state = diesel::select(sql::<Text>(NODE_STATE));
    let state: String = state.get_result(&mut lock).await.expect("node state");
    let test = module_path!();
    eprintln!("{test}: node 2 holding its read lock: {state}");

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
    eprintln!("{test}: the stale save on node 2 lost by {lost_by:?}");
    let row = row_everywhere(&db).await;
    assert_eq!((row.value, row.version), (111, 2), "node 1's change stays");
}

/// Creates the increment log on node 1 and checks that the other nodes have it.
#[flavour]
async fn create_increment_log(db: &GaleraDb) {
    run_sql(&mut causal(db, 1).await, CREATE_INCREMENT_LOG).await;
    for node in 2..=3 {
        let (count, mut conn) = (increment_log::table.count(), causal(db, node).await);
        let rows = count.get_result::<i64>(&mut conn);
        assert_eq!(rows.await.expect("increment_log replicated"), 0);
    }
}

/// The operation ids the increment log holds (read on node 1, causally).
#[flavour]
async fn logged(db: &GaleraDb) -> HashSet<i64> {
    let ops = increment_log::table.select(increment_log::op);
    let ops: Vec<i64> = ops.load(&mut causal(db, 1).await).await.expect("the log");
    ops.into_iter().collect()
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

/// Runs `run`'s workers on threads beside `control`; returns its result once they are done.
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

/// Runs `run`'s workers, each on a task of its own, beside `control` on the test's task.
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

/// Runs a blocking step of a run's controller (a cluster script, a wait on the workers) in
/// place, the async workers going on on the other threads.
#[flavour(blocking)]
fn in_place<T>(step: impl FnOnce() -> T) -> T {
    step()
}

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
    let builder = Pool::builder().max_size(u32::try_from(WORKERS).unwrap());
    let builder = builder.connection_timeout(Duration::from_secs(5));
    let manager = ConnectionManager::<Conn>::new(url);
    builder.build(manager).expect("pool")
}

#[flavour(asynchronous)]
fn pool(url: &str) -> NodePool {
    // Like r2d2's, deadpool's default recycling pings every connection it hands out; a
    // checked-out connection that died fails its statement instead.
    let mut config = ManagerConfig::default();
    config.recycling_method = RecyclingMethod::Fast;
    let manager = AsyncDieselConnectionManager::<Conn>::new_with_config(url, config);
    let builder = Pool::builder(manager).max_size(WORKERS);
    builder.build().expect("pool")
}

/// The multi-host run: each worker increments row 1 [`INCREMENTS`] times, all starting at once.
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
            let saved = retry(&self.nodes, &self.policy, async |conn, attempt| {
                let result = increment(conn, &attempt).await;
                counts.record(&result);
                result
            });
            saved.await.expect("every increment ends saved");
        }
    }
}

/// 8 workers increment row 1 250 times each through a `MultiHost` over the nodes' pools (reads
/// not causal: a stale read conflicts): 2000 on every node, every node served, one checkout each.
#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
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
    let (row, stats) = (row_everywhere(&db).await, run.nodes.node_stats());
    let total = i32::try_from(WORKERS * INCREMENTS).unwrap();
    assert_eq!((row.value, row.version), (total, total + 1));
    let served = served(&stats);
    let attempts = AtomicU64::load(&run.counts.attempts, Ordering::Relaxed);
    let (test, counts) = (module_path!(), &run.counts);
    eprintln!(
        "{test}: {total} increments in {elapsed:.2?}: {attempts} attempts ({counts:?}), \
         served per node {served:?}"
    );
    let all_served = served.iter().all(|n| *n > 0);
    assert!(all_served, "every node served attempts: {stats:?}");
    let checkouts = served.iter().sum::<u64>();
    assert_eq!(checkouts, attempts, "one checkout per attempt");
}

/// The node-kill and partition runs' load: workers increment row 1 through a `MultiHost` (a
/// connection per attempt), logging each increment's id in its transaction, until stopped.
struct Load {
    nodes: MultiHost<UrlSource<Conn>>,
    policy: RetryPolicy,
    counts: AttemptCounts,
    progress: Progress,
    ops: Mutex<Vec<Op>>,
}

impl Load {
    fn new(db: &GaleraDb, policy: RetryPolicy) -> Arc<Self> {
        let nodes = MultiHost::from_urls(db.urls().iter().cloned());
        Arc::new(Self {
            nodes: nodes.cool_down(Duration::from_millis(200)),
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
                let logged = async |conn: &mut Conn| {
                    increment(conn, &attempt).await?;
                    let log = diesel::insert_into(increment_log::table);
                    log.values(increment_log::op.eq(id)).execute(conn).await?;
                    Ok::<_, Error>(())
                };
                let result = conn.transaction::<_, Error, _>(logged).await;
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
            let took = began.elapsed();
            self.ops.lock().unwrap().push(Op {
                id,
                refused,
                took,
                result,
            });
        }
    }
}

/// Under load, node 3 is SIGKILLed after 100 acknowledged increments, restarted (rejoining by
/// IST) after 100 more, and the run stops 100 after it is back. Attempts move to nodes 1 and 2
/// and back; increments whose outcome was never learnt are reconciled (`check_kill_run`).
#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn a_node_killed_under_load_loses_no_acknowledged_increment() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db).await;
    create_increment_log(&db).await;
    let load = Load::new(&db, hot_row_policy());
    let [kill_at, while_down, after_rejoin] = KILL_STEPS;
    let started = Instant::now();
    let (steps, restart) = beside_workers(&load, async || {
        let progress = &load.progress;
        let _stop = StopOnDrop(progress);
        in_place(|| progress.wait_for(kill_at, "before the kill"));
        let down = in_place(|| db.kill_node(3));
        let killed = load.snapshot();
        in_place(|| progress.wait_for(killed.0 + while_down, "node 3 down"));
        let restarting = load.snapshot();
        let restart = in_place(|| down.restart());
        let rejoined = load.snapshot();
        in_place(|| progress.wait_for(rejoined.0 + after_rejoin, "node 3 rejoined"));
        ([killed, restarting, rejoined, load.snapshot()], restart)
    })
    .await;
    let (elapsed, test) = (started.elapsed(), module_path!());
    let (ops, logged, row) = (load.ops(), logged(&db).await, row_everywhere(&db).await);
    eprintln!("{test}: in {elapsed:.2?}, {:?}", load.counts);
    check_kill_run(test, (&ops, &logged, &row), &steps, &restart);
}

/// Acknowledged increments before the cut, while node 3 is cut off, and after the heal.
#[flavour(blocking)]
const PARTITION_STEPS: [u64; 3] = [100, 150, 100];

/// The partition run's deadline: an operation caught by the cut ends within it.
#[flavour(blocking)]
const PARTITION_DEADLINE: Duration = Duration::from_secs(10);

/// The node-kill run's load with a 10 s deadline. After 100 acknowledged increments node 3's
/// group traffic is cut (`galera.sh partition 3`): it refuses statements (1047), retried on the
/// next node; 150 later the cut is healed, and 100 later the run stops. The log reconciles,
/// what gave up wrote nothing, what node 3 refused was acknowledged elsewhere, and it served again.
#[flavour(blocking, test)]
fn a_node_cut_off_by_a_partition_loses_no_acknowledged_increment() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db);
    create_increment_log(&db);
    let load = Load::new(&db, hot_row_policy().deadline(PARTITION_DEADLINE));
    let started = Instant::now();
    let [cut_at, while_cut, after_heal] = PARTITION_STEPS;
    let (cut, healing, healed, end, cut_took, heal) = beside_workers(&load, || {
        let progress = &load.progress;
        let _stop = StopOnDrop(progress);
        progress.wait_for(cut_at, "before the cut");
        let partition = db.partition_node(3);
        let cut_took = partition.took();
        let cut = load.snapshot();
        progress.wait_for(cut.0 + while_cut, "node 3 cut off");
        let healing = load.snapshot();
        let heal = partition.heal();
        let healed = load.snapshot();
        progress.wait_for(healed.0 + after_heal, "healed");
        (cut, healing, healed, load.snapshot(), cut_took, heal)
    });
    let elapsed = started.elapsed();

    let (ops, logged) = (load.ops(), logged(&db));
    let gave_up: Vec<&Op> = ops.iter().filter(|op| op.gave_up()).collect();
    let unknown = ops.iter().filter(|op| !op.acknowledged() && !op.gave_up());
    let errors: Vec<_> = unknown.map(|op| (op.id, op.took, op.error())).collect();
    let committed_unknown = errors.iter().filter(|(id, ..)| logged.contains(id)).count();
    let moved = ops.iter().filter(|op| op.refused && op.acknowledged());
    let moved: Vec<&Op> = moved.collect();
    let slowest_moved = moved.iter().map(|op| op.took).max();
    let slowest = ops.iter().map(|op| op.took).max();
    let (test, n_ops, n_gave_up, n_unknown) =
        (module_path!(), ops.len(), gave_up.len(), errors.len());
    let (n_moved, counts, (heal_took, how)) = (moved.len(), &load.counts, &heal);
    let [at_cut, at_healing, at_healed, at_end] = [&cut, &healing, &healed, &end].map(show);
    eprintln!(
        "{test}: {n_ops} operations in {elapsed:.2?}: {n_gave_up} gave up (nothing written), \
         {n_unknown} with the outcome unknown ({committed_unknown} of them committed) \
         {errors:?}; {n_moved} refused by node 3 (1047) and moved to the primary component, \
         the slowest in {slowest_moved:?}; slowest operation {slowest:?} (deadline \
         {PARTITION_DEADLINE:?}); {counts:?}\n  node 3 cut {at_cut} in {cut_took:.2?}; healing \
         {at_healing}; healed in {heal_took:.2?} ({how}) {at_healed}; stopped {at_end}"
    );

    // Never an unknown outcome reported as a success, and nothing lost or doubled.
    let none_logged = gave_up.iter().all(|op| !logged.contains(&op.id));
    assert!(none_logged, "gave up, yet logged: {gave_up:?}");
    check_ledger(&ops, &logged, &row_everywhere(&db));

    // While cut off, node 3 served attempts that it refused (1047), and the operations
    // they belonged to went on on nodes 1 and 2 and were acknowledged there.
    let handed = healing.1[2].served > cut.1[2].served;
    assert!(handed, "node 3 still served while cut off: {healing:?}");
    let moved_any = !moved.is_empty();
    assert!(moved_any, "refused by node 3, acknowledged elsewhere");
    for node in 0..2 {
        assert!(healing.1[node].served > cut.1[node].served);
    }
    // After the heal node 3 is Synced again (the heal waited for it) and serves again.
    assert!(end.1[2].served > healed.1[2].served, "{end:?}");
    assert!(how.contains("Synced with cluster size 3"), "{how}");
}

/// The deadline of the pessimistic run on a node that stops answering.
#[flavour(asynchronous)]
const PESSIMISTIC_DEADLINE: Duration = Duration::from_secs(2);
/// How long the control waits for a read bounded only on the server: five deadlines.
#[flavour(asynchronous)]
const NO_ANSWER_CAP: Duration = Duration::from_secs(10);

/// An escalated increment of row 1 on `node3` that calls `disturb` once the attempt's
/// transaction is open; returns the result, how long it took, and what `disturb` returned.
#[flavour(asynchronous)]
async fn disturbed<G: Send>(
    node3: &MultiHost<UrlSource<Conn>>,
    policy: &RetryPolicy,
    disturb: impl Fn() -> G + Sync,
) -> (Result<(), Error>, Duration, G) {
    let guard = Mutex::new(None);
    let started = Instant::now();
    let result = retry(node3, policy, async |conn, attempt| {
        assert!(attempt.is_escalated(), "pessimistic from the first attempt");
        *guard.lock().unwrap() = Some(in_place(&disturb));
        increment(conn, &attempt).await
    })
    .await;
    let took = started.elapsed();
    let guard = guard.into_inner().unwrap().expect("node 3 was disturbed");
    (result, took, guard)
}

/// Pessimistic locking (`escalate_after(0)`: `SELECT ... FOR UPDATE` in each attempt's
/// transaction) with a 2 s deadline on node 3, which stops answering (`galera.sh freeze 3`,
/// SIGSTOP: no socket closes, as when its host dies) once the attempt's transaction is open.
/// The helper abandons the read at the deadline (plus a grace), discards the connection and
/// ends with `RetriesExhausted`, the last error a lock wait timeout; nothing was written.
///
/// Control: the read bounded on the server only (`SET STATEMENT max_statement_time = 2 FOR
/// ...`), as before the client-side bound, gets no answer from a frozen node within 10 s.
#[flavour(asynchronous, test(flavor = "multi_thread", worker_threads = 2))]
async fn a_pessimistic_read_on_a_node_that_stops_answering_ends_at_the_deadline() {
    let db = cluster_db!(GaleraDb, Access::Exclusive);
    seed(&db).await;
    let node3: MultiHost<UrlSource<Conn>> = MultiHost::from_urls([db.url(3).to_owned()]);
    let policy = RetryPolicy::new().escalate_after(0);
    let policy = policy.deadline(PESSIMISTIC_DEADLINE);
    let (result, waited, guard) = disturbed(&node3, &policy, || db.freeze_node(3)).await;
    let thawed = in_place(|| guard.thaw());
    let test = module_path!();
    eprintln!(
        "{test}: pessimistic, deadline {PESSIMISTIC_DEADLINE:?}, node 3 frozen under the \
         locking read: the helper returned after {waited:.2?} with {result:?}; thawed and \
         Synced in {thawed:.2?}"
    );
    let Err(Error::RetriesExhausted(exhausted)) = &result else {
        panic!("expected the deadline reached, got {result:?}");
    };
    assert!(exhausted.deadline_reached(), "{exhausted:?}");
    let last = exhausted.last_error().transient_kind();
    assert_eq!(last, Some(TransientKind::LockWaitTimeout), "{exhausted:?}");
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
    let answer = read.as_ref().map_or("no answer, given up", |_| "answered");
    eprintln!(
        "{test}: control, the read bounded on the server only: {answer} after {control:.2?}; \
         thawed and Synced in {thawed:.2?}"
    );
    assert!(read.is_err(), "a frozen node answered a read: {read:?}");

    // Node 3 SIGKILLed at the same point instead: its sockets close, so the read fails at
    // once (a lost connection, handed back without retrying); no deadline needed.
    let (result, after_kill, guard) = disturbed(&node3, &policy, || db.kill_node(3)).await;
    let (restart, how) = in_place(|| guard.restart());
    eprintln!(
        "{test}: pessimistic, node 3 SIGKILLed under the locking read: the helper returned \
         after {after_kill:.2?} with {result:?}; restarted in {restart:.2?} ({how})"
    );
    assert!(result.is_err(), "{result:?}");
    let row = row_everywhere(&db).await;
    assert_eq!((row.value, row.version), (0, 1), "nothing was written");
}
