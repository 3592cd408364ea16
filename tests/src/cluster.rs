//! The replicated clusters of `tests/cluster/`: a 3-node MariaDB Galera cluster
//! ([`GaleraDb`]) and a PostgreSQL primary with one streaming standby
//! ([`PgReplicasDb`]), with a fresh database per test on them.
//!
//! Both are chosen like the single servers: `OCC_GALERA_URLS` (three node URLs),
//! `OCC_PG_PRIMARY_URL` and `OCC_PG_STANDBY_URL`; an unreachable cluster prints a
//! `SKIPPED` line, or fails the test when `OCC_REQUIRE` names it (`galera`,
//! `pg-replicas`).
//!
//! # Tests that disturb a cluster
//!
//! A test that kills a Galera node, holds a node's global read lock or pauses the
//! standby's replay would break the other tests that use the same cluster at that
//! moment, in other processes (nextest runs one process per test) or other threads
//! (`cargo test`). So every test holds a file lock on the cluster for as long as its
//! database lives: [`Access::Shared`] for the ordinary ones, [`Access::Exclusive`] for
//! the disturbing ones, which therefore run alone. The lock is `flock(2)` on a file
//! beside the cluster's state (`$OCC_CLUSTER_DIR/galera.tests.lock`,
//! `pg-replicas.tests.lock`); two opens of the file conflict also within one process.
//!
//! A disturbance is a guard that undoes it when dropped, also while a failed
//! assertion unwinds: [`NodeDown`] restarts the node (`galera.sh restart N`, which
//! waits until the three nodes are Synced again), [`NodePartitioned`] removes the cut
//! (`galera.sh heal`, which waits the same way), [`NodeFrozen`] continues a node stopped
//! with SIGSTOP (`galera.sh thaw N`), [`ReplayPaused`] resumes the replay
//! (`pg-replicas.sh resume-replay`). The scripts are run from this crate's
//! `cluster/` directory with the test's environment, so `OCC_CLUSTER_DIR` and the port
//! variables must be those the cluster was started with; before disturbing anything the
//! harness checks that the script's ports are the URLs' ports.
//!
//! A failover of the PostgreSQL pair ([`PgReplicasDb::failover`]) cannot be undone: its
//! guard, [`PairFailover`], makes a new pair instead (`pg-replicas.sh stop`, `start`).

use std::fs::{self, File, OpenOptions};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use std::{env, fmt, thread};

use diesel::connection::{Connection, SimpleConnection};
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::sql_types::{Bool, Text};
use diesel::{RunQueryDsl, sql_query};
use diesel_async::AsyncMysqlConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::MigrationHarness;

use crate::backend::{REQUIRE_VAR, redact, with_database};
use crate::db::{MYSQL_MIGRATIONS, POSTGRES_MIGRATIONS, database_name};
use crate::wait_until;

/// Environment variable holding the Galera nodes' URLs, comma separated (three).
pub const GALERA_URLS_VAR: &str = "OCC_GALERA_URLS";
/// Environment variable holding the PostgreSQL primary's URL.
pub const PG_PRIMARY_URL_VAR: &str = "OCC_PG_PRIMARY_URL";
/// Environment variable holding the PostgreSQL standby's URL.
pub const PG_STANDBY_URL_VAR: &str = "OCC_PG_STANDBY_URL";

const GALERA_DEFAULT: &str = "mysql://root@127.0.0.1:13306/test,mysql://root@127.0.0.1:13307/test,mysql://root@127.0.0.1:13308/test";
const PG_PRIMARY_DEFAULT: &str = "postgres://postgres@127.0.0.1:15432/test";
const PG_STANDBY_DEFAULT: &str = "postgres://postgres@127.0.0.1:15433/test";

/// How long the harness waits for a node to apply the test's schema, or the standby to
/// replay it.
const REPLICATION_WAIT: Duration = Duration::from_secs(30);

/// A blocking MySQL connection through the pure-Rust async driver, so that the harness
/// needs no MySQL client library (the async Galera tests do not either).
type MysqlSync = AsyncConnectionWrapper<AsyncMysqlConnection>;

