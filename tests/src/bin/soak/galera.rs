//! The workload on the 3-node MariaDB Galera cluster of `tests/cluster/galera.sh`,
//! through `diesel_occ_examples::mysql`, with the workers' connections and the retry
//! helper's attempts spread over the nodes by a `MultiHost` source.
//!
//! - Nodes: `OCC_GALERA_URLS` (comma list), else three URLs from `OCC_GALERA_PORT`
//!   (default 13306, 13307, 13308), as `galera.sh` numbers them. The soak database is
//!   made through the first node that answers (DDL replicates) and dropped afterwards.
//! - A node counts as up when it accepts a connection and reports `wsrep_ready = ON`:
//!   a node that is joining (state transfer) or cut off from the primary component
//!   refuses queries (error 1047), so `MultiHost` skips it like a dead one.
//! - Reads run with Galera's default `wsrep_sync_wait = 0`: a node may not have applied
//!   a write another node acknowledged, so a read can be stale. The checked saves must
//!   still lose nothing (a stale save matches no row, or fails certification with 1213,
//!   which the retry helper retries). Only the final check reads causally
//!   (`wsrep_sync_wait = 1`), so it sees every committed write.
//! - Faults: a killed session on a random node every `--fault-every`, as on MariaDB;
//!   and with `--kill-node N`, node N SIGKILLed (`galera.sh kill N`) at `--kill-at` and
//!   started again (`galera.sh restart N`, which returns once it rejoined and all three
//!   are Synced) at `--restart-at`. The run must then show the node skipped while down
//!   (it served no checkout) and serving again after its restart. The seat bookings'
//!   r2d2 pool (`seat::book` takes one pool) connects to a node that is not killed.
//!   `--partition-node N` is the same with a network partition: at `--partition-at`
//!   node N's group traffic is cut off from the other two (`galera.sh partition N`,
//!   iptables; clients still reach it, and it refuses their statements with 1047 once
//!   it is non-primary), at `--heal-at` the cut is removed (`galera.sh heal`, which
//!   returns once all three are Synced again). The node must serve no checkout while
//!   cut off (`connect` finds `wsrep_ready` OFF) and serve again after the heal; the
//!   attempts that were on it when the cut came fail with 1047, or with an unknown
//!   outcome at COMMIT, and the check reconciles them like any other.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_migrations::MigrationHarness;
use diesel_occ::multi_host::NodeStats;
use diesel_occ_examples::mysql as examples;
use diesel_occ_tests::backend::{redact, with_database};

use crate::faults;
use crate::options::{Args, NodeFault, NodeFaultKind};
use crate::report::Report;

/// The connection the workload runs on.
type Conn = diesel::mysql::MysqlConnection;

/// The session fault, as the figures line names it.
const FAULT_KIND: &str = "sessions killed";

/// `SHOW STATUS LIKE 'wsrep_ready'`.
#[derive(QueryableByName)]
struct Status {
    #[diesel(sql_type = diesel::sql_types::Text)]
    #[diesel(column_name = "Value")]
    value: String,
}

/// A new connection to a node that is ready for queries; an error (so `MultiHost`
/// skips the node) when it is down, joining or not in the primary component.
fn connect(url: &str) -> ConnectionResult<Conn> {
    let mut conn = Conn::establish(url)?;
    conn.batch_execute("SET SESSION sql_mode = DEFAULT")
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    let ready: Vec<Status> = diesel::sql_query("SHOW STATUS LIKE 'wsrep_ready'")
        .load(&mut conn)
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    match ready.first() {
        Some(status) if status.value == "ON" => Ok(conn),
        _ => Err(ConnectionError::BadConnection(
            "the node is not ready for queries (wsrep_ready is not ON)".into(),
        )),
    }
}

