//! Galera on blocking connections (`MysqlConnection`, feature `mysql`): writers on
//! different nodes race on one row, a stale read from a lagging node, increments
//! through the multi-host source, a node killed under load, and a node cut off from
//! the other two (a network partition) under load.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::dsl::sql;
use diesel::mysql::MysqlConnection as Conn;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sql_types::Text;
use diesel_occ::blocking;
use diesel_occ::multi_host::{MultiHost, UrlSource};
use diesel_occ::prelude::*;
use diesel_occ::retry;
use diesel_occ::testing::Race;
use diesel_occ::{Error, TransientKind};
use diesel_occ_tests::schema::mysql as schema;
use diesel_occ_tests::{Access, GaleraDb};

use super::common::{
    AFTER_REJOIN, AttemptCounts, CAUSAL_READS, CREATE_INCREMENT_LOG, Counter, INCREMENTS, KILL_AT,
    KillSteps, Loss, NODE_STATE, NodeKillRun, PROGRESS_TIMEOUT, ROUNDS, STALE_READS_ALLOWED,
    STOP_APPLYING, WHILE_DOWN, WORKERS, check_certification, check_multi_host_run,
    check_race_round, describe, hot_row_policy, increment_log, loss, seed_row, served, value_of,
};

/// A session on node `node` (1 to 3) whose reads are causal.
fn causal(db: &GaleraDb, node: usize) -> Conn {
    let mut conn =
        Conn::establish(db.url(node)).unwrap_or_else(|e| panic!("connect to node {node}: {e}"));
    conn.batch_execute(CAUSAL_READS).expect("wsrep_sync_wait");
    conn
}

fn seed(db: &GaleraDb) {
    diesel::insert_into(schema::counters::table)
        .values(seed_row())
        .execute(&mut causal(db, 1))
        .expect("seed");
}