/// One of the two replicated clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cluster {
    /// Three MariaDB Galera nodes, through `OCC_GALERA_URLS`.
    Galera,
    /// A PostgreSQL primary and a streaming standby, through `OCC_PG_PRIMARY_URL` and
    /// `OCC_PG_STANDBY_URL`.
    PgReplicas,
}

impl Cluster {
    /// Both clusters, in the order the runner reports them.
    pub const ALL: [Cluster; 2] = [Cluster::Galera, Cluster::PgReplicas];

    /// The name used in `OCC_REQUIRE` and in SKIPPED lines.
    pub fn name(self) -> &'static str {
        match self {
            Cluster::Galera => "galera",
            Cluster::PgReplicas => "pg-replicas",
        }
    }

    /// The cluster's server URLs from the environment or the defaults: the three Galera
    /// nodes, or the PostgreSQL primary then the standby.
    pub fn server_urls(self) -> Vec<String> {
        match self {
            Cluster::Galera => {
                let list = env::var(GALERA_URLS_VAR).unwrap_or_else(|_| GALERA_DEFAULT.into());
                let urls: Vec<String> = list
                    .split(',')
                    .map(str::trim)
                    .filter(|url| !url.is_empty())
                    .map(str::to_owned)
                    .collect();
                assert_eq!(
                    urls.len(),
                    3,
                    "{GALERA_URLS_VAR} must list the three nodes' URLs, comma separated"
                );
                urls
            }
            Cluster::PgReplicas => vec![
                env::var(PG_PRIMARY_URL_VAR).unwrap_or_else(|_| PG_PRIMARY_DEFAULT.into()),
                env::var(PG_STANDBY_URL_VAR).unwrap_or_else(|_| PG_STANDBY_DEFAULT.into()),
            ],
        }
    }

    /// True when `OCC_REQUIRE` names this cluster.
    pub fn is_required(self) -> bool {
        env::var(REQUIRE_VAR).is_ok_and(|list| crate::backend::named_in(&list, self.name()))
    }

    /// The script that manages this cluster, in this crate's `cluster/` directory.
    fn script(self) -> PathBuf {
        let name = match self {
            Cluster::Galera => "galera.sh",
            Cluster::PgReplicas => "pg-replicas.sh",
        };
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("cluster")
            .join(name)
    }

    /// The file the tests lock: beside the scripts' state, in `OCC_CLUSTER_DIR`.
    fn lock_path(self) -> PathBuf {
        let dir = env::var_os("OCC_CLUSTER_DIR").unwrap_or_else(|| "/tmp/occ-cluster".into());
        PathBuf::from(dir).join(format!("{}.tests.lock", self.name()))
    }

    /// Runs the cluster's script with `args` and the test's environment; panics with its
    /// output when it fails. Returns its standard error (where it reports).
    fn run_script(self, args: &[&str]) -> String {
        let script = self.script();
        let output = Command::new(&script)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "{} {} failed ({}):\n{stderr}{}",
            script.display(),
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout)
        );
        stderr
    }

    /// Panics unless the script manages the cluster the URLs name (same ports, in
    /// order): a disturbance must never hit another cluster than the tests use.
    fn check_script_matches(self, servers: &[String]) {
        let script = self.script();
        let output = Command::new(&script)
            .arg("urls")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let managed: Vec<Option<u16>> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(port_of)
            .collect();
        let configured: Vec<Option<u16>> = servers.iter().map(|url| port_of(url)).collect();
        assert!(
            output.status.success() && managed == configured,
            "{} manages ports {managed:?} but the tests use {configured:?}: export the \
             OCC_CLUSTER_DIR and port variables the cluster was started with \
             (tests/cluster/README.md)",
            script.display()
        );
    }

    fn unreachable(self, test: &str, reason: &str) {
        if self.is_required() {
            panic!("{} is required ({REQUIRE_VAR}) but {reason}", self.name());
        }
        eprintln!("SKIPPED {} {test}: {reason}", self.name());
    }
}

impl fmt::Display for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The port of a URL (`scheme://user@host:port/db`), when it names one.
fn port_of(url: &str) -> Option<u16> {
    let rest = url.trim().split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    host_port.rsplit_once(':')?.1.parse().ok()
}