/// The check's connection: reads wait until the node has applied every write the
/// cluster committed before them.
fn connect_for_check(url: &str) -> ConnectionResult<Conn> {
    let mut conn = connect(url)?;
    conn.batch_execute("SET SESSION wsrep_sync_wait = 1")
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// Kills one other session of the soak database on the node of `url`.
fn fault(url: &str, admin: &mut Option<Conn>, rng: &mut fastrand::Rng) -> bool {
    const SESSIONS: &str = "SELECT CAST(id AS SIGNED) AS id FROM information_schema.processlist \
                            WHERE db = DATABASE() AND id <> CONNECTION_ID()";
    faults::kill_server_session(admin, || connect(url).ok(), SESSIONS, kill, rng)
}

/// An error (1094, unknown thread) when the session had already ended.
fn kill(conn: &mut Conn, victim: i64) -> bool {
    conn.batch_execute(&format!("KILL CONNECTION {victim}"))
        .is_ok()
}

// The same files for every backend, each time for this module's connection type.
#[allow(clippy::duplicate_mod)]
#[path = "workload/retried/mod.rs"]
mod workload;

/// The node URLs: `OCC_GALERA_URLS`, else three from `OCC_GALERA_PORT` (default 13306).
fn node_urls() -> Vec<String> {
    if let Ok(list) = std::env::var("OCC_GALERA_URLS") {
        return list
            .split(',')
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(str::to_owned)
            .collect();
    }
    let first: u16 = std::env::var("OCC_GALERA_PORT")
        .ok()
        .and_then(|port| port.parse().ok())
        .unwrap_or(13306);
    (0..3)
        .map(|n| format!("mysql://root@127.0.0.1:{}/test", first + n))
        .collect()
}

/// The soak's database on the cluster, dropped at the end.
struct ClusterDb {
    nodes: Vec<String>,
    name: String,
}

impl ClusterDb {
    /// Creates and migrates it through the first node that answers; `None` when none
    /// does (after a line saying so).
    fn create(nodes: &[String]) -> Option<Self> {
        let Some(mut admin) = nodes.iter().find_map(|url| connect(url).ok()) else {
            let redacted: Vec<String> = nodes.iter().map(|url| redact(url)).collect();
            eprintln!(
                "galera: no node ready at {} (start the cluster with tests/cluster/galera.sh start)",
                redacted.join(", ")
            );
            return None;
        };
        let name = format!("occ_soak_galera_{}", std::process::id());
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        let db = ClusterDb {
            nodes: nodes.to_vec(),
            name,
        };
        let urls = db.urls();
        let mut conn = urls
            .iter()
            .find_map(|url| connect(url).ok())
            .expect("a node for the migrations");
        conn.run_pending_migrations(examples::MIGRATIONS)
            .unwrap_or_else(|e| panic!("galera migrations: {e}"));
        // DDL replicates in total order, but a node applies it on its own time: wait
        // until every node that is up has the schema before the workers read there.
        for url in &urls {
            if let Ok(mut conn) = connect_for_check(url) {
                conn.batch_execute("SELECT COUNT(*) FROM inventory")
                    .unwrap_or_else(|e| panic!("schema on {}: {e}", redact(url)));
            }
        }
        Some(db)
    }

    fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|url| with_database(url, &self.name))
            .collect()
    }
}

impl Drop for ClusterDb {
    fn drop(&mut self) {
        // Best effort, on the first node that answers.
        if let Some(mut admin) = self.nodes.iter().find_map(|url| connect(url).ok()) {
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {}", self.name));
        }
    }
}

/// Runs the workload on the cluster; `None` when no node answers.
pub(crate) fn run(args: &Args) -> Option<Report> {
    let db = ClusterDb::create(&node_urls())?;
    let urls = db.urls();
    let nodes = workload::nodes(&urls);
    // The bookings' single pool goes to a node that stays up.
    let pool_node = args
        .node_fault
        .as_ref()
        .map_or(0, |fault| fault.node % urls.len());
    // With a node fault, the run goes on past --duration until the node rejoined and
    // served again (the restart's state transfer under load can take a while).
    let hold = Arc::new(AtomicBool::new(args.node_fault.is_some()));
    let setup = workload::Setup {
        name: "galera",
        pool_url: urls[pool_node].clone(),
        nodes: Arc::clone(&nodes),
        urls,
        hold: Arc::clone(&hold),
    };
    let started = Instant::now();
    let mut report = thread::scope(|scope| {
        let fault = args.node_fault.as_ref().map(|fault| {
            let nodes = Arc::clone(&nodes);
            let hold = Release(Arc::clone(&hold));
            scope.spawn(move || kill_and_restart(fault, started, &nodes, hold))
        });
        let mut outcome = None;
        let mut report = workload::run_on(args, setup, || {
            // The check waits for the restart: it reads a whole cluster.
            outcome = fault.map(|handle| handle.join().expect("the node fault thread"));
        });
        if let Some(outcome) = outcome {
            outcome.report(&mut report, &nodes.node_stats());
        }
        report
    });
    report.notes.push(format!(
        "run took {:.1}s from the start of the workload",
        started.elapsed().as_secs_f64()
    ));
    drop(db);
    Some(report)
}

/// What happened to the killed node.
struct NodeOutcome {
    /// 0-based.
    index: usize,
    kind: NodeFaultKind,
    node: usize,
    lines: Vec<String>,
    failures: Vec<String>,
    /// The node's figures right before the kill, right after it, right before the
    /// restart, and right after the node rejoined.
    before_kill: Option<NodeStats>,
    after_kill: Option<NodeStats>,
    before_restart: Option<NodeStats>,
    after_restart: Option<NodeStats>,
}

