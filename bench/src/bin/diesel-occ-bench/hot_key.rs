//! `hot-key`: one row, several worker counts, the recommended way to write a hot row
//! whose change depends on the row alone (`occ-combine`: `blocking::Combiner`) against
//! plain `occ` and the pessimistic lock, in paired rounds, with `occ-escalate`
//! (`RetryPolicy::escalate_hot_rows`, for changes that need more than the row) and
//! `occ-combine-async` beside them.
//!
//! Goodput is a run's committed ops/s and the tail its p99; each round's ratio is a
//! strategy's goodput against the better of `occ` and `pessimistic` in that round,
//! reported as the median of the per-round ratios with its interval, beside the medians
//! of each strategy's goodput and p99.

use std::fmt::Write as _;

use diesel_occ_bench::row::Row;
use diesel_occ_bench::stats::{median, per_round};
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run};

/// The strategies compared, in the order of the first round.
const STRATEGIES: [Strategy; 5] = [
    Strategy::Occ,
    Strategy::Pessimistic,
    Strategy::OccCombine,
    Strategy::OccEscalate,
    Strategy::OccCombineAsynchronous,
];

/// Runs the comparison on every backend and worker count, and writes
/// `hot-key-summary.txt` and `hot-key.csv`.
pub(crate) fn bench(args: &Args, hot_workers: &[usize]) -> Result<(), String> {
    let mut summary = Summary::default();
    let mut csv = format!("round,{}\n", Row::CSV_HEADER);
    summary.say(format!(
        "-- hot key: 1 key, workers {hot_workers:?}, {} paired rounds of {:?}",
        args.common.rounds, args.common.duration
    ));
    for &backend in &args.backends {
        let url = args.url(backend);
        for &workers in hot_workers {
            let setting = Setting {
                workers,
                ..args.setting(backend, &url)?
            };
            // Every strategy once per round, each round starting with the next one.
            let mut order = STRATEGIES.to_vec();
            let mut rows = Vec::new();
            for round in 1..=args.common.rounds {
                for &strategy in &order {
                    let row = run(&setting, strategy, 1)?;
                    let line = row.line();
                    summary.say(format!(
                        "{} {workers:>2} workers round {round}: {line}",
                        backend.name()
                    ));
                    let _ = writeln!(csv, "{round},{}", row.csv());
                    rows.push((strategy, row));
                }
                order.rotate_left(1);
            }
            report(
                &format!("{} {workers} workers", backend.name()),
                &rows,
                &mut summary,
            );
        }
    }
    args.common.save("hot-key.csv", &csv)?;
    let path = args.common.save("hot-key-summary.txt", summary.text())?;
    println!("wrote {}", path.display());
    Ok(())
}

/// The medians of each strategy's goodput and p99, and the per-round ratios.
fn report(setting: &str, rows: &[(Strategy, Row)], summary: &mut Summary) {
    let median_of = |strategy: Strategy, value: fn(&Row) -> f64| {
        let values = rows
            .iter()
            .filter(|(s, _)| *s == strategy)
            .map(|(_, row)| value(row));
        median(values.collect())
    };
    let mut line = format!("{setting}, medians:");
    for strategy in STRATEGIES {
        let _ = write!(
            line,
            " {} {:.0} ops/s p99 {:.2} ms;",
            strategy.name(),
            median_of(strategy, |row| row.ops_per_sec),
            median_of(strategy, |row| row.p99_ms)
        );
    }
    summary.say(line);
    // A round is one run of each strategy.
    for other in [
        Strategy::OccCombine,
        Strategy::OccEscalate,
        Strategy::OccCombineAsynchronous,
    ] {
        let ratios: Vec<f64> = rows
            .chunks(STRATEGIES.len())
            .filter_map(|round| {
                let of = |s| {
                    round
                        .iter()
                        .find(|(x, _)| *x == s)
                        .map(|(_, r)| r.ops_per_sec)
                };
                Some(of(other)? / of(Strategy::Occ)?.max(of(Strategy::Pessimistic)?))
            })
            .collect();
        summary.say(format!(
            "  per round, {} / max(occ, pessimistic): {}",
            other.name(),
            per_round(&ratios)
        ));
    }
}