/// How a test uses its cluster: see the [module documentation](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The test only reads and writes its own database: it runs beside other shared
    /// tests.
    Shared,
    /// The test disturbs the cluster (kills a node, locks a node, pauses the standby's
    /// replay): it runs alone.
    Exclusive,
}

/// A held lock on a cluster's lock file; released when dropped (the file is closed).
#[derive(Debug)]
struct ClusterLock {
    _file: File,
}

impl ClusterLock {
    fn acquire(cluster: Cluster, access: Access, test: &str) -> Self {
        let path = cluster.lock_path();
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
        let attempt = match access {
            Access::Shared => file.try_lock_shared(),
            Access::Exclusive => file.try_lock(),
        };
        if attempt.is_err() {
            let started = Instant::now();
            let held = match access {
                Access::Shared => file.lock_shared(),
                Access::Exclusive => file.lock(),
            };
            held.unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
            eprintln!(
                "{test}: waited {:.1?} for the {cluster} cluster ({access:?} access)",
                started.elapsed()
            );
        }
        ClusterLock { _file: file }
    }
}

/// Runs `f` on a thread of its own: the harness's blocking wrapper over the async MySQL
/// driver runs a runtime of its own, which must not be inside the caller's runtime.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    thread::scope(|scope| match scope.spawn(f).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// `wsrep_local_state_comment` and `wsrep_cluster_size` of the session's node, e.g.
/// `Synced 3`.
const NODE_STATE_AND_SIZE: &str = "(SELECT CONCAT(\
     MAX(IF(VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT', VARIABLE_VALUE, NULL)), ' ', \
     MAX(IF(VARIABLE_NAME = 'WSREP_CLUSTER_SIZE', VARIABLE_VALUE, NULL))) \
     FROM information_schema.GLOBAL_STATUS)";

