//! What the Galera scenarios share in both flavours: the row, how a losing writer lost,
//! the SQL that makes a node lag or read causally, and the checks and progress of the
//! runs under load.

// Each flavour uses a part of it.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use diesel_occ::multi_host::NodeStats;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::testing::RaceReport;
use diesel_occ::{Error, TransientKind};

/// The contended row (`counters` row 1).
pub(super) use diesel_occ_tests::entities::Counter;

/// Row 1 as seeded: value 0 at token 1.
pub(super) fn seed_row() -> Counter {
    Counter::new(1, 0)
}

/// Reads on this session wait until the node has applied every write set the cluster
/// committed before the read (`wsrep_sync_wait = 1`): a read that is never stale.
pub(super) const CAUSAL_READS: &str = "SET SESSION wsrep_sync_wait = 1";

/// Reads on this session take whatever the node has applied (`wsrep_sync_wait = 0`, the
/// default): they may be stale on a node that lags.
pub(super) const STALE_READS_ALLOWED: &str = "SET SESSION wsrep_sync_wait = 0";

/// Holds the node's global read lock: MariaDB desyncs the node and pauses its applier,
/// so the node stops applying the other nodes' write sets (they queue up) while its
/// reads still answer. Released by `UNLOCK TABLES` or when the session ends.
pub(super) const STOP_APPLYING: &str = "FLUSH TABLES WITH READ LOCK";

/// `wsrep_local_state_comment` of the session's node.
pub(super) const NODE_STATE: &str = "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
     WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT')";

/// MariaDB's error 1047 on a Galera node that is not ready (joining, or not in the
/// primary component).
pub(super) const NOT_READY: &str = "WSREP has not yet prepared node for application use";

/// How a writer that did not win lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Loss {
    /// Its checked write matched no row: the winner's write set had been applied on its
    /// node, so the token no longer matched (a typed `ConcurrencyConflict`).
    Conflict,
    /// Its write matched on its node, and the cluster refused it at commit: a
    /// certification failure or a brute-force abort by the winner's write set, which
    /// MariaDB reports as error 1213 (deadlock).
    Certification,
}

/// How `error` lost, after checking that the retry helpers would retry it; panics on any
/// other error.
pub(super) fn loss(error: &Error) -> Loss {
    assert!(
        error.is_retryable(),
        "a losing writer's error must be retryable: {error:?}"
    );
    if error.is_conflict() {
        return Loss::Conflict;
    }
    assert_eq!(
        error.transient_kind(),
        Some(TransientKind::Deadlock),
        "a loser that is not a conflict is a certification failure (1213): {error:?}"
    );
    Loss::Certification
}

/// The value writer `writer` of round `round` writes: distinct per writer and round.
pub(super) fn value_of(round: usize, writer: usize) -> i32 {
    i32::try_from(1000 * (round + 1) + writer + 1).expect("small")
}

/// Rounds of the two-node race.
pub(super) const ROUNDS: usize = 5;

/// Checks round `round` of the two-node race: exactly one winner, whose value `row`
/// (as every node holds it) has, at one token step per round; tallies how the loser
/// lost in `losses`.
pub(super) fn check_race_round(
    round: usize,
    report: &RaceReport<Result<i32, Error>>,
    row: &Counter,
    losses: &mut HashMap<Loss, usize>,
) {
    let winners: Vec<_> = report.winners().collect();
    assert_eq!(winners.len(), 1, "round {round}: {report:?}");
    let losers: Vec<_> = report.losers().collect();
    assert_eq!(losers.len(), 1, "round {round}: {report:?}");
    *losses.entry(loss(losers[0].1)).or_default() += 1;
    assert_eq!(
        row.value, *winners[0].1,
        "round {round}: the winner's value"
    );
    assert_eq!(row.version, 2 + i32::try_from(round).unwrap());
}

/// Checks the certification race, given each writer's (saved on its own node,
/// committed value) and row 1's value as every node holds it: both saves matched on
/// their nodes, exactly one commit won, the other failed certification.
pub(super) fn check_certification(outcomes: &[(bool, Result<i32, Error>)], value: i32) {
    let saved = outcomes.iter().all(|(saved, _)| *saved);
    assert!(
        saved,
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
    assert_eq!(value, winners[0], "the winner's value on every node");
}

diesel::table! {
    /// One row per committed increment of the node-kill scenario, written in the same
    /// transaction as the increment: an increment whose outcome the client never
    /// learnt is committed exactly when its row is here.
    increment_log (op) {
        op -> BigInt,
    }
}

/// Creates [`increment_log`] (run on node 1; Galera replicates the DDL).
pub(super) const CREATE_INCREMENT_LOG: &str = "CREATE TABLE increment_log (op BIGINT PRIMARY KEY)";

/// The multi-host run: workers, increments each.
pub(super) const WORKERS: usize = 8;
pub(super) const INCREMENTS: usize = 250;

/// Retries for a row that 8 writers on 3 nodes increment: plenty of attempts, a short
/// jittered backoff. Every conflict and certification failure is retried.
pub(super) fn hot_row_policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(500)
        .backoff(Duration::from_millis(1), Duration::from_millis(40))
}

