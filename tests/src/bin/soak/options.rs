//! The command line: options, their defaults and the usage text.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use diesel_occ_tests::Backend;

pub(crate) use crate::pg_failover::{Failover, FailoverSetup};

/// What a soak runs against: one of the test backends, or a cluster: the 3-node
/// Galera cluster (`tests/cluster/galera.sh`) or the PostgreSQL primary and standby
/// (`tests/cluster/pg-replicas.sh`), which only `--backend galera` or
/// `--backend pg-replicas` select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A backend's single server (or SQLite file).
    Db(Backend),
    /// The Galera cluster's nodes (`OCC_GALERA_URLS`), through a multi-host source.
    Galera,
    /// The PostgreSQL pair (`OCC_PG_PRIMARY_URL`, `OCC_PG_STANDBY_URL`), for
    /// `retry_with_standby`.
    PgReplicas,
}

impl Target {
    /// What `all` means: every single-server backend, not the clusters.
    const ALL: [Target; 3] = [
        Target::Db(Backend::Postgres),
        Target::Db(Backend::Mysql),
        Target::Db(Backend::Sqlite),
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Target::Db(backend) => backend.name(),
            Target::Galera => "galera",
            Target::PgReplicas => "pg-replicas",
        }
    }

    /// Whether `path` runs here: a cluster runs the paths it exists for only.
    pub(crate) fn runs(self, path: &str) -> bool {
        match self {
            Target::Db(_) => true,
            Target::Galera => path == "retried",
            Target::PgReplicas => path.ends_with("retry_with_standby"),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--kill-node` / `--partition-node`: the Galera node to SIGKILL (or cut off from the
/// other two) during the run, and when to do it and undo it (restart it, or heal the
/// cut), from the start of the run.
// Read by the Galera soak only, which needs feature `mysql`.
#[cfg_attr(not(feature = "mysql"), allow(dead_code))]
#[derive(Debug, Clone)]
pub(crate) struct NodeFault {
    /// 1..3, as `galera.sh kill N` numbers them.
    pub(crate) node: usize,
    /// When the fault starts (`--kill-at`, `--partition-at`).
    pub(crate) kill_at: Duration,
    /// When it is undone (`--restart-at`, `--heal-at`).
    pub(crate) restart_at: Duration,
    /// A crash, or a network partition.
    pub(crate) kind: NodeFaultKind,
    /// `galera.sh`, run as `galera.sh kill N` and `galera.sh restart N`.
    pub(crate) script: PathBuf,
}

/// What `--kill-node` / `--partition-node` does to the node.
#[cfg_attr(not(feature = "mysql"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeFaultKind {
    /// `galera.sh kill N`, then `galera.sh restart N`.
    Kill,
    /// `galera.sh partition N` (its group traffic cut, clients still reach it), then
    /// `galera.sh heal`.
    Partition,
}

#[cfg_attr(not(feature = "mysql"), allow(dead_code))]
impl NodeFaultKind {
    /// The `galera.sh` commands that start and undo the fault.
    pub(crate) fn commands(self) -> (&'static str, &'static str) {
        match self {
            NodeFaultKind::Kill => ("kill", "restart"),
            NodeFaultKind::Partition => ("partition", "heal"),
        }
    }

    /// What the node is after the fault started, and how it came back, for the report.
    pub(crate) fn words(self) -> (&'static str, &'static str) {
        match self {
            NodeFaultKind::Kill => ("SIGKILLed", "restarted"),
            NodeFaultKind::Partition => ("cut off from the other two", "healed"),
        }
    }
}

/// Command-line options.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) backends: Vec<Target>,
    pub(crate) duration: Duration,
    pub(crate) workers: usize,
    pub(crate) fault_every: Duration,
    pub(crate) seed: u64,
    pub(crate) sabotage: bool,
    /// A backend that acknowledged fewer writes proves too little.
    pub(crate) min_acknowledged: u64,
    /// A backend that injected fewer faults proves too little.
    pub(crate) min_faults: u64,
    /// `--kill-node N` (galera only): a node killed and restarted during the run.
    pub(crate) node_fault: Option<NodeFault>,
    /// `--path`: the write paths to run, one after the other on each backend.
    pub(crate) paths: Vec<&'static str>,
    /// `--failover sync|async-held` (pg-replicas only): a failover during each run.
    pub(crate) failover: Option<Failover>,
}

/// Every write path the soak drives, in the order `all` runs them (`workload/`).
pub(crate) const PATHS: [&str; 37] = [
    "retried",
    "save_checked",
    "save_checked_where",
    "update_by_key",
    "upsert",
    "delete_checked",
    "delete_by_key",
    "tracked",
    "save_merging",
    "save_all_checked",
    "bulk_update",
    "force_increment",
    "soft_delete_checked",
    "transaction",
    "bypass_guard",
    "timestamp_now",
    "combiner",
    "retry_escalated",
    "retry_with_standby",
    "versionless",
    "async_save_checked",
    "async_save_checked_where",
    "async_update_by_key",
    "async_upsert",
    "async_delete_checked",
    "async_delete_by_key",
    "async_tracked",
    "async_save_merging",
    "async_save_all_checked",
    "async_bulk_update",
    "async_force_increment",
    "async_soft_delete_checked",
    "async_transaction",
    "async_combiner",
    "async_retry_escalated",
    "async_retry_with_standby",
    "async_versionless",
];

/// `all`, or a comma-separated list of path names.
fn parse_paths(list: &str) -> Result<Vec<&'static str>, String> {
    if list == "all" {
        return Ok(PATHS.to_vec());
    }
    list.split(',')
        .map(|name| {
            PATHS
                .into_iter()
                .find(|path| *path == name.trim())
                .ok_or(format!(
                    "unknown path {name:?} (paths: {})",
                    PATHS.join(", ")
                ))
        })
        .collect()
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (examples: 500ms, 30s, 2m)");
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |at| text.split_at(at));
    let n: u64 = number.parse().map_err(|_| bad())?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(bad()),
    }
}

pub(crate) fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        backends: Target::ALL.to_vec(),
        duration: Duration::from_secs(30),
        workers: 8,
        fault_every: Duration::from_millis(200),
        seed: 0x5eed_0cc0,
        sabotage: false,
        min_acknowledged: MIN_ACKNOWLEDGED,
        min_faults: 1,
        node_fault: None,
        paths: PATHS.to_vec(),
        failover: None,
    };
    let (mut failover, mut failover_at) = (None, None);
    let (mut kill_node, mut kill_at, mut restart_at, mut script) = (None, None, None, None);
    let (mut partition_node, mut partition_at, mut heal_at) = (None, None, None);
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        let name = match arg {
            lexopt::Arg::Long(name) => format!("--{name}"),
            lexopt::Arg::Short('h') => "--help".to_owned(),
            lexopt::Arg::Short(c) => return Err(format!("unknown option \"-{c}\"")),
            lexopt::Arg::Value(v) => {
                return Err(format!("unknown option {:?}", v.to_string_lossy()));
            }
        };
        let mut value = || -> Result<String, String> {
            parser
                .value()
                .map_err(|_| format!("{name} needs a value"))?
                .into_string()
                .map_err(|_| format!("{name}: not UTF-8"))
        };
        match name.as_str() {
            "--backend" => {
                args.backends = parse_backends(&value()?)?;
            }
            "--path" => args.paths = parse_paths(&value()?)?,
            "--duration" => args.duration = parse_duration(&value()?)?,
            "--workers" => {
                args.workers = value()?.parse().map_err(|_| "bad --workers")?;
                if args.workers == 0 {
                    return Err("--workers must be at least 1".into());
                }
            }
            "--fault-every" => args.fault_every = parse_duration(&value()?)?,
            "--seed" => args.seed = value()?.parse().map_err(|_| "bad --seed")?,
            "--sabotage" => args.sabotage = true,
            "--failover" => {
                failover = Some(match value()?.as_str() {
                    "sync" => FailoverSetup::Synchronous,
                    "async-held" => FailoverSetup::AsyncHeld,
                    _ => return Err("--failover must be sync or async-held".into()),
                })
            }
            "--failover-at" => failover_at = Some(parse_duration(&value()?)?),
            "--min-acknowledged" => {
                args.min_acknowledged = value()?.parse().map_err(|_| "bad --min-acknowledged")?
            }
            "--min-faults" => args.min_faults = value()?.parse().map_err(|_| "bad --min-faults")?,
            "--kill-node" => {
                let node: usize = value()?.parse().map_err(|_| "bad --kill-node")?;
                if !(1..=3).contains(&node) {
                    return Err("--kill-node must be 1, 2 or 3".into());
                }
                kill_node = Some(node);
            }
            "--kill-at" => kill_at = Some(parse_duration(&value()?)?),
            "--restart-at" => restart_at = Some(parse_duration(&value()?)?),
            "--galera-script" => script = Some(PathBuf::from(value()?)),
            "--partition-node" => {
                let node: usize = value()?.parse().map_err(|_| "bad --partition-node")?;
                if !(1..=3).contains(&node) {
                    return Err("--partition-node must be 1, 2 or 3".into());
                }
                partition_node = Some(node);
            }
            "--partition-at" => partition_at = Some(parse_duration(&value()?)?),
            "--heal-at" => heal_at = Some(parse_duration(&value()?)?),
            "--help" => return Err(String::new()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    // A partition is a node fault too, with its own option names.
    let mut kind = NodeFaultKind::Kill;
    if let Some(node) = partition_node {
        if kill_node.is_some() || kill_at.is_some() || restart_at.is_some() {
            return Err(
                "--partition-node does not go with --kill-node, --kill-at, --restart-at".into(),
            );
        }
        (kill_node, kill_at, restart_at, kind) =
            (Some(node), partition_at, heal_at, NodeFaultKind::Partition);
    } else if partition_at.is_some() || heal_at.is_some() {
        return Err("--partition-at and --heal-at need --partition-node".into());
    }
    if let Some(node) = kill_node {
        if !args.backends.contains(&Target::Galera) {
            return Err("--kill-node and --partition-node need --backend galera".into());
        }
        // By default the node dies a quarter into the run and comes back at half time,
        // so the run sees the outage, the rejoin (IST) and the cluster whole again.
        let kill_at = kill_at.unwrap_or(args.duration / 4);
        let restart_at = restart_at.unwrap_or(args.duration / 2);
        if restart_at <= kill_at {
            return Err(
                "--restart-at (--heal-at) must come after --kill-at (--partition-at)".into(),
            );
        }
        args.node_fault = Some(NodeFault {
            node,
            kill_at,
            restart_at,
            kind,
            script: script.unwrap_or_else(|| {
                PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/cluster/galera.sh"))
            }),
        });
    } else if kill_at.is_some() || restart_at.is_some() || script.is_some() {
        return Err(
            "--kill-at, --restart-at and --galera-script need --kill-node or --partition-node"
                .into(),
        );
    }
    if let Some(setup) = failover {
        if args.backends != [Target::PgReplicas] {
            return Err("--failover needs --backend pg-replicas (alone)".into());
        }
        args.failover = Some(Failover {
            setup,
            at: failover_at.unwrap_or(args.duration / 3),
        });
    } else if failover_at.is_some() {
        return Err("--failover-at needs --failover".into());
    }
    Ok(args)
}

/// The default `--min-acknowledged`: a debug build's 3-second run on a loaded 2-core
/// machine acknowledges several times this many writes on every backend.
pub(crate) const MIN_ACKNOWLEDGED: u64 = 100;

/// `all`, or a comma-separated list of backend names (the clusters included).
fn parse_backends(list: &str) -> Result<Vec<Target>, String> {
    if list == "all" {
        return Ok(Target::ALL.to_vec());
    }
    list.split(',')
        .map(|name| {
            Target::ALL
                .into_iter()
                .chain([Target::Galera, Target::PgReplicas])
                .find(|b| b.name() == name.trim())
                .ok_or(format!("unknown backend {name:?}"))
        })
        .collect()
}

/// The usage line printed after a bad option or `--help`.
pub(crate) fn usage() -> String {
    format!(
        "usage: soak [--backend all|postgres,mysql,sqlite,galera,pg-replicas] [--path all|NAME,...] \
         [--duration 30s] \
         [--failover sync|async-held [--failover-at 1/3 of duration]] \
         [--workers 8] [--fault-every 200ms] [--seed N] [--sabotage] \
         [--min-acknowledged {MIN_ACKNOWLEDGED}] [--min-faults 1] \
         [--kill-node 1|2|3 [--kill-at 1/4 of duration] [--restart-at 1/2 of duration] \
         [--galera-script tests/cluster/galera.sh]] \
         [--partition-node 1|2|3 [--partition-at 1/4 of duration] [--heal-at 1/2 of duration]]"
    )
}