fn text_value(conn: &mut MysqlSync, query: &str) -> String {
    diesel::select(sql::<Text>(query))
        .get_result(conn)
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

/// One test's database on the Galera cluster: created on node 1, migrated, and present
/// on all three nodes before [`GaleraDb::create`] returns; dropped when the test ends.
#[derive(Debug)]
pub struct GaleraDb {
    name: String,
    servers: Vec<String>,
    urls: Vec<String>,
    access: Access,
    // Last: released after the database is dropped.
    _lock: ClusterLock,
}

impl GaleraDb {
    /// A fresh migrated database for `test` on every node, with the cluster locked for
    /// `access`; `None` (after a SKIPPED line on stderr) when no node is reachable and
    /// the cluster is not required. Panics when only some nodes answer or the cluster is
    /// not Synced with three nodes: a broken cluster is not an absent one.
    ///
    /// Blocking; call it from async tests too (the work runs on a thread of its own).
    pub fn create(test: &str, access: Access) -> Option<Self> {
        let servers = Cluster::Galera.server_urls();
        let lock = ClusterLock::acquire(Cluster::Galera, access, test);
        let name = database_name(test);
        let urls: Vec<String> = servers.iter().map(|s| with_database(s, &name)).collect();
        let created = off_runtime(|| {
            let mut conns = Vec::new();
            let mut down = Vec::new();
            for (i, server) in servers.iter().enumerate() {
                match MysqlSync::establish(server) {
                    Ok(conn) => conns.push(conn),
                    Err(error) => down.push(format!(
                        "node {} not reachable at {}: {error}",
                        i + 1,
                        redact(server)
                    )),
                }
            }
            if conns.is_empty() {
                return Err(down.join("; "));
            }
            assert!(
                down.is_empty(),
                "the Galera cluster is degraded: {} (tests/cluster/galera.sh start starts \
                 the missing nodes)",
                down.join("; ")
            );
            // A node that has just left a disturbance (its read lock released, a
            // restart) may take a moment to be Synced again: wait for it, a while.
            for (i, conn) in conns.iter_mut().enumerate() {
                let started = Instant::now();
                loop {
                    let state = text_value(conn, NODE_STATE_AND_SIZE);
                    if state == "Synced 3" {
                        break;
                    }
                    assert!(
                        started.elapsed() < REPLICATION_WAIT,
                        "Galera node {} is not Synced in a cluster of three after \
                         {REPLICATION_WAIT:?}: {state}",
                        i + 1
                    );
                    thread::sleep(Duration::from_millis(20));
                }
            }
            conns[0]
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
            let mut db = MysqlSync::establish(&urls[0])
                .unwrap_or_else(|e| panic!("connect to {}: {e}", redact(&urls[0])));
            db.run_pending_migrations(MYSQL_MIGRATIONS)
                .unwrap_or_else(|e| panic!("galera migrations: {e}"));
            let count = format!(
                "(SELECT CAST(COUNT(*) AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{name}')"
            );
            let tables = text_value(&mut conns[0], &count);
            // A causal read on every other node waits until it has applied everything
            // the cluster committed before it, the schema included.
            for (i, conn) in conns.iter_mut().enumerate().skip(1) {
                conn.batch_execute("SET SESSION wsrep_sync_wait = 1")
                    .expect("wsrep_sync_wait");
                let what = format!("node {} to apply {name}'s schema", i + 1);
                wait_until(&what, REPLICATION_WAIT, || {
                    text_value(conn, &count) == tables
                });
            }
            Ok(())
        });
        if let Err(reason) = created {
            Cluster::Galera.unreachable(test, &reason);
            return None;
        }
        Some(GaleraDb {
            name,
            servers,
            urls,
            access,
            _lock: lock,
        })
    }

    /// How many nodes the cluster has (3).
    pub fn nodes(&self) -> usize {
        self.urls.len()
    }

    /// The URL of this database on node `node` (1 to 3, as the script numbers them).
    pub fn url(&self, node: usize) -> &str {
        assert!((1..=self.nodes()).contains(&node), "no Galera node {node}");
        &self.urls[node - 1]
    }

    /// This database's URLs on nodes 1 to 3, in order.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// SIGKILLs node `node` (`galera.sh kill N`, a crash); the returned guard restarts
    /// it. Needs [`Access::Exclusive`].
    pub fn kill_node(&self, node: usize) -> NodeDown<'_> {
        assert_eq!(
            self.access,
            Access::Exclusive,
            "only a test with exclusive access may kill a node"
        );
        assert!((1..=self.nodes()).contains(&node), "no Galera node {node}");
        Cluster::Galera.check_script_matches(&self.servers);
        let n = node.to_string();
        let report = Cluster::Galera.run_script(&["kill", &n]);
        eprint!("{report}");
        NodeDown {
            _db: self,
            node,
            restarted: false,
        }
    }
}

impl GaleraDb {
    /// Cuts node `node`'s group traffic off from the other two (`galera.sh partition N`,
    /// iptables; clients still reach it) and returns once it left the primary component:
    /// it is non-primary and refuses statements with error 1047, the other two form the
    /// primary component. The returned guard heals the cut. Needs [`Access::Exclusive`]
    /// and root (iptables).
    pub fn partition_node(&self, node: usize) -> NodePartitioned<'_> {
        assert_eq!(
            self.access,
            Access::Exclusive,
            "only a test with exclusive access may partition a node"
        );
        assert!((1..=self.nodes()).contains(&node), "no Galera node {node}");
        Cluster::Galera.check_script_matches(&self.servers);
        let started = Instant::now();
        let report = Cluster::Galera.run_script(&["partition", &node.to_string()]);
        eprint!("{report}");
        NodePartitioned {
            _db: self,
            node,
            took: started.elapsed(),
            healed: false,
        }
    }
}

impl GaleraDb {
    /// Stops node `node` with SIGSTOP (`galera.sh freeze N`): it answers nothing and
    /// closes no socket, as a node whose host died or hangs does for its clients. The
    /// returned guard thaws it (`galera.sh thaw N`, which waits until the three nodes are
    /// Synced). Needs [`Access::Exclusive`].
    pub fn freeze_node(&self, node: usize) -> NodeFrozen<'_> {
        assert_eq!(
            self.access,
            Access::Exclusive,
            "only a test with exclusive access may freeze a node"
        );
        assert!((1..=self.nodes()).contains(&node), "no Galera node {node}");
        Cluster::Galera.check_script_matches(&self.servers);
        let report = Cluster::Galera.run_script(&["freeze", &node.to_string()]);
        eprint!("{report}");
        NodeFrozen {
            _db: self,
            node,
            thawed: false,
        }
    }
}

