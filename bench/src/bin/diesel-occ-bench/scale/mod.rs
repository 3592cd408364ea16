//! `scale`: the reservation workload on a 3-node MariaDB Galera cluster (1 node against
//! 3, [`galera`]) and on PostgreSQL with a streaming standby (reads on the standby
//! against the primary, [`standby`]), two set-ups of a strategy in paired rounds, every
//! run from a fresh table and ending with its lost updates. The set-ups are described
//! in `bench/results/method.md`.

#[cfg(feature = "mysql")]
mod galera;
mod options;
mod standby;

use std::fmt::Write as _;
use std::time::Duration;

use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::harness::Tally;
use diesel_occ_bench::row::Row;
use diesel_occ_bench::stats::{median, per_round, ratio};
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

pub(crate) use self::options::Args;
use self::options::Cluster;

/// Runs the comparison on every `--backend` cluster.
pub(crate) fn main(mut args: Args) -> Result<(), String> {
    args.common.finish(3);
    if args.common.smoke {
        args.keys = vec![1, 100];
    }
    for &cluster in &args.clusters {
        bench(&args, cluster).map_err(|e| format!("{}: {e}", cluster.name()))?;
    }
    Ok(())
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
    let lines: Vec<String> = rows.iter().map(|row| row.csv(cluster)).collect();
    let csv = format!("{}\n{}\n", ScaleRow::csv_header(), lines.join("\n"));
    let name = cluster.name();
    let csv = args.common.save(&format!("{name}.csv"), &csv)?;
    let text = args
        .common
        .save(&format!("{name}-summary.txt"), summary.text())?;
    println!("wrote {} and {}", csv.display(), text.display());
    Ok(())
}

/// One run of one strategy in one set-up; of its aborts, `row.tally.deadlocks` are error
/// 1213 / 40P01 (on Galera: certification failures).
#[derive(Debug, Clone)]
pub(crate) struct ScaleRow {
    round: usize,
    setup: &'static str,
    row: Row,
}

impl ScaleRow {
    /// Attempts per operation: every operation's first attempt plus its retries.
    fn attempts_per_op(&self) -> f64 {
        let ops = self.row.tally.committed + self.row.tally.failed;
        (ops + self.row.tally.retries) as f64 / (ops.max(1)) as f64
    }

    /// The CSV file's first line: the set-up's, then [`Row::csv`]'s columns (`backend`
    /// is `mysql` on Galera, `postgres` on the standby), then the deadlocks and attempts.
    fn csv_header() -> String {
        format!(
            "cluster,round,setup,{},deadlocks_1213,attempts_per_op",
            Row::CSV_HEADER
        )
    }

    fn csv(&self, cluster: Cluster) -> String {
        let (round, setup, row) = (self.round, self.setup, self.row.csv());
        let (deadlocks, attempts) = (self.row.tally.deadlocks, self.attempts_per_op());
        format!(
            "{},{round},{setup},{row},{deadlocks},{attempts:.3}",
            cluster.name()
        )
    }

    pub(crate) fn line(&self, cluster: Cluster) -> String {
        let r = &self.row;
        let aborts = match cluster {
            Cluster::Galera => format!("cert/deadlock 1213 {:>6}", r.tally.deadlocks),
            Cluster::PgStandby => format!("aborts {:>6}", r.tally.aborts),
        };
        format!(
            "round {}: {:<14} {:<8} keys {:>6}  {:>8.0} ops/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             conflicts {:>7}  {aborts}  attempts/op {:>5.2}  failed {:>4}  lost {:>6}",
            self.round,
            r.strategy,
            self.setup,
            r.keys,
            r.ops_per_sec(),
            r.ms(50.0),
            r.ms(99.0),
            r.tally.conflicts,
            self.attempts_per_op(),
            r.tally.failed,
            r.lost
        )
    }
}

/// The two set-ups compared, in the order of the first round.
pub(crate) fn setups(cluster: Cluster) -> [&'static str; 2] {
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
    pub(crate) fn name(self) -> &'static str {
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
    mut run: impl FnMut(&'static str, Way, i32) -> Result<Row, String>,
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
                    let row = ScaleRow {
                        round,
                        setup,
                        row: run(setup, strategy, count)?,
                    };
                    summary.say(row.line(cluster));
                    rows.push(row);
                }
            }
        }
    }
    Ok(rows)
}

/// The medians of each set-up and the ratios of the second to the first.
pub(crate) fn report(
    cluster: Cluster,
    rows: &[ScaleRow],
    keys: &[i32],
    rounds: usize,
    summary: &mut Summary,
) {
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
                let goodput = median(runs.iter().map(|r| r.row.ops_per_sec()).collect());
                let p99 = median(runs.iter().map(|r| r.row.ms(99.0)).collect());
                let attempts = median(runs.iter().map(|r| r.attempts_per_op()).collect());
                let conflicts: u64 = runs.iter().map(|r| r.row.tally.conflicts).sum();
                let deadlocks: u64 = runs.iter().map(|r| r.row.tally.deadlocks).sum();
                let lost: i64 = runs.iter().map(|r| r.row.lost).sum();
                let _ = write!(
                    line,
                    "  [{setup}] {goodput:.0} ops/s, p99 {p99:.2} ms, conflicts {conflicts}, \
                     1213 {deadlocks}, attempts/op {attempts:.2}, lost {lost}"
                );
            }
            let at = |runs: &[&ScaleRow], round| {
                let run = runs.iter().find(|r| r.round == round);
                run.map(|r| r.row.ops_per_sec())
            };
            let ratios: Vec<f64> = (1..=rounds)
                .filter_map(|round| Some(at(&b, round)? / at(&a, round)?))
                .collect();
            let _ = write!(
                line,
                "  => {second} / {first} goodput {} (per round {})",
                ratio(
                    median(b.iter().map(|r| r.row.ops_per_sec()).collect()),
                    median(a.iter().map(|r| r.row.ops_per_sec()).collect())
                ),
                per_round(&ratios)
            );
            summary.say(line);
        }
    }
    let blind = |r: &&ScaleRow| r.row.strategy == Strategy::Blind.name();
    let checked_lost: i64 = rows.iter().filter(|r| !blind(r)).map(|r| r.row.lost).sum();
    let blind = match rows
        .iter()
        .filter(blind)
        .map(|r| r.row.lost)
        .reduce(|a, b| a + b)
    {
        Some(lost) => format!(", blind {lost}"),
        None => String::new(),
    };
    summary.say(format!(
        "{}: lost updates: checked strategies {checked_lost} (must be 0){blind}",
        cluster.name()
    ));
}

/// The row of a run: its `measured` tally, and the units that left the table, counted
/// on `admin`.
pub(crate) fn row(
    backend: Backend,
    name: &str,
    workers: usize,
    keys: i32,
    measured: (Tally, Duration),
    admin: &mut impl StockSql,
) -> Result<Row, String> {
    if let Some(error) = &measured.0.first_error {
        eprintln!("  {name} failed: {error}");
    }
    let taken = admin.taken(keys).map_err(|e| e.to_string())?;
    Ok(Row::new(backend, name, workers, keys, measured, taken))
}
