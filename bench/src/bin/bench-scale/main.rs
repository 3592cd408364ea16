//! `bench-scale`: the reservation workload on
//! a 3-node MariaDB Galera cluster, one node against three, and on PostgreSQL with a
//! streaming standby, reads from the standby against reads from the primary.
//!
//! Both compare two set-ups of the same strategy at the same key count in paired
//! rounds: each round runs both, one after the other, the first of the pair swapping
//! from round to round. Every run starts from a fresh table and ends with the lost
//! updates (committed reservations minus the units that left the table, read with a
//! causal read on Galera and from the primary on PostgreSQL).
//!
//! - **Galera.** "1 node": every worker connects to node 1. "3 nodes": worker `i` to node
//!   `i % 3` (writers on every node, racing through certification). Certification
//!   failures arrive as error 1213 and are counted apart from the conflicts (a checked
//!   UPDATE that matched no row) and retried. Reads run with the default
//!   `wsrep_sync_wait = 0`: a read on a node may be stale.
//! - **PostgreSQL.** "primary": `occ` reading and writing on the primary. "standby": the
//!   first attempt of an operation reads from the standby, the checked save goes to the
//!   primary, and a retry after a conflict re-reads from the primary
//!   (`retry::retry_with_standby`).
//!
//! ```text
//! cargo run --release -p diesel-occ-bench --features mysql --bin bench-scale -- \
//!     --backend galera,pg-standby --workers 6 --keys 1,10000 --duration 2s --rounds 5
//! ```

#[cfg(feature = "mysql")]
mod galera;
mod standby;

use std::fmt::Write as _;

use diesel_occ_bench::cli::{self, COMMON_USAGE, Common};
use diesel_occ_bench::row::Row;
use diesel_occ_bench::stats::{listed, median, ratio};
use diesel_occ_bench::strategy::{RETRY_USAGE, RetryOptions, Strategy};
use diesel_occ_bench::summary::Summary;

const USAGE_HEAD: &str = "\
usage: bench-scale [options]
  --backend LIST        galera (1 node vs 3, needs --features mysql; URLs from
                        --url galera=U1,U2,U3 or OCC_GALERA_URLS) and pg-standby (reads on
                        the standby vs the primary; --url pg-standby=PRIMARY,STANDBY or
                        OCC_PG_PRIMARY_URL, OCC_PG_STANDBY_URL); default galera,pg-standby
  --url CLUSTER=URLS    the cluster's nodes, comma-separated
  --keys LIST           hot keys per setting (default 1,10000)
  --strategies LIST     galera's strategies (default blind,occ,occ-multihost,pessimistic,
                        atomic); pg-standby runs occ";

/// The command line.
#[derive(Debug, Clone)]
struct Args {
    clusters: Vec<Cluster>,
    /// `--url galera=U1,U2,U3` / `--url pg-standby=PRIMARY,STANDBY`.
    cluster_urls: Vec<(Cluster, String)>,
    common: Common,
    keys: Vec<i32>,
    /// `--strategies`, when given.
    strategies: Option<Vec<Strategy>>,
    retry: RetryOptions,
}

impl Args {
    /// Reads the process's command line; `Err((text, true))` asks for the help.
    fn parse() -> Result<Args, (String, bool)> {
        let usage = format!("{USAGE_HEAD}\n{COMMON_USAGE}\n{RETRY_USAGE}");
        let fail = |message: String| (format!("{message}\n{usage}"), false);
        let mut args = Args {
            clusters: vec![Cluster::Galera, Cluster::PgStandby],
            cluster_urls: Vec::new(),
            common: Common::default(),
            keys: vec![1, 10_000],
            strategies: None,
            retry: RetryOptions::default(),
        };
        let mut parser = lexopt::Parser::from_env();
        while let Some(arg) = parser.next().map_err(|e| fail(e.to_string()))? {
            let flag = cli::flag(arg).map_err(fail)?;
            if flag == "-h" || flag == "--help" {
                return Err((usage.clone(), true));
            }
            if !args.accept(&flag, &mut parser).map_err(fail)? {
                return Err(fail(format!("unknown option {flag}")));
            }
        }
        args.common.finish("diesel-occ-bench-smoke").map_err(fail)?;
        if args.common.smoke {
            args.keys = vec![1, 100];
        }
        if args.keys.iter().any(|&k| k < 1) {
            return Err(fail("--keys must be at least 1".into()));
        }
        Ok(args)
    }