/// A Galera node stopped by [`GaleraDb::freeze_node`]; [`thaw`](NodeFrozen::thaw) or
/// dropping the guard continues it and waits until the cluster is whole.
#[derive(Debug)]
#[must_use = "the node is thawed when this guard is dropped"]
pub struct NodeFrozen<'a> {
    _db: &'a GaleraDb,
    node: usize,
    thawed: bool,
}

impl NodeFrozen<'_> {
    /// Continues the node and waits until the three nodes are Synced with cluster size
    /// 3 (a node frozen longer than the eviction timeout rejoins first). Returns how long
    /// that took.
    pub fn thaw(mut self) -> Duration {
        self.thawed = true;
        let started = Instant::now();
        let report = Cluster::Galera.run_script(&["thaw", &self.node.to_string()]);
        eprint!("{report}");
        started.elapsed()
    }
}

impl Drop for NodeFrozen<'_> {
    fn drop(&mut self) {
        if self.thawed {
            return;
        }
        let script = Cluster::Galera.script();
        // Not through run_script: a panic here while a failed test unwinds would abort.
        match Command::new(&script)
            .args(["thaw", &self.node.to_string()])
            .output()
        {
            Ok(out) if out.status.success() => {
                eprintln!("galera node {} thawed by its guard", self.node);
            }
            Ok(out) => eprintln!(
                "galera node {} could not be thawed by its guard ({}): {}",
                self.node,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(error) => eprintln!("cannot run {}: {error}", script.display()),
        }
    }
}

/// A Galera node cut off by [`GaleraDb::partition_node`]. [`heal`](NodePartitioned::heal)
/// removes the cut and waits until the node rejoined; dropping the guard without that
/// heals too (also when a test fails), so the cluster is whole again for the next test.
#[derive(Debug)]
#[must_use = "the partition is healed when this guard is dropped"]
pub struct NodePartitioned<'a> {
    _db: &'a GaleraDb,
    node: usize,
    took: Duration,
    healed: bool,
}

impl NodePartitioned<'_> {
    /// The node that is cut off (1 to 3).
    pub fn node(&self) -> usize {
        self.node
    }

    /// How long `galera.sh partition N` took, until the node was out of the primary
    /// component.
    pub fn took(&self) -> Duration {
        self.took
    }

    /// Removes the cut (`galera.sh heal`) and waits until the three nodes are Synced
    /// with cluster size 3. Returns how long that took and the script's line saying so.
    pub fn heal(mut self) -> (Duration, String) {
        self.healed = true;
        let started = Instant::now();
        let report = Cluster::Galera.run_script(&["heal"]);
        let synced = report
            .lines()
            .find(|line| line.contains("Synced"))
            .unwrap_or_default()
            .to_owned();
        (started.elapsed(), synced)
    }
}

impl Drop for NodePartitioned<'_> {
    fn drop(&mut self) {
        if self.healed {
            return;
        }
        let script = Cluster::Galera.script();
        // Not through run_script: a panic here while a failed test unwinds would abort.
        match Command::new(&script).arg("heal").output() {
            Ok(out) if out.status.success() => {
                eprintln!("galera node {} healed by its guard", self.node);
            }
            Ok(out) => eprintln!(
                "galera node {} could not be healed by its guard ({}): {}",
                self.node,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(error) => eprintln!("cannot run {}: {error}", script.display()),
        }
    }
}

impl Drop for GaleraDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        let servers = self.servers.clone();
        // Best effort, on any node that answers: a failed drop leaves a database behind,
        // never fails a test.
        off_runtime(move || {
            for server in &servers {
                if let Ok(mut admin) = MysqlSync::establish(server)
                    && admin
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
                        .is_ok()
                {
                    return;
                }
            }
        });
    }
}