/// Row 1 as every node holds it (causal reads), after checking that they agree.
fn row_everywhere(db: &GaleraDb) -> Counter {
    let rows: Vec<Counter> = (1..=db.nodes())
        .map(|node| Counter::find(&mut causal(db, node), 1).expect("row 1"))
        .collect();
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
#[test]
fn writers_on_two_nodes_race_one_row_and_exactly_one_wins() {
    let db = galera_db!(Access::Shared);
    seed(&db);
    let mut losses: HashMap<Loss, usize> = HashMap::new();
    for round in 0..ROUNDS {
        let report = Race::new(2).run(
            |writer| {
                let mut conn = causal(&db, writer + 1);
                let row = Counter::find(&mut conn, 1).expect("row 1");
                (conn, row)
            },
            |writer, (mut conn, mut row)| {
                row.value = value_of(round, writer);
                row.save_checked(&mut conn).map(|()| row.value)
            },
        );
        check_race_round(round, &report, &row_everywhere(&db), &mut losses);
    }
    eprintln!(
        "{}: losers over {ROUNDS} rounds: {losses:?}",
        module_path!()
    );
}

/// Both writers save inside a transaction, each on its own node, and meet at a barrier
/// after the save, before the commit. Neither has committed, so each checked save
/// matches row 1 on its own node: the token check alone cannot stop the second writer
/// here. Certification does: exactly one commit succeeds, the other fails with error
/// 1213, which `is_retryable` says a retry would resolve, and the row holds the
/// winner's value on every node.
#[test]
fn saves_that_both_match_on_their_nodes_lose_one_commit_to_certification() {
    let db = galera_db!(Access::Shared);
    seed(&db);
    let barrier = Barrier::new(2);
    let outcomes: Vec<(bool, Result<i32, Error>)> = thread::scope(|scope| {
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let (db, barrier) = (&db, &barrier);
                scope.spawn(move || {
                    let mut conn = causal(db, writer + 1);
                    let mut saved_locally = false;
                    let value = value_of(0, writer);
                    let committed = conn.transaction::<_, Error, _>(|conn| {
                        let save = Counter::find(conn, 1).and_then(|mut row| {
                            row.value = value;
                            row.save_checked(conn)
                        });
                        saved_locally = save.is_ok();
                        // Both have saved (or failed) before either commits.
                        barrier.wait();
                        save.map(|()| value)
                    });
                    (saved_locally, committed)
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    check_certification(&outcomes, row_everywhere(&db).value);
}

/// Node 2 stops applying (a session there holds its global read lock), node 1 saves a
/// change, and a session on node 2 with stale reads allowed (`wsrep_sync_wait = 0`)
/// reads the old row: the read IS stale. Once node 2 applies again, saving that stale
/// entity there must fail, as a conflict or a certification failure, never succeed:
/// the row keeps node 1's change on every node.
#[test]
fn a_stale_read_on_a_lagging_node_never_becomes_a_lost_update() {
    let db = galera_db!(Access::Exclusive);
    seed(&db);
    let mut reader = causal(&db, 2);
    assert_eq!(Counter::find(&mut reader, 1).expect("row 1"), seed_row());
    reader
        .batch_execute(STALE_READS_ALLOWED)
        .expect("wsrep_sync_wait");

    let mut lock = causal(&db, 2);
    lock.batch_execute(STOP_APPLYING).expect("global read lock");
    let state: String = diesel::select(sql::<Text>(NODE_STATE))
        .get_result(&mut lock)
        .expect("node state");
    eprintln!("{}: node 2 holding its read lock: {state}", module_path!());

    let mut writer = causal(&db, 1);
    let mut fresh = Counter::find(&mut writer, 1).expect("row 1");
    fresh.value = 111;
    fresh.save_checked(&mut writer).expect("node 1 saves");

    let mut stale = Counter::find(&mut reader, 1).expect("row 1");
    assert_eq!(
        (stale.value, stale.version),
        (0, 1),
        "node 2 lags: its read is stale"
    );

    lock.batch_execute("UNLOCK TABLES").expect("unlock");
    drop(lock);
    stale.value = 222;
    let result = stale.save_checked(&mut reader);
    let error = result.expect_err("a stale save must not succeed");
    eprintln!(
        "{}: the stale save on node 2 lost by {:?}",
        module_path!(),
        loss(&error)
    );
    let row = row_everywhere(&db);
    assert_eq!((row.value, row.version), (111, 2), "node 1's change stays");
}

/// Creates the increment log on node 1 and checks that the other nodes have it.
fn create_increment_log(db: &GaleraDb) {
    causal(db, 1)
        .batch_execute(CREATE_INCREMENT_LOG)
        .expect("increment_log");
    for node in 2..=3 {
        let rows: i64 = increment_log::table
            .count()
            .get_result(&mut causal(db, node))
            .expect("increment_log replicated");
        assert_eq!(rows, 0);
    }
}

/// The operation ids the increment log holds (read on node 1, causally).
fn logged(db: &GaleraDb) -> HashSet<i64> {
    increment_log::table
        .select(increment_log::op)
        .load(&mut causal(db, 1))
        .expect("the log")
        .into_iter()
        .collect()
}

/// One increment of row 1, as a retry attempt on whatever node the source gave it.
fn increment(conn: &mut Conn, attempt: retry::Attempt) -> Result<(), Error> {
    let mut row: Counter = attempt.find(conn, 1)?;
    row.value += 1;
    row.save_checked(conn)
}

/// 8 workers increment row 1 250 times each through a `MultiHost` over the three
/// nodes' pools, with the retry helper (reads are not causal: an attempt may read a
/// stale row on its node, and then conflicts). The row ends at exactly 2000, on every
/// node, and every node served attempts.
#[test]
fn eight_workers_increment_through_all_three_nodes_to_exactly_2000() {
    let db = galera_db!(Access::Shared);
    seed(&db);
    let pools = db.urls().iter().map(|url| {
        Pool::builder()
            .max_size(u32::try_from(WORKERS).unwrap())
            .connection_timeout(Duration::from_secs(5))
            .build(ConnectionManager::<Conn>::new(url))
            .expect("pool")
    });
    let nodes = MultiHost::new(pools);
    let policy = hot_row_policy();
    let counts = AttemptCounts::default();
    let start = Barrier::new(WORKERS);
    let started = Instant::now();
    thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                start.wait();
                for _ in 0..INCREMENTS {
                    blocking::retry(&nodes, &policy, |conn, attempt| {
                        let result = increment(conn, attempt);
                        counts.record(&result);
                        result
                    })
                    .expect("every increment ends saved");
                }
            });
        }
    });
    let elapsed = started.elapsed();
    check_multi_host_run(
        module_path!(),
        &row_everywhere(&db),
        &counts,
        &nodes.node_stats(),
        elapsed,
    );
}

