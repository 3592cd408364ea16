//! Scale-out (`--backend galera`, `--backend pg-standby`): the reservation workload on
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
//!   primary, and a retry after a conflict re-reads from the primary (the pattern of
//!   `blocking::retry_with_standby`).

use std::cell::RefCell;
use std::fmt::Write as _;

use diesel::prelude::*;
use diesel_occ::retry::RetryPolicy;

use crate::backend::{Backend, server_version};
use crate::harness::{self, Held, OpResult, Worker};
use crate::options::Args;
use crate::pg;
use crate::report::{Row, Summary};
use crate::rounds::ratio;
use crate::strategy::Strategy;

/// A replicated set-up the benchmark can run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cluster {
    /// A 3-node MariaDB Galera cluster.
    Galera,
    /// A PostgreSQL primary with a streaming standby.
    PgStandby,
}

impl Cluster {
    pub(crate) fn parse(name: &str) -> Option<Cluster> {
        match name {
            "galera" => Some(Cluster::Galera),
            "pg-standby" | "postgres-standby" | "standby" => Some(Cluster::PgStandby),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Cluster::Galera => "galera",
            Cluster::PgStandby => "pg-standby",
        }
    }

    /// The nodes' URLs: `--url galera=U1,U2,U3` / `--url pg-standby=PRIMARY,STANDBY`,
    /// else the environment of `tests/cluster` (`OCC_GALERA_URLS`, `OCC_PG_PRIMARY_URL`
    /// and `OCC_PG_STANDBY_URL`), else the scripts' default ports.
    pub(crate) fn urls(self, given: Option<&str>) -> Vec<String> {
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
struct ScaleRow {
    round: usize,
    setup: &'static str,
    row: Row,
    /// Of the aborts, error 1213 / 40P01 (on Galera: certification failures).
    deadlocks: u64,
}

impl ScaleRow {
    fn new(round: usize, setup: &'static str, row: Row, deadlocks: u64) -> ScaleRow {
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
pub(crate) fn bench(args: &Args, cluster: Cluster) -> Result<(), String> {
    let urls = cluster.urls(args.cluster_url(cluster));
    let keys = if args.smoke || args.keys != crate::options::Args::default().keys {
        args.keys.clone()
    } else {
        vec![1, 10_000]
    };
    let mut summary = Summary::default();
    let rows = match cluster {
        #[cfg(feature = "mysql")]
        Cluster::Galera => galera::run(args, &urls, &keys, &mut summary)?,
        #[cfg(not(feature = "mysql"))]
        Cluster::Galera => return Err("Galera needs `--features mysql`".into()),
        Cluster::PgStandby => standby::run(args, &urls, &keys, &mut summary)?,
    };
    report(cluster, &rows, &keys, args.rounds, &mut summary);
    std::fs::create_dir_all(&args.out).map_err(|e| e.to_string())?;
    let mut csv = String::from(ScaleRow::CSV_HEADER);
    csv.push('\n');
    for row in &rows {
        csv.push_str(&row.csv(cluster));
        csv.push('\n');
    }
    let path = args.out.join(format!("{}.csv", cluster.name()));
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = args.out.join(format!("{}-summary.txt", cluster.name()));
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
enum Way {
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
fn play(
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
            for round in 1..=args.rounds {
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
            let listed: Vec<String> = per_round.iter().map(|r| format!("{r:.2}")).collect();
            let _ = write!(
                line,
                "  => {second} / {first} goodput {} (per round {}, median {:.3})",
                ratio(
                    median(b.iter().map(|r| r.row.ops_per_sec).collect()),
                    median(a.iter().map(|r| r.row.ops_per_sec).collect())
                ),
                listed.join(" "),
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

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The policy every strategy retries with, as in the main benchmark.
fn policy(args: &Args) -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(args.max_attempts)
        .backoff(args.initial_backoff, args.max_backoff)
        .never_escalate()
}

#[cfg(feature = "mysql")]
mod galera {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::mysql;

    use diesel_occ::multi_host::MultiHost;

    /// The strategies compared on Galera unless `--strategies` names others.
    const DEFAULT: [Way; 5] = [
        Way::Plain(Strategy::Blind),
        Way::Plain(Strategy::Occ),
        Way::MultiHost,
        Way::Plain(Strategy::Pessimistic),
        Way::Plain(Strategy::Atomic),
    ];

    pub(super) fn run(
        args: &Args,
        urls: &[String],
        keys: &[i32],
        summary: &mut Summary,
    ) -> Result<Vec<ScaleRow>, String> {
        if urls.len() < 2 {
            return Err(format!("galera needs the URLs of its nodes, got {urls:?}"));
        }
        let strategies: Vec<Way> = if args.strategies == Strategy::ALL {
            DEFAULT.to_vec()
        } else {
            args.strategies.iter().map(|&s| Way::Plain(s)).collect()
        };
        summary.say(format!(
            "== galera ({}, {} nodes: {}): {} workers, keys {keys:?}, {:?} per run, \
             {} paired rounds; 1 node = every worker on node 1, {} nodes = worker i on node \
             i % {}, except occ-multihost: every worker's attempts go round the nodes \
             (diesel_occ::multi_host::MultiHost over a connection to each node, the retry \
             helper's source); wsrep_sync_wait = 0",
            server_version(Backend::Mysql, &urls[0]),
            urls.len(),
            urls.join(" "),
            args.workers,
            args.limit,
            args.rounds,
            urls.len(),
            urls.len(),
        ));
        let policy = policy(args);
        play(
            super::Cluster::Galera,
            args,
            keys,
            &strategies,
            summary,
            |setup, strategy, count| {
                let nodes = if setup == "1 node" { &urls[..1] } else { urls };
                let mut admin = causal(&urls[0])?;
                mysql::reset(&mut admin, count).map_err(|e| format!("reset: {e}"))?;
                // Every node has the fresh rows before the clock starts.
                for url in urls {
                    let mut conn = causal(url)?;
                    let rows: i64 = diesel::sql_query("SELECT COUNT(*) AS n FROM bench_stock")
                        .get_result::<Count>(&mut conn)
                        .map_err(|e| format!("{url}: {e}"))?
                        .n;
                    if rows != i64::from(count) {
                        return Err(format!("{url}: {rows} rows after the reset"));
                    }
                }
                let measured = match strategy {
                    Way::Plain(strategy) => {
                        let next = AtomicUsize::new(0);
                        harness::run_threads(
                            args.workers,
                            count,
                            args.limit,
                            policy.clone(),
                            || {
                                let node = next.fetch_add(1, Ordering::Relaxed) % nodes.len();
                                mysql::connect(&nodes[node], strategy)
                            },
                            |held, worker, key| mysql::op(strategy, held, worker, key),
                        )?
                    }
                    Way::MultiHost => harness::run_threads(
                        args.workers,
                        count,
                        args.limit,
                        policy.clone(),
                        || {
                            let held = nodes
                                .iter()
                                .map(|url| {
                                    mysql::connect(url, Strategy::Occ)
                                        .map(|conn| Held(RefCell::new(conn)))
                                })
                                .collect::<Result<Vec<_>, _>>()?;
                            Ok(MultiHost::new(held))
                        },
                        |held, worker, key| mysql::occ_on(&*held.0.borrow(), &worker.policy, key),
                    )?,
                };
                if let Some(error) = &measured.0.first_error {
                    eprintln!("  {} failed: {error}", strategy.name());
                }
                let deadlocks = measured.0.deadlocks;
                let taken = mysql::taken(&mut admin, count).map_err(|e| e.to_string())?;
                let row = Row::new(
                    Backend::Mysql,
                    strategy.name(),
                    args.workers,
                    count,
                    measured,
                    taken,
                );
                Ok((row, deadlocks))
            },
        )
    }

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }

    /// A connection whose reads wait until the node has applied every write the
    /// cluster committed before them (`wsrep_sync_wait = 1`).
    fn causal(url: &str) -> Result<mysql::Conn, String> {
        let mut conn = mysql::connect(url, Strategy::Atomic)?;
        diesel::sql_query("SET SESSION wsrep_sync_wait = 1")
            .execute(&mut conn)
            .map_err(|e| format!("{url}: {e}"))?;
        Ok(conn)
    }
}

mod standby {
    use super::*;
    use diesel_occ::prelude::*;

    use crate::blocking::Seen;
    use crate::model::Stock;

    /// A worker's two connections.
    pub(super) struct Pair {
        primary: Held<pg::Conn>,
        standby: Held<pg::Conn>,
    }

    pub(super) fn run(
        args: &Args,
        urls: &[String],
        keys: &[i32],
        summary: &mut Summary,
    ) -> Result<Vec<ScaleRow>, String> {
        let [primary, standby] = urls else {
            return Err(format!("pg-standby needs PRIMARY,STANDBY, got {urls:?}"));
        };
        summary.say(format!(
            "== pg-standby ({}; primary {primary}, standby {standby}): {} workers, keys {keys:?}, \
             {:?} per run, {} paired rounds; strategy occ: primary = read and save on the \
             primary (blocking::retry), standby = blocking::retry_with_standby: reads from the \
             standby, the checked save on the primary, reads on the primary after the \
             operation's first conflict",
            server_version(Backend::Postgres, primary),
            args.workers,
            args.limit,
            args.rounds,
        ));
        let policy = policy(args);
        play(
            super::Cluster::PgStandby,
            args,
            keys,
            &[Way::Plain(Strategy::Occ)],
            summary,
            |setup, way, count| {
                let Way::Plain(strategy) = way else {
                    return Err("pg-standby runs occ only".into());
                };
                let mut admin = pg::connect(primary, Strategy::Atomic)?;
                pg::reset(&mut admin, count).map_err(|e| format!("reset: {e}"))?;
                wait_for_replay(&mut admin, standby)?;
                let measured = if setup == "primary" {
                    harness::run_threads(
                        args.workers,
                        count,
                        args.limit,
                        policy.clone(),
                        || pg::connect(primary, strategy),
                        |held, worker, key| pg::op(strategy, held, worker, key),
                    )?
                } else {
                    harness::run_threads(
                        args.workers,
                        count,
                        args.limit,
                        policy.clone(),
                        || {
                            Ok(Pair {
                                primary: Held(RefCell::new(pg::connect(primary, strategy)?)),
                                standby: Held(RefCell::new(pg::connect(standby, strategy)?)),
                            })
                        },
                        |held, worker, key| occ_from_standby(&held.0.borrow(), worker, key),
                    )?
                };
                if let Some(error) = &measured.0.first_error {
                    eprintln!("  {setup} failed: {error}");
                }
                let deadlocks = measured.0.deadlocks;
                let taken = pg::taken(&mut admin, count).map_err(|e| e.to_string())?;
                let row = Row::new(
                    Backend::Postgres,
                    strategy.name(),
                    args.workers,
                    count,
                    measured,
                    taken,
                );
                Ok((row, deadlocks))
            },
        )
    }

    /// One reservation through `retry_with_standby`: reads from the standby (possibly
    /// stale), the checked save on the primary, and reads on the primary once the
    /// operation met a conflict.
    fn occ_from_standby(pair: &Pair, worker: &mut Worker, key: i32) -> Result<OpResult, String> {
        let mut seen = Seen::default();
        let result = diesel_occ::blocking::retry_with_standby(
            &pair.primary,
            &pair.standby,
            &worker.policy,
            |conns, attempt| {
                seen.last_attempt = attempt.number();
                let result = (|| {
                    let mut stock: Stock = attempt.find(conns.read()?, key)?;
                    if stock.available <= 0 {
                        return Ok(false);
                    }
                    stock.available -= 1;
                    stock.save_checked(conns.write()?)?;
                    Ok(true)
                })();
                if let Err(error) = &result {
                    seen.saw(error);
                }
                result
            },
        );
        seen.finish(result)
    }

    /// Waits until the standby has replayed the primary's WAL up to now (the fresh
    /// table), for at most 30 s.
    fn wait_for_replay(primary: &mut pg::Conn, standby_url: &str) -> Result<(), String> {
        #[derive(QueryableByName)]
        struct Lsn {
            #[diesel(sql_type = diesel::sql_types::Text)]
            lsn: String,
        }
        #[derive(QueryableByName)]
        struct Replayed {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            done: bool,
        }
        let lsn = diesel::sql_query("SELECT pg_current_wal_lsn()::text AS lsn")
            .get_result::<Lsn>(primary)
            .map_err(|e| e.to_string())?
            .lsn;
        let mut standby = pg::connect(standby_url, Strategy::Atomic)?;
        let began = std::time::Instant::now();
        loop {
            let done = diesel::sql_query(
                "SELECT COALESCE(pg_last_wal_replay_lsn() >= $1::pg_lsn, false) AS done",
            )
            .bind::<diesel::sql_types::Text, _>(&lsn)
            .get_result::<Replayed>(&mut standby)
            .map_err(|e| e.to_string())?
            .done;
            if done {
                return Ok(());
            }
            if began.elapsed() > std::time::Duration::from_secs(30) {
                return Err(format!("the standby has not replayed {lsn} after 30 s"));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