/// A Galera node killed by [`GaleraDb::kill_node`]. [`restart`](NodeDown::restart)
/// brings it back; dropping the guard without that restarts it too (also when a test
/// fails), so the cluster is whole again for the next test.
#[derive(Debug)]
#[must_use = "the node is restarted when this guard is dropped"]
pub struct NodeDown<'a> {
    // Borrowed so that the guard cannot outlive the test's database and lock.
    _db: &'a GaleraDb,
    node: usize,
    restarted: bool,
}

impl NodeDown<'_> {
    /// The node that is down (1 to 3).
    pub fn node(&self) -> usize {
        self.node
    }

    /// Restarts the node (`galera.sh restart N`: it rejoins, by IST when the donor's
    /// gcache still holds what it missed) and waits until the three nodes are Synced.
    /// Returns how long that took and the script's line saying how the node caught up.
    pub fn restart(mut self) -> (Duration, String) {
        self.restarted = true;
        let started = Instant::now();
        let report = Cluster::Galera.run_script(&["restart", &self.node.to_string()]);
        let rejoined = report
            .lines()
            .find(|line| line.contains("rejoined"))
            .unwrap_or_default()
            .to_owned();
        (started.elapsed(), rejoined)
    }
}

impl Drop for NodeDown<'_> {
    fn drop(&mut self) {
        if self.restarted {
            return;
        }
        let script = Cluster::Galera.script();
        // Not through run_script: a panic here while a failed test unwinds would abort.
        match Command::new(&script)
            .args(["restart", &self.node.to_string()])
            .output()
        {
            Ok(out) if out.status.success() => {
                eprintln!("galera node {} restarted by its guard", self.node);
            }
            Ok(out) => eprintln!(
                "galera node {} could not be restarted by its guard ({}): {}",
                self.node,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(error) => eprintln!("cannot run {}: {error}", script.display()),
        }
    }
}

/// One test's database on the PostgreSQL pair: created and migrated on the primary, and
/// replayed by the standby before [`PgReplicasDb::create`] returns; dropped when the
/// test ends.
#[derive(Debug)]
pub struct PgReplicasDb {
    name: String,
    servers: Vec<String>,
    primary: String,
    standby: String,
    access: Access,
    // Last: released after the database is dropped.
    _lock: ClusterLock,
}

impl PgReplicasDb {
    /// A fresh migrated database for `test`, on the primary and (replayed) on the
    /// standby, with the pair locked for `access`; `None` (after a SKIPPED line on
    /// stderr) when neither server is reachable and the pair is not required. Panics
    /// when only one answers or the standby is not one.
    ///
    /// A standby whose replay is paused when a test starts was left so by a test that
    /// was killed before its guard ran: it is resumed, with a line on stderr.
    pub fn create(test: &str, access: Access) -> Option<Self> {
        let servers = Cluster::PgReplicas.server_urls();
        let lock = ClusterLock::acquire(Cluster::PgReplicas, access, test);
        let (mut primary, mut standby) = match (
            PgConnection::establish(&servers[0]),
            PgConnection::establish(&servers[1]),
        ) {
            (Ok(primary), Ok(standby)) => (primary, standby),
            (Err(p), Err(s)) => {
                let reason = format!(
                    "primary not reachable at {}: {p}; standby not reachable at {}: {s}",
                    redact(&servers[0]),
                    redact(&servers[1])
                );
                Cluster::PgReplicas.unreachable(test, &reason);
                return None;
            }
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => panic!(
                "the PostgreSQL pair is half up ({e}): tests/cluster/pg-replicas.sh start \
                 starts what is missing"
            ),
        };
        let in_recovery: bool = diesel::select(sql::<Bool>("pg_is_in_recovery()"))
            .get_result(&mut standby)
            .expect("pg_is_in_recovery()");
        assert!(
            in_recovery,
            "{} is not a standby (not in recovery; promoted by a failover test killed \
             before its guard ran? pg-replicas.sh stop, then start, makes a new pair)",
            redact(&servers[1])
        );
        if is_replay_paused(&mut standby) {
            eprintln!(
                "{test}: the standby's replay was left paused (by a test killed before its \
                 guard ran?): resuming it"
            );
            standby
                .batch_execute("SELECT pg_wal_replay_resume()")
                .expect("pg_wal_replay_resume()");
        }
        let name = database_name(test);
        primary
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        let db = PgReplicasDb {
            primary: with_database(&servers[0], &name),
            standby: with_database(&servers[1], &name),
            name,
            servers,
            access,
            _lock: lock,
        };
        db.primary()
            .run_pending_migrations(POSTGRES_MIGRATIONS)
            .unwrap_or_else(|e| panic!("pg-replicas migrations: {e}"));
        db.wait_replayed();
        Some(db)
    }