/// What the workers of the node-kill run have acknowledged, for the controller to
/// wait on (a counter, not a sleep).
#[derive(Default)]
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

    /// Waits until `target` increments were acknowledged (at most [`PROGRESS_TIMEOUT`]);
    /// `step` names the run's step for the message when they were not.
    fn wait_for(&self, target: u64, step: &str) {
        let (acked, timeout) = self
            .changed
            .wait_timeout_while(self.acked.lock().unwrap(), PROGRESS_TIMEOUT, |acked| {
                *acked < target
            })
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "{step}: only {} of {target} increments acknowledged after {PROGRESS_TIMEOUT:?}",
            *acked
        );
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Stops the workers when the controller is done, or fails.
struct StopOnDrop<'a>(&'a Progress);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
    }
}

/// 8 workers increment row 1 through a `MultiHost` over the three nodes (a connection
/// per attempt), each increment also logging its operation id in the same transaction.
/// After 100 acknowledged increments node 3 is SIGKILLed; after 100 more it is
/// restarted (it rejoins by IST) while the workers go on, and the run stops 100
/// increments after it is back. Attempts move to nodes 1 and 2 while node 3 is down and
/// back to it after; the increments whose outcome the workers never learnt (their
/// connection died) are reconciled through the log: the final count is the acknowledged
/// increments plus the unknown ones that committed, and equals the number of log rows.
#[test]
fn a_node_killed_under_load_loses_no_acknowledged_increment() {
    let db = galera_db!(Access::Exclusive);
    seed(&db);
    create_increment_log(&db);
    let nodes: MultiHost<UrlSource<Conn>> =
        MultiHost::from_urls(db.urls().iter().cloned()).cool_down(Duration::from_millis(200));
    let policy = hot_row_policy();
    let counts = AttemptCounts::default();
    let progress = Progress::default();
    let acknowledged = Mutex::new(Vec::<i64>::new());
    let unknown = Mutex::new(Vec::<(i64, String)>::new());
    let started = Instant::now();
    let steps = thread::scope(|scope| {
        for worker in 0..WORKERS {
            let (nodes, policy, counts, progress) = (&nodes, &policy, &counts, &progress);
            let (acknowledged, unknown) = (&acknowledged, &unknown);
            scope.spawn(move || {
                for i in 0..100_000 {
                    if progress.stopped() {
                        break;
                    }
                    let op = i64::try_from(worker * 1_000_000 + i).unwrap();
                    let result = blocking::retry(nodes, policy, |conn, attempt| {
                        let result = conn.transaction::<_, Error, _>(|conn| {
                            increment(conn, attempt)?;
                            diesel::insert_into(increment_log::table)
                                .values(increment_log::op.eq(op))
                                .execute(conn)?;
                            Ok(())
                        });
                        counts.record(&result);
                        result
                    });
                    match result {
                        Ok(()) => {
                            acknowledged.lock().unwrap().push(op);
                            progress.ack();
                        }
                        Err(error) => unknown.lock().unwrap().push((op, describe(&error))),
                    }
                }
            });
        }
        let _stop = StopOnDrop(&progress);
        progress.wait_for(KILL_AT, "before the kill");
        let down = db.kill_node(3);
        let killed = (progress.acked(), nodes.node_stats());
        progress.wait_for(killed.0 + WHILE_DOWN, "node 3 down");
        let restarting = (progress.acked(), nodes.node_stats());
        let restart = down.restart();
        let rejoined = (progress.acked(), nodes.node_stats());
        progress.wait_for(rejoined.0 + AFTER_REJOIN, "node 3 rejoined");
        KillSteps {
            killed,
            restarting,
            restart,
            rejoined,
            end: (progress.acked(), nodes.node_stats()),
        }
    });
    let elapsed = started.elapsed();

    NodeKillRun {
        acknowledged: acknowledged.into_inner().unwrap().into_iter().collect(),
        unknown: unknown.into_inner().unwrap(),
        logged: logged(&db),
        row: row_everywhere(&db),
        steps,
        elapsed,
    }
    .check(module_path!(), &counts);
}