    /// Applies `flag`; `false` when it is not an option of this benchmark.
    fn accept(&mut self, flag: &str, parser: &mut lexopt::Parser) -> Result<bool, String> {
        if self.common.accept(flag, parser)? || self.retry.accept(flag, parser)? {
            return Ok(true);
        }
        match flag {
            "--backend" | "--backends" => {
                self.clusters = cli::list(&cli::value(parser, flag)?)
                    .iter()
                    .map(|name| Cluster::parse(name).ok_or(format!("unknown cluster {name:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--url" => {
                let value = cli::value(parser, flag)?;
                let (name, urls) = value.split_once('=').ok_or("--url takes CLUSTER=URLS")?;
                let cluster = Cluster::parse(name).ok_or(format!("unknown cluster {name:?}"))?;
                self.cluster_urls.push((cluster, urls.to_owned()));
            }
            "--keys" => self.keys = cli::parsed_list(parser, flag)?,
            "--strategies" => {
                let names = cli::list(&cli::value(parser, flag)?);
                let strategies = names.iter().map(|s| Strategy::parse(s));
                self.strategies = Some(strategies.collect::<Result<_, _>>()?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The URLs given for a cluster with `--url`, comma-separated.
    fn cluster_url(&self, cluster: Cluster) -> Option<&str> {
        self.cluster_urls
            .iter()
            .rev()
            .find(|(c, _)| *c == cluster)
            .map(|(_, u)| u.as_str())
    }
}

fn main() {
    let args = match Args::parse() {
        Ok(args) => args,
        Err((message, help)) => cli::exit_with_usage(&message, help),
    };
    let mut failed = false;
    for &cluster in &args.clusters {
        if let Err(message) = bench(&args, cluster) {
            eprintln!("{}: {message}", cluster.name());
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// A replicated set-up the benchmark can run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cluster {
    /// A 3-node MariaDB Galera cluster.
    Galera,
    /// A PostgreSQL primary with a streaming standby.
    PgStandby,
}

impl Cluster {
    fn parse(name: &str) -> Option<Cluster> {
        match name {
            "galera" => Some(Cluster::Galera),
            "pg-standby" | "postgres-standby" | "standby" => Some(Cluster::PgStandby),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Cluster::Galera => "galera",
            Cluster::PgStandby => "pg-standby",
        }
    }

    /// The nodes' URLs: `--url galera=U1,U2,U3` / `--url pg-standby=PRIMARY,STANDBY`,
    /// else the environment of `tests/cluster` (`OCC_GALERA_URLS`, `OCC_PG_PRIMARY_URL`
    /// and `OCC_PG_STANDBY_URL`), else the scripts' default ports.
    fn urls(self, given: Option<&str>) -> Vec<String> {
        let split = |text: &str| -> Vec<String> {
            text.split(',')
                .map(|u| u.trim().to_owned())
                .filter(|u| !u.is_empty())
                .collect()
        };
        if let Some(given) = given {
            return split(given);
        }
        match self {
            Cluster::Galera => std::env::var("OCC_GALERA_URLS").map_or_else(
                |_| {
                    (13306..=13308)
                        .map(|port| format!("mysql://root@127.0.0.1:{port}/test"))
                        .collect()
                },
                |urls| split(&urls),
            ),
            Cluster::PgStandby => vec![
                std::env::var("OCC_PG_PRIMARY_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:15432/test".into()),
                std::env::var("OCC_PG_STANDBY_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:15433/test".into()),
            ],
        }
    }
}

/// One run of one strategy in one set-up.
#[derive(Debug, Clone)]
pub(crate) struct ScaleRow {
    round: usize,
    setup: &'static str,
    row: Row,
    /// Of the aborts, error 1213 / 40P01 (on Galera: certification failures).
    deadlocks: u64,
}

impl ScaleRow {
    pub(crate) fn new(round: usize, setup: &'static str, row: Row, deadlocks: u64) -> ScaleRow {
        ScaleRow {
            round,
            setup,
            row,
            deadlocks,
        }
    }

    /// Attempts per operation: every operation's first attempt plus its retries.
    fn attempts_per_op(&self) -> f64 {
        let ops = self.row.committed + self.row.failed;
        (ops + self.row.retries) as f64 / (ops.max(1)) as f64
    }

    const CSV_HEADER: &'static str = "cluster,round,setup,strategy,workers,keys,seconds,committed,\
        failed,ops_per_sec,p50_ms,p99_ms,conflicts,deadlocks_1213,other_aborts,retries,\
        attempts_per_op,lost_updates";

    fn csv(&self, cluster: Cluster) -> String {
        let r = &self.row;
        format!(
            "{},{},{},{},{},{},{:.3},{},{},{:.1},{:.3},{:.3},{},{},{},{},{:.3},{}",
            cluster.name(),
            self.round,
            self.setup,
            r.strategy,
            r.workers,
            r.keys,
            r.seconds,
            r.committed,
            r.failed,
            r.ops_per_sec,
            r.p50_ms,
            r.p99_ms,
            r.conflicts,
            self.deadlocks,
            r.aborts - self.deadlocks,
            r.retries,
            self.attempts_per_op(),
            r.lost
        )
    }

    fn line(&self, cluster: Cluster) -> String {
        let r = &self.row;
        let aborts = match cluster {
            Cluster::Galera => format!("cert/deadlock 1213 {:>6}", self.deadlocks),
            Cluster::PgStandby => format!("aborts {:>6}", r.aborts),
        };
        format!(
            "round {}: {:<14} {:<8} keys {:>6}  {:>8.0} ops/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             conflicts {:>7}  {aborts}  attempts/op {:>5.2}  failed {:>4}  lost {:>6}",
            self.round,
            r.strategy,
            self.setup,
            r.keys,
            r.ops_per_sec,
            r.p50_ms,
            r.p99_ms,
            r.conflicts,
            self.attempts_per_op(),
            r.failed,
            r.lost
        )
    }
}

/// Runs the comparison on `cluster` and writes `<cluster>.csv` and
/// `<cluster>-summary.txt` into `--out`.
fn bench(args: &Args, cluster: Cluster) -> Result<(), String> {
    let urls = cluster.urls(args.cluster_url(cluster));
    let keys = args.keys.clone();
    let mut summary = Summary::default();
    let rows = match cluster {
        #[cfg(feature = "mysql")]
        Cluster::Galera => galera::run(args, &urls, &keys, &mut summary)?,
        #[cfg(not(feature = "mysql"))]
        Cluster::Galera => return Err("Galera needs `--features mysql`".into()),
        Cluster::PgStandby => standby::run(args, &urls, &keys, &mut summary)?,
    };
    report(cluster, &rows, &keys, args.common.rounds, &mut summary);
    std::fs::create_dir_all(&args.common.out).map_err(|e| e.to_string())?;
    let mut csv = String::from(ScaleRow::CSV_HEADER);
    csv.push('\n');
    for row in &rows {
        csv.push_str(&row.csv(cluster));
        csv.push('\n');
    }
    let path = args.common.out.join(format!("{}.csv", cluster.name()));
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = args
        .common
        .out
        .join(format!("{}-summary.txt", cluster.name()));
    std::fs::write(&text, summary.text()).map_err(|e| format!("{}: {e}", text.display()))?;
    println!("wrote {} and {}", path.display(), text.display());
    Ok(())
}

/// The two set-ups compared, in the order of the first round.
fn setups(cluster: Cluster) -> [&'static str; 2] {
    match cluster {
        Cluster::Galera => ["1 node", "3 nodes"],
        Cluster::PgStandby => ["primary", "standby"],
    }
}

/// What a run runs: one of the benchmark's strategies, or (`occ-multihost`) `occ` with
/// a `MultiHost` source over the set-up's nodes as the retry helper's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    Plain(Strategy),
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    MultiHost,
}

impl Way {
    // Named by the Galera comparison only, which needs feature `mysql`.
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    fn name(self) -> &'static str {
        match self {
            Way::Plain(strategy) => strategy.name(),
            Way::MultiHost => "occ-multihost",
        }
    }
}

/// Plays the paired rounds: for each key count and strategy, both set-ups in every
/// round, the first of the pair swapping from round to round.
pub(crate) fn play(
    cluster: Cluster,
    args: &Args,
    keys: &[i32],
    strategies: &[Way],
    summary: &mut Summary,
    mut run: impl FnMut(&'static str, Way, i32) -> Result<(Row, u64), String>,
) -> Result<Vec<ScaleRow>, String> {
    let mut rows = Vec::new();
    for &count in keys {
        for &strategy in strategies {
            for round in 1..=args.common.rounds {
                let mut order = setups(cluster);
                if round % 2 == 0 {
                    order.reverse();
                }
                for setup in order {
                    let (row, deadlocks) = run(setup, strategy, count)?;
                    let row = ScaleRow::new(round, setup, row, deadlocks);
                    summary.say(row.line(cluster));
                    rows.push(row);
                }
            }
        }
    }
    Ok(rows)
}

/// The medians of each set-up and the ratios of the second to the first.
fn report(cluster: Cluster, rows: &[ScaleRow], keys: &[i32], rounds: usize, summary: &mut Summary) {
    let [first, second] = setups(cluster);
    let mut strategies: Vec<&str> = Vec::new();
    for row in rows {
        if !strategies.contains(&row.row.strategy.as_str()) {
            strategies.push(&row.row.strategy);
        }
    }
    summary.say(format!(
        "-- {}: medians of {rounds} paired rounds; conflicts, 1213s and lost updates summed over the rounds",
        cluster.name()
    ));
    for &count in keys {
        for &strategy in &strategies {
            let of = |setup: &str| -> Vec<&ScaleRow> {
                rows.iter()
                    .filter(|r| {
                        r.setup == setup && r.row.keys == count && r.row.strategy == strategy
                    })
                    .collect()
            };
            let (a, b) = (of(first), of(second));
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let mut line = format!("{strategy:<14} keys {count:>6}:");
            for (setup, runs) in [(first, &a), (second, &b)] {
                let goodput = median(runs.iter().map(|r| r.row.ops_per_sec).collect());
                let p99 = median(runs.iter().map(|r| r.row.p99_ms).collect());
                let attempts = median(runs.iter().map(|r| r.attempts_per_op()).collect());
                let conflicts: u64 = runs.iter().map(|r| r.row.conflicts).sum();
                let deadlocks: u64 = runs.iter().map(|r| r.deadlocks).sum();
                let lost: i64 = runs.iter().map(|r| r.row.lost).sum();
                let _ = write!(
                    line,
                    "  [{setup}] {goodput:.0} ops/s, p99 {p99:.2} ms, conflicts {conflicts}, \
                     1213 {deadlocks}, attempts/op {attempts:.2}, lost {lost}"
                );
            }
            let per_round: Vec<f64> = (1..=rounds)
                .filter_map(|round| {
                    let value = |runs: &[&ScaleRow]| {
                        runs.iter()
                            .find(|r| r.round == round)
                            .map(|r| r.row.ops_per_sec)
                    };
                    Some(value(&b)? / value(&a)?)
                })
                .collect();

            let _ = write!(
                line,
                "  => {second} / {first} goodput {} (per round {}, median {:.3})",
                ratio(
                    median(b.iter().map(|r| r.row.ops_per_sec).collect()),
                    median(a.iter().map(|r| r.row.ops_per_sec).collect())
                ),
                listed(&per_round),
                median(per_round)
            );
            summary.say(line);
        }
    }
    let checked_lost: i64 = rows
        .iter()
        .filter(|r| r.row.strategy != Strategy::Blind.name())
        .map(|r| r.row.lost)
        .sum();
    let blind_lost: i64 = rows
        .iter()
        .filter(|r| r.row.strategy == Strategy::Blind.name())
        .map(|r| r.row.lost)
        .sum();
    let blind = if rows
        .iter()
        .any(|r| r.row.strategy == Strategy::Blind.name())
    {
        format!(", blind {blind_lost}")
    } else {
        String::new()
    };
    summary.say(format!(
        "{}: lost updates: checked strategies {checked_lost} (must be 0: {}){blind}",
        cluster.name(),
        if checked_lost == 0 { "met" } else { "not met" }
    ));
}