    /// The URL of this database on the primary.
    pub fn primary_url(&self) -> &str {
        &self.primary
    }

    /// The URL of this database on the standby (read-only).
    pub fn standby_url(&self) -> &str {
        &self.standby
    }

    /// A new blocking connection to the primary (`lc_messages` C, like every test
    /// connection).
    pub fn primary(&self) -> PgConnection {
        connect_pg(&self.primary)
    }

    /// A new blocking connection to the standby.
    pub fn standby(&self) -> PgConnection {
        connect_pg(&self.standby)
    }

    /// Waits until the standby has replayed everything the primary had written when
    /// this was called. Panics when replay is paused.
    pub fn wait_replayed(&self) {
        let lsn: String = diesel::select(sql::<Text>("pg_current_wal_lsn()::text"))
            .get_result(&mut connect_pg(&self.servers[0]))
            .expect("pg_current_wal_lsn()");
        let mut standby = connect_pg(&self.servers[1]);
        assert!(
            !is_replay_paused(&mut standby),
            "wait_replayed with the standby's replay paused"
        );
        let what = format!("the standby to replay up to {lsn}");
        wait_until(&what, REPLICATION_WAIT, || {
            diesel::select(sql::<Bool>(&format!(
                "coalesce(pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn, false)"
            )))
            .get_result(&mut standby)
            .expect("pg_last_wal_replay_lsn()")
        });
    }

    /// Pauses the standby's replay (`pg-replicas.sh pause-replay`, which returns once it
    /// is paused): its reads go stale from here. The returned guard resumes it. Needs
    /// [`Access::Exclusive`].
    pub fn pause_replay(&self) -> ReplayPaused<'_> {
        assert_eq!(
            self.access,
            Access::Exclusive,
            "only a test with exclusive access may pause the standby's replay"
        );
        Cluster::PgReplicas.check_script_matches(&self.servers);
        Cluster::PgReplicas.run_script(&["pause-replay"]);
        ReplayPaused {
            db: self,
            resumed: false,
        }
    }
}

impl PgReplicasDb {
    /// The URL of this database on the pair's primary, then on its standby: after
    /// [`PairFailover::promote`], the second is the new primary.
    pub fn urls(&self) -> [&str; 2] {
        [&self.primary, &self.standby]
    }

    /// Takes the pair over for a failover (`pg-replicas.sh sync`, `hold-wal`,
    /// `kill-primary`, `promote`): the returned guard runs them and, when dropped,
    /// makes a new pair (`stop`, then `start`, which wipes both servers), so the tests
    /// after it find a primary and a streaming standby again. Needs
    /// [`Access::Exclusive`].
    pub fn failover(&self) -> PairFailover<'_> {
        assert_eq!(
            self.access,
            Access::Exclusive,
            "only a test with exclusive access may fail the pair over"
        );
        Cluster::PgReplicas.check_script_matches(&self.servers);
        PairFailover {
            _db: self,
            rebuilt: false,
        }
    }
}

/// The pair taken over by [`PgReplicasDb::failover`]. Each method runs one command of
/// `pg-replicas.sh` and returns what it reported; [`rebuild`](PairFailover::rebuild)
/// (or dropping the guard, also when a test fails) makes a new pair.
#[derive(Debug)]
#[must_use = "the pair is re-created when this guard is dropped"]
pub struct PairFailover<'a> {
    // Borrowed so that the guard cannot outlive the test's database and lock.
    _db: &'a PgReplicasDb,
    rebuilt: bool,
}