/// Acknowledged increments before the cut, while node 3 is cut off, and after the heal.
const CUT_AT: u64 = 100;
const WHILE_CUT: u64 = 150;
const AFTER_HEAL: u64 = 100;

/// The partition run's policy: the hot-row policy with a deadline that an operation
/// caught by the cut must be done within, on a node of the primary component.
const PARTITION_DEADLINE: Duration = Duration::from_secs(10);

/// How one operation of the partition run ended.
#[derive(Debug)]
enum Ended {
    /// `Ok`: acknowledged.
    Acknowledged,
    /// Every attempt failed with a retryable error (nothing was written) until the
    /// attempts or the deadline ran out: known not applied.
    GaveUp(String),
    /// Any other error: the write may or may not have committed (a lost connection, a
    /// COMMIT the cut node could not replicate).
    Unknown(String),
}

/// One operation: its id, whether an attempt of it was refused by a node outside the
/// primary component (1047), how long it took, how it ended.
type Op = (i64, bool, Duration, Ended);

/// 8 workers increment row 1 through a `MultiHost` over the three nodes (a connection
/// per attempt, as in the node-kill run), each increment logging its id in the same
/// transaction, under a policy with a 10 s deadline. After 100 acknowledged increments
/// node 3's group traffic is cut (`galera.sh partition 3`: iptables, clients still reach
/// it); it goes non-primary and refuses statements with 1047, which the helper retries
/// on the next node. After 150 more the cut is healed (`galera.sh heal` waits until all
/// three are Synced, size 3), and the run stops 100 increments later. Checked: every
/// acknowledged increment committed, nothing committed twice (count = log rows = one
/// token step each), an operation that gave up wrote nothing, every other error is an
/// unknown outcome reconciled through the log; operations refused by node 3 while it
/// was cut off moved to the primary component (they ended acknowledged); node 3 served
/// again after the heal.
#[test]
fn a_node_cut_off_by_a_partition_loses_no_acknowledged_increment() {
    let db = galera_db!(Access::Exclusive);
    seed(&db);
    create_increment_log(&db);
    let nodes: MultiHost<UrlSource<Conn>> =
        MultiHost::from_urls(db.urls().iter().cloned()).cool_down(Duration::from_millis(200));
    let policy = hot_row_policy().deadline(PARTITION_DEADLINE);
    let counts = AttemptCounts::default();
    let progress = Progress::default();
    let ops = Mutex::new(Vec::<Op>::new());
    let started = Instant::now();
    let (cut, healing, healed, end, cut_took, heal) = thread::scope(|scope| {
        for worker in 0..WORKERS {
            let (nodes, policy, counts, progress, ops) =
                (&nodes, &policy, &counts, &progress, &ops);
            scope.spawn(move || {
                for i in 0..100_000 {
                    if progress.stopped() {
                        break;
                    }
                    let op = i64::try_from(worker * 1_000_000 + i).unwrap();
                    let mut refused = false;
                    let began = Instant::now();
                    let result = blocking::retry(nodes, policy, |conn, attempt| {
                        let result = conn.transaction::<_, Error, _>(|conn| {
                            increment(conn, attempt)?;
                            diesel::insert_into(increment_log::table)
                                .values(increment_log::op.eq(op))
                                .execute(conn)?;
                            Ok(())
                        });
                        counts.record(&result);
                        refused |= matches!(&result, Err(e) if e.transient_kind() == Some(TransientKind::NodeNotReady));
                        result
                    });
                    let ended = match result {
                        Ok(()) => {
                            progress.ack();
                            Ended::Acknowledged
                        }
                        Err(error @ Error::RetriesExhausted(_)) => {
                            Ended::GaveUp(format!("{error:?}"))
                        }
                        Err(error) => Ended::Unknown(describe(&error)),
                    };
                    ops.lock().unwrap().push((op, refused, began.elapsed(), ended));
                }
            });
        }
        let _stop = StopOnDrop(&progress);
        progress.wait_for(CUT_AT, "before the cut");
        let partition = db.partition_node(3);
        let cut_took = partition.took();
        let cut = (progress.acked(), nodes.node_stats());
        progress.wait_for(cut.0 + WHILE_CUT, "node 3 cut off");
        let healing = (progress.acked(), nodes.node_stats());
        let heal = partition.heal();
        let healed = (progress.acked(), nodes.node_stats());
        progress.wait_for(healed.0 + AFTER_HEAL, "healed");
        let end = (progress.acked(), nodes.node_stats());
        (cut, healing, healed, end, cut_took, heal)
    });
    let elapsed = started.elapsed();

    let ops = ops.into_inner().unwrap();
    let logged = logged(&db);
    let acknowledged: HashSet<i64> = ops
        .iter()
        .filter(|(_, _, _, ended)| matches!(ended, Ended::Acknowledged))
        .map(|(op, ..)| *op)
        .collect();
    let gave_up: Vec<&Op> = ops
        .iter()
        .filter(|(_, _, _, ended)| matches!(ended, Ended::GaveUp(_)))
        .collect();
    let unknown: Vec<&Op> = ops
        .iter()
        .filter(|(_, _, _, ended)| matches!(ended, Ended::Unknown(_)))
        .collect();
    let committed_unknown = unknown
        .iter()
        .filter(|(op, ..)| logged.contains(op))
        .count();
    let errors = |ops: &[&Op]| -> Vec<String> {
        ops.iter()
            .map(|(op, _, took, ended)| match ended {
                Ended::GaveUp(error) | Ended::Unknown(error) => {
                    format!("op {op} after {took:.2?}: {error}")
                }
                Ended::Acknowledged => format!("op {op} acknowledged"),
            })
            .collect()
    };
    let moved: Vec<&Op> = ops
        .iter()
        .filter(|(_, refused, _, ended)| *refused && matches!(ended, Ended::Acknowledged))
        .collect();
    let slowest_moved = moved.iter().map(|(_, _, took, _)| *took).max();
    let slowest = ops.iter().map(|(_, _, took, _)| *took).max();
    eprintln!(
        "{}: {} operations in {elapsed:.2?}: {} acknowledged, {} gave up (nothing written), \
         {} with the outcome unknown ({committed_unknown} of them committed) {:?}; \
         {} refused by node 3 (1047) and moved to the primary component, the slowest in \
         {slowest_moved:?}; slowest operation {slowest:?} (deadline {PARTITION_DEADLINE:?}); \
         {counts:?}\n  node 3 cut at {} acked in {cut_took:.2?}, served {:?}; healing at {} acked, \
         served {:?}, failures {:?}; healed in {:.2?} ({}) at {} acked, served {:?}; stopped \
         at {} acked, served {:?}",
        module_path!(),
        ops.len(),
        acknowledged.len(),
        gave_up.len(),
        unknown.len(),
        errors(&unknown),
        moved.len(),
        cut.0,
        served(&cut.1),
        healing.0,
        served(&healing.1),
        healing
            .1
            .iter()
            .map(|node| node.failures)
            .collect::<Vec<_>>(),
        heal.0,
        heal.1,
        healed.0,
        served(&healed.1),
        end.0,
        served(&end.1),
    );

    // Never an unknown outcome reported as a success, and nothing lost or doubled.
    assert!(
        acknowledged.is_subset(&logged),
        "every acknowledged increment committed"
    );
    assert!(
        gave_up.iter().all(|(op, ..)| !logged.contains(op)),
        "an operation that gave up (every attempt failed before writing) wrote nothing: {:?}",
        errors(&gave_up)
    );
    let attempted: HashSet<i64> = ops.iter().map(|(op, ..)| *op).collect();
    assert!(
        logged.is_subset(&attempted),
        "every logged increment was attempted"
    );
    let row = row_everywhere(&db);
    let value = usize::try_from(row.value).unwrap();
    assert_eq!(value, acknowledged.len() + committed_unknown);
    assert_eq!(value, logged.len(), "one log row per applied increment");
    assert_eq!(row.version, row.value + 1, "one token step per increment");

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