/// How the attempts of a run ended, counted by the attempts themselves.
#[derive(Debug, Default)]
pub(super) struct AttemptCounts {
    pub(super) attempts: AtomicU64,
    pub(super) conflicts: AtomicU64,
    pub(super) certification_failures: AtomicU64,
}

impl AttemptCounts {
    /// Counts one attempt and, when it failed with a retryable error, how.
    pub(super) fn record<T>(&self, result: &Result<T, Error>) {
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

    pub(super) fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Relaxed)
    }
}

/// The served counts of `stats`, for messages.
pub(super) fn served(stats: &[NodeStats]) -> Vec<u64> {
    stats.iter().map(|node| node.served).collect()
}

/// Checks the multi-host run of [`WORKERS`] x [`INCREMENTS`]: the row (as every node
/// holds it) counted every increment at one token step each, every node served
/// attempts, and each attempt was one checkout.
pub(super) fn check_multi_host_run(
    test: &str,
    row: &Counter,
    counts: &AttemptCounts,
    stats: &[NodeStats],
    elapsed: Duration,
) {
    let total = i32::try_from(WORKERS * INCREMENTS).unwrap();
    assert_eq!((row.value, row.version), (total, total + 1));
    let served = served(stats);
    eprintln!(
        "{test}: {total} increments in {elapsed:.2?}: {} attempts ({counts:?}), served per \
         node {served:?}",
        counts.attempts(),
    );
    assert!(
        served.iter().all(|n| *n > 0),
        "every node served attempts: {stats:?}"
    );
    let checkouts = served.iter().sum::<u64>();
    assert_eq!(checkouts, counts.attempts(), "one checkout per attempt");
}

/// Acknowledged increments before the kill, while the node is down, and after it has
/// rejoined.
pub(super) const KILL_AT: u64 = 100;
pub(super) const WHILE_DOWN: u64 = 100;
pub(super) const AFTER_REJOIN: u64 = 100;

/// How long a node-kill or partition run waits for its next acknowledged increments.
pub(super) const PROGRESS_TIMEOUT: Duration = Duration::from_secs(60);

/// The acknowledged increments and each node's stats at one step of a run.
pub(super) type Snapshot = (u64, Vec<NodeStats>);

/// A snapshot, for messages.
pub(super) fn show((acked, stats): &Snapshot) -> String {
    format!("at {acked} acked, served {:?}", served(stats))
}

/// What the workers of a node-kill or partition run have acknowledged, for the
/// controller to wait on (a counter, not a sleep), and whether they should stop.
#[derive(Debug, Default)]
pub(super) struct Progress {
    acked: Mutex<u64>,
    changed: Condvar,
    stop: AtomicBool,
}

impl Progress {
    pub(super) fn ack(&self) {
        *self.acked.lock().unwrap() += 1;
        self.changed.notify_all();
    }

    pub(super) fn acked(&self) -> u64 {
        *self.acked.lock().unwrap()
    }

    /// Waits until `target` increments were acknowledged (at most [`PROGRESS_TIMEOUT`]);
    /// `step` names the run's step for the message when they were not. Blocks the
    /// calling thread (the async controller runs it in place).
    pub(super) fn wait_for(&self, target: u64, step: &str) {
        let acked = self.acked.lock().unwrap();
        let (acked, timeout) = self
            .changed
            .wait_timeout_while(acked, PROGRESS_TIMEOUT, |acked| *acked < target)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "{step}: only {} of {target} increments acknowledged after {PROGRESS_TIMEOUT:?}",
            *acked
        );
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Stops the workers when the controller is done, or fails.
pub(super) struct StopOnDrop<'a>(pub(super) &'a Progress);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
    }
}

/// How one operation of a node-kill or partition run ended.
#[derive(Debug)]
pub(super) enum Ended {
    /// `Ok`: acknowledged.
    Acknowledged,
    /// Every attempt failed with a retryable error (nothing was written) until the
    /// attempts or the deadline ran out: known not applied.
    GaveUp(Error),
    /// Any other error: the write may or may not have committed (a lost connection, a
    /// COMMIT the cut node could not replicate).
    Unknown(Error),
}

/// One operation of a node-kill or partition run.
#[derive(Debug)]
pub(super) struct Op {
    pub(super) id: i64,
    /// Whether an attempt of it was refused by a node that was not ready (1047).
    pub(super) refused: bool,
    pub(super) took: Duration,
    pub(super) ended: Ended,
}

impl Op {
    pub(super) fn new(id: i64, refused: bool, took: Duration, result: Result<(), Error>) -> Self {
        let ended = match result {
            Ok(()) => Ended::Acknowledged,
            Err(error @ Error::RetriesExhausted(_)) => Ended::GaveUp(error),
            Err(error) => Ended::Unknown(error),
        };
        Self {
            id,
            refused,
            took,
            ended,
        }
    }

    pub(super) fn acknowledged(&self) -> bool {
        matches!(self.ended, Ended::Acknowledged)
    }