impl PairFailover<'_> {
    /// `sync on|off`: the standby becomes synchronous (a commit is acknowledged only
    /// once the standby has flushed it) or asynchronous again.
    pub fn sync(&self, on: bool) -> String {
        Cluster::PgReplicas.run_script(&["sync", if on { "on" } else { "off" }])
    }

    /// `hold-wal`: the standby's WAL stream is cut; no commit from here reaches it.
    pub fn hold_wal(&self) -> String {
        Cluster::PgReplicas.run_script(&["hold-wal"])
    }

    /// `kill-primary`: the primary and every process of it SIGKILLed.
    pub fn kill_primary(&self) -> String {
        Cluster::PgReplicas.run_script(&["kill-primary"])
    }

    /// `promote`: the standby ends recovery and takes writes, with what it had.
    pub fn promote(&self) -> String {
        Cluster::PgReplicas.run_script(&["promote"])
    }

    /// Makes a new pair (`stop`, `start`); returns how long that took.
    pub fn rebuild(mut self) -> Duration {
        self.rebuilt = true;
        let started = Instant::now();
        Cluster::PgReplicas.run_script(&["stop"]);
        Cluster::PgReplicas.run_script(&["start"]);
        started.elapsed()
    }
}

impl Drop for PairFailover<'_> {
    fn drop(&mut self) {
        if self.rebuilt {
            return;
        }
        // Not through run_script: a panic here while a failed test unwinds would abort.
        let script = Cluster::PgReplicas.script();
        for command in ["stop", "start"] {
            match Command::new(&script).arg(command).output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => {
                    eprintln!(
                        "the pair could not be re-created by its guard ({command}: {}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    return;
                }
                Err(error) => {
                    eprintln!("cannot run {}: {error}", script.display());
                    return;
                }
            }
        }
        eprintln!("the PostgreSQL pair was re-created by its guard");
    }
}

fn connect_pg(url: &str) -> PgConnection {
    let mut conn =
        PgConnection::establish(url).unwrap_or_else(|e| panic!("connect to {}: {e}", redact(url)));
    sql_query("SET lc_messages TO 'C'")
        .execute(&mut conn)
        .expect("set lc_messages");
    conn
}

fn is_replay_paused(standby: &mut PgConnection) -> bool {
    let state: String = diesel::select(sql::<Text>("pg_get_wal_replay_pause_state()"))
        .get_result(standby)
        .expect("pg_get_wal_replay_pause_state()");
    state != "not paused"
}

impl Drop for PgReplicasDb {
    fn drop(&mut self) {
        // Best effort: a failed drop leaves a database behind, never fails a test. The
        // standby's sessions on it end when it replays the drop.
        if let Ok(mut admin) = PgConnection::establish(&self.servers[0]) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// The standby's replay, paused by [`PgReplicasDb::pause_replay`].
/// [`resume`](ReplayPaused::resume) resumes it; dropping the guard without that resumes
/// it too (also when a test fails).
#[derive(Debug)]
#[must_use = "the replay is resumed when this guard is dropped"]
pub struct ReplayPaused<'a> {
    db: &'a PgReplicasDb,
    resumed: bool,
}

impl ReplayPaused<'_> {
    /// Resumes the replay and waits until the standby has caught up with the primary.
    pub fn resume(mut self) {
        self.resumed = true;
        Cluster::PgReplicas.run_script(&["resume-replay"]);
        self.db.wait_replayed();
    }
}

impl Drop for ReplayPaused<'_> {
    fn drop(&mut self) {
        if self.resumed {
            return;
        }
        // Not through run_script: a panic here while a failed test unwinds would abort.
        let script = Cluster::PgReplicas.script();
        match Command::new(&script).arg("resume-replay").output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "the standby's replay could not be resumed by its guard ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(error) => eprintln!("cannot run {}: {error}", script.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_from_urls() {
        assert_eq!(port_of("mysql://root@127.0.0.1:13307/test"), Some(13307));
        assert_eq!(port_of("postgres://u:p@h:15433/x?y=1"), Some(15433));
        assert_eq!(port_of("mysql://root@h/test"), None);
    }
}
