//! `hot-key`: one row, several worker counts, the recommended way to write a hot row
//! whose change depends on the row alone (`occ-combine`: `blocking::Combiner`) against
//! plain `occ` and the pessimistic lock, in paired rounds, with `occ-escalate`
//! (`RetryPolicy::escalate_hot_rows`, for changes that need more than the row) beside
//! them.
//!
//! The statistic is fixed before the run: goodput is the median over the rounds of
//! each strategy's committed ops/s, and the verdict asks the ratio of those medians,
//! `occ-combine / max(occ, pessimistic)`, to be at least 1.0; the tail is the median
//! over the rounds of each run's p99, and the verdict asks `occ-combine`'s to be no
//! larger than `pessimistic`'s. `occ-escalate` and `occ-combine-async` get the same two
//! figures, without a verdict.

use std::fmt::Write as _;

use diesel_occ_bench::async_setup::Setup;
use diesel_occ_bench::backend::{Backend, ensure_database};
use diesel_occ_bench::stats::{median, per_round, ratio, verdict};
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run};
use diesel_occ_bench::row::Row;

/// The strategies compared, in the order of the first round.
const STRATEGIES: [Strategy; 5] = [
    Strategy::Occ,
    Strategy::Pessimistic,
    Strategy::OccCombine,
    Strategy::OccEscalate,
    Strategy::OccCombineAsynchronous,
];

/// The recommended way to write a hot row whose change depends on the row alone.
const RECOMMENDED: Strategy = Strategy::OccCombine;

/// Runs the comparison on every backend and worker count, and writes
/// `hot-key-summary.txt` and `hot-key.csv`.
pub(crate) fn bench(args: &Args, hot_workers: &[usize]) -> Result<(), String> {
    let mut summary = Summary::default();
    let mut csv = format!("round,{}\n", Row::CSV_HEADER);
    summary.say(format!(
        "-- hot key: 1 key, workers {:?}, {} paired rounds of {:?}; statistic (fixed before the \
         run): goodput = median of the rounds' committed ops/s, verdict on occ-combine \
         (recommended) / max(occ, pessimistic) >= 1.0 by the ratio of medians; tail = median \
         of the rounds' p99, verdict on occ-combine's <= pessimistic's",
        hot_workers, args.common.rounds, args.common.limit
    ));
    for &backend in &args.backends {
        let url = args.url(backend);
        ensure_database(backend, &url)?;
        for &workers in hot_workers {
            let setting = Setting {
                backend,
                url: &url,
                workers,
                limit: args.common.limit,
                retry: &args.retry,
            };
            let rows = rounds(&setting, args, &mut summary, &mut csv)?;
            report(backend, workers, &rows, &mut summary);
        }
    }
    std::fs::create_dir_all(&args.common.out).map_err(|e| e.to_string())?;
    for (name, text) in [
        ("hot-key-summary.txt", summary.text()),
        ("hot-key.csv", &csv),
    ] {
        let path = args.common.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    println!(
        "wrote {}",
        args.common.out.join("hot-key-summary.txt").display()
    );
    Ok(())
}

/// The rounds at one setting: every strategy once per round, each round starting with
/// the next strategy.
fn rounds(
    setting: &Setting<'_>,
    args: &Args,
    summary: &mut Summary,
    csv: &mut String,
) -> Result<Vec<(Strategy, Row)>, String> {
    let mut order = STRATEGIES.to_vec();
    let mut rows = Vec::new();
    for round in 1..=args.common.rounds {
        for &strategy in &order {
            let row = run(setting, strategy, 1, Setup::RECOMMENDED)?;
            summary.say(format!(
                "{} {:>2} workers round {round}: {}",
                setting.backend.name(),
                setting.workers,
                row.line()
            ));
            let _ = writeln!(csv, "{round},{}", row.csv());
            rows.push((strategy, row));
        }
        order.rotate_left(1);
    }
    Ok(rows)
}

fn report(backend: Backend, workers: usize, rows: &[(Strategy, Row)], summary: &mut Summary) {
    let median_of = |strategy: Strategy, value: fn(&Row) -> f64| {
        median(
            rows.iter()
                .filter(|(s, _)| *s == strategy)
                .map(|(_, row)| value(row))
                .collect(),
        )
    };
    let goodput = |strategy| median_of(strategy, |row| row.ops_per_sec);
    let p99 = |strategy| median_of(strategy, |row| row.p99_ms);
    let mut line = format!("{} {workers} workers, medians:", backend.name());
    for strategy in STRATEGIES {
        let _ = write!(
            line,
            " {} {:.0} ops/s p99 {:.2} ms;",
            strategy.name(),
            goodput(strategy),
            p99(strategy)
        );
    }
    summary.say(line);
    let best = goodput(Strategy::Occ).max(goodput(Strategy::Pessimistic));
    let recommended = goodput(RECOMMENDED);
    let (recommended_p99, lock_p99) = (p99(RECOMMENDED), p99(Strategy::Pessimistic));
    summary.say(format!(
        "  {name} / max(occ, pessimistic) = {} (target >= 1.0: {}); p99 {name} {recommended_p99:.2} ms \
         vs pessimistic {lock_p99:.2} ms (target <=: {})",
        ratio(recommended, best),
        verdict(recommended / best, 1.0),
        verdict(lock_p99 / recommended_p99, 1.0),
        name = RECOMMENDED.name(),
    ));
    for other in [Strategy::OccEscalate, Strategy::OccCombineAsynchronous] {
        summary.say(format!(
            "  {} / max(occ, pessimistic) = {}; p99 {:.2} ms (no target)",
            other.name(),
            ratio(goodput(other), best),
            p99(other),
        ));
    }
    // Each round's ratio, from runs seconds apart (a round is one run of each strategy).
    for other in [
        RECOMMENDED,
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