impl NodeOutcome {
    /// Adds the timings and the node's figures to the report, and as shortfalls what
    /// the run failed to show.
    fn report(self, report: &mut Report, end: &[NodeStats]) {
        let node = self.node;
        report.notes.extend(self.lines);
        report.shortfalls.extend(self.failures);
        let end = end.get(self.index);
        let (Some(alive), Some(killed), Some(before), Some(rejoined), Some(end)) = (
            &self.before_kill,
            &self.after_kill,
            &self.before_restart,
            &self.after_restart,
            end,
        ) else {
            return;
        };
        let while_down = before.served - killed.served;
        let rejoining = rejoined.served - before.served;
        let after = end.served - rejoined.served;
        let (fault, undo) = match self.kind {
            NodeFaultKind::Kill => ("the kill", "the restart"),
            NodeFaultKind::Partition => ("the cut", "the heal"),
        };
        report.notes.push(format!(
            "node {node}: served {} checkouts before {fault}, {while_down} while down \
             ({} failed checkouts there, the rest skipped it while it cooled down), \
             {rejoining} during {undo} (once wsrep_ready, before all were Synced; {} \
             refused), {after} after it rejoined",
            killed.served,
            before.failures - alive.failures,
            rejoined.failures - before.failures,
        ));
        if while_down > 0 {
            report.shortfalls.push(format!(
                "node {node} served {while_down} checkouts while it was down"
            ));
        }
        if after == 0 {
            report
                .shortfalls
                .push(format!("node {node} served no checkout after it rejoined"));
        }
    }
}

/// Lets the run end (clears its hold) when dropped, however the node fault ended.
struct Release(Arc<AtomicBool>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// After the rejoin, the run goes on until the node served this many checkouts...
const SERVED_AFTER_REJOIN: u64 = 20;
/// ...or for this long.
const LOAD_AFTER_REJOIN: Duration = Duration::from_secs(10);

/// Kills `fault.node` at `kill_at` and restarts it at `restart_at` (from `started`),
/// with `galera.sh`; after the rejoin, keeps the run going (`hold`) until the node
/// served again. Returns the timings and the node's figures around them.
fn kill_and_restart(
    fault: &NodeFault,
    started: Instant,
    nodes: &workload::Nodes,
    hold: Release,
) -> NodeOutcome {
    let node = fault.node;
    let index = node - 1;
    let stats = || nodes.node_stats().get(index).cloned();
    let (start, undo) = fault.kind.commands();
    let (faulted, undone) = fault.kind.words();
    let mut outcome = NodeOutcome {
        index,
        kind: fault.kind,
        node,
        lines: Vec::new(),
        failures: Vec::new(),
        before_kill: None,
        after_kill: None,
        before_restart: None,
        after_restart: None,
    };
    let at = |since: Instant| since.duration_since(started).as_secs_f64();
    thread::sleep(fault.kill_at.saturating_sub(started.elapsed()));
    outcome.before_kill = stats();
    let t0 = Instant::now();
    match script(fault, start) {
        Ok(_) => {
            outcome.after_kill = stats();
            outcome.lines.push(format!(
                "node {node} {faulted} at {:.1}s ({} {start}; took {:.1}s)",
                at(t0),
                fault.script.display(),
                t0.elapsed().as_secs_f64()
            ));
        }
        Err(error) => {
            outcome
                .failures
                .push(format!("node {node} was not {faulted}: {error}"));
            return outcome;
        }
    }
    thread::sleep(fault.restart_at.saturating_sub(started.elapsed()));
    outcome.before_restart = stats();
    let t1 = Instant::now();
    match script(fault, undo) {
        Ok(said) => {
            outcome.after_restart = stats();
            let how = said
                .lines()
                .rfind(|line| line.contains("rejoined") || line.contains("Synced"))
                .unwrap_or("rejoined")
                .trim_start_matches("galera: ")
                .to_owned();
            let rejoined = Instant::now();
            outcome.lines.push(format!(
                "node {node} {undone} at {:.1}s, all three Synced at {:.1}s: {how}",
                at(t1),
                at(rejoined),
            ));
            let base = outcome.after_restart.as_ref().map_or(0, |s| s.served);
            while rejoined.elapsed() < LOAD_AFTER_REJOIN
                && stats().map_or(0, |s| s.served) < base + SERVED_AFTER_REJOIN
            {
                thread::sleep(Duration::from_millis(50));
            }
            outcome.lines.push(format!(
                "run held open until {:.1}s: node {node} served {} checkouts after it rejoined",
                at(Instant::now()),
                stats().map_or(0, |s| s.served) - base
            ));
        }
        Err(error) => outcome
            .failures
            .push(format!("node {node} did not rejoin: {error}")),
    }
    drop(hold);
    outcome
}

/// Runs `galera.sh <command> N`; what it printed on stderr, or why it failed.
fn script(fault: &NodeFault, command: &str) -> Result<String, String> {
    let output = Command::new(&fault.script)
        .arg(command)
        .arg(fault.node.to_string())
        .output()
        .map_err(|e| format!("{} {command}: {e}", fault.script.display()))?;
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    if output.status.success() {
        Ok(said)
    } else {
        let tail: Vec<&str> = said.lines().rev().take(5).collect();
        Err(format!(
            "{} {command} {} exited with {}: {}",
            fault.script.display(),
            fault.node,
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ))
    }
}