    /// The error of an operation that was not acknowledged, with the driver's message
    /// (these tests print it; a service would not). Anything but a database error (a
    /// lost connection, a node not ready) would be the helper giving up: marked so.
    pub(super) fn error(&self) -> Option<String> {
        match &self.ended {
            Ended::Acknowledged => None,
            Ended::GaveUp(error) | Ended::Unknown(error) => Some(match error {
                Error::Database(database) => database.diesel_error().to_string(),
                other => format!("NOT A DATABASE ERROR: {other:?}"),
            }),
        }
    }
}

/// Checks the operations of a node-kill or partition run against the increment log
/// (`logged`) and row 1 as every node holds it: every acknowledged increment committed,
/// every logged one was attempted, and the row counts the acknowledged increments plus
/// the unacknowledged ones that committed, one log row and one token step each.
pub(super) fn check_ledger(ops: &[Op], logged: &HashSet<i64>, row: &Counter) {
    let acknowledged: HashSet<i64> = ops
        .iter()
        .filter(|op| op.acknowledged())
        .map(|op| op.id)
        .collect();
    assert!(
        acknowledged.is_subset(logged),
        "every acknowledged increment committed"
    );
    let attempted: HashSet<i64> = ops.iter().map(|op| op.id).collect();
    assert!(
        logged.is_subset(&attempted),
        "every logged increment was attempted"
    );
    let unacknowledged = ops.iter().filter(|op| !op.acknowledged());
    let committed_unknown = unacknowledged.filter(|op| logged.contains(&op.id)).count();
    let value = usize::try_from(row.value).unwrap();
    assert_eq!(value, acknowledged.len() + committed_unknown);
    assert_eq!(value, logged.len(), "one log row per applied increment");
    assert_eq!(row.version, row.value + 1, "one token step per increment");
}

/// What the controller of a node-kill run saw at each step.
pub(super) struct KillSteps {
    pub(super) killed: Snapshot,
    pub(super) restarting: Snapshot,
    /// How long the restart took and the script's line on how the node rejoined.
    pub(super) restart: (Duration, String),
    pub(super) rejoined: Snapshot,
    pub(super) end: Snapshot,
}

/// Prints a node-kill run and checks it: an increment refused by a node that was not
/// ready never ran, only a database error left one unacknowledged, the log reconciles
/// ([`check_ledger`]), and the load moved off node 3 while it was down and back after
/// it rejoined by IST.
pub(super) fn check_kill_run(
    test: &str,
    ops: &[Op],
    logged: &HashSet<i64>,
    row: &Counter,
    steps: &KillSteps,
) {
    let KillSteps {
        killed,
        restarting,
        restart,
        rejoined,
        end,
    } = steps;
    let unknown: Vec<(i64, String)> = ops
        .iter()
        .filter_map(|op| Some((op.id, op.error()?)))
        .collect();
    let committed_unknown = unknown.iter().filter(|(op, _)| logged.contains(op)).count();
    // A node that is rejoining accepts connections before it is ready and refuses
    // statements with error 1047 unexecuted; the helper retries it (NodeNotReady),
    // and an operation whose attempts all ran out on it never ran.
    let (refused, lost): (Vec<_>, Vec<_>) = unknown
        .iter()
        .partition(|(_, error)| error.contains(NOT_READY));
    eprintln!(
        "{test}: {} acknowledged, {} unacknowledged ({committed_unknown} of them committed): \
         {} refused by a node not ready (1047), {} with the outcome unknown {lost:?}\n  node 3 \
         killed {}; restarted {}; rejoined in {:.2?} ({}) {}; stopped {}, failures {:?}",
        ops.len() - unknown.len(),
        unknown.len(),
        refused.len(),
        lost.len(),
        show(killed),
        show(restarting),
        restart.0,
        restart.1,
        show(rejoined),
        show(end),
        end.1.iter().map(|node| node.failures).collect::<Vec<_>>()
    );
    let refused_ran = refused.iter().any(|(op, _)| logged.contains(op));
    assert!(
        !refused_ran,
        "an increment refused by a node that was not ready never ran"
    );
    assert!(
        unknown
            .iter()
            .all(|(_, error)| !error.starts_with("NOT A DATABASE ERROR")),
        "only a database error (a lost connection) leaves an increment unacknowledged"
    );
    check_ledger(ops, logged, row);

    // Node 3 served nothing while it was down and was tried (and skipped); nodes 1
    // and 2 took the load; after it rejoined it served again.
    let (before, down) = (&killed.1, &restarting.1);
    assert_eq!(down[2].served, before[2].served, "{restarting:?}");
    assert!(down[2].failures > before[2].failures, "{restarting:?}");
    for node in 0..2 {
        assert!(
            down[node].served > before[node].served,
            "{killed:?} {restarting:?}"
        );
    }
    assert!(end.1[2].served > rejoined.1[2].served, "{end:?}");
    assert!(
        restart.1.contains("IST completed"),
        "rejoined by IST: {}",
        restart.1
    );
}
