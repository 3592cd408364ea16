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
use diesel_occ_bench::stats::per_round;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run};
use crate::samples::Samples;

/// The strategies compared, in the order of the first round.
const STRATEGIES: [Strategy; 5] = [
    Strategy::Occ,
    Strategy::Pessimistic,
    Strategy::OccCombine,
    Strategy::OccEscalate,
    Strategy::OccCombineAsynchronous,
];

/// What the strategies are compared with, round by round.
const BEST: &str = "max(occ, pessimistic)";

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
            let (mut goodput, mut p99) = (Samples::default(), Samples::default());
            let rounds = args.common.rounds;
            for round in 1..=rounds {
                for &strategy in &order {
                    let row = run(&setting, strategy, 1)?;
                    let (name, line) = (backend.name(), row.line());
                    summary.say(format!("{name} {workers:>2} workers round {round}: {line}"));
                    let _ = writeln!(csv, "{round},{}", row.csv());
                    goodput.push(round, strategy.name(), 1, row.ops_per_sec());
                    p99.push(round, strategy.name(), 1, row.ms(99.0));
                }
                order.rotate_left(1);
                let of = |name| goodput.value(round, name, 1);
                if let (Some(occ), Some(lock)) = (of("occ"), of("pessimistic")) {
                    goodput.push(round, BEST, 1, occ.max(lock));
                }
            }
            let mut line = format!("{} {workers} workers, medians:", backend.name());
            for name in STRATEGIES.map(Strategy::name) {
                let (ops, tail) = (goodput.median(name, 1), p99.median(name, 1));
                let _ = write!(line, " {name} {ops:.0} ops/s p99 {tail:.2} ms;");
            }
            summary.say(line);
            for other in ["occ-combine", "occ-escalate", "occ-combine-async"] {
                let ratios = goodput.ratios(rounds, (other, 1), (BEST, 1));
                summary.say(format!(
                    "  per round, {other} / {BEST}: {}",
                    per_round(&ratios)
                ));
            }
        }
    }
    args.common.save("hot-key.csv", &csv)?;
    let path = args.common.save("hot-key-summary.txt", summary.text())?;
    println!("wrote {}", path.display());
    Ok(())
}
