//! The two comparisons of the library's own cost in ABBA rounds (`--abba-rounds`, default 21,
//! extended by `diesel_occ_bench::abba::rounds_wanted` while the interval straddles the
//! threshold): `occ / handwritten-prepared` and `occ-async / handwritten-async`,
//! at the most keys. Each round runs baseline, library, library, baseline; the
//! statistic and its verdict are `diesel_occ_bench::abba`'s.

use diesel_occ_bench::abba::{self, round_ratio};
use diesel_occ_bench::async_setup::Setup;
use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run};

/// `--abba-rounds` unless given: the fewest the verdict accepts.
pub(crate) const DEFAULT_ROUNDS: usize = abba::MIN_ROUNDS;

/// The target of both comparisons.
const TARGET: f64 = 0.97;

/// One side of a comparison: a strategy and, for an async one, its setup.
#[derive(Debug, Clone, Copy)]
struct Side {
    label: &'static str,
    strategy: Strategy,
    setup: Setup,
}

/// The comparisons `--strategies` allows: the blocking one needs `occ` and
/// `handwritten-prepared`, the async one `occ-async`.
fn comparisons(args: &Args) -> Vec<(Side, Side)> {
    let has = |s| args.strategies.contains(&s);
    let mut chosen = Vec::new();
    if has(Strategy::Occ) && has(Strategy::HandwrittenPrepared) {
        chosen.push((
            Side {
                label: "handwritten-prepared",
                strategy: Strategy::HandwrittenPrepared,
                setup: Setup::RECOMMENDED,
            },
            Side {
                label: "occ",
                strategy: Strategy::Occ,
                setup: Setup::RECOMMENDED,
            },
        ));
    }
    if has(Strategy::OccAsynchronous) {
        chosen.push((
            Side {
                label: "handwritten-async",
                strategy: Strategy::OccAsynchronous,
                setup: Setup::HANDWRITTEN,
            },
            Side {
                label: "occ-async",
                strategy: Strategy::OccAsynchronous,
                setup: Setup::RECOMMENDED,
            },
        ));
    }
    chosen
}

/// Runs every comparison's rounds in turn and prints each round and the verdicts.
pub(crate) fn rounds(
    setting: &Setting<'_>,
    args: &Args,
    summary: &mut Summary,
) -> Result<(), String> {
    if args.abba_rounds == 0 {
        return Ok(());
    }
    let keys = *args.keys.iter().max().unwrap_or(&1);
    for (baseline, library) in comparisons(args) {
        let name = format!("{} / {} at {keys} keys", library.label, baseline.label);
        let (a, b) = (baseline.label, library.label);
        summary.say(format!(
            "-- abba rounds ({} rounds, and up to {} while the interval straddles the threshold): \
             {name}, each round {a} {b} {b} {a}",
            args.abba_rounds,
            abba::MAX_ROUNDS.max(args.abba_rounds)
        ));
        let mut ratios = Vec::new();
        let mut planned = args.abba_rounds;
        let mut round = 0;
        while round < planned {
            round += 1;
            let mut figures = [0.0; 4];
            for (slot, figure) in figures.iter_mut().enumerate() {
                let side = if abba::is_baseline(slot) {
                    baseline
                } else {
                    library
                };
                *figure = run(setting, side.strategy, keys, side.setup)?.ops_per_sec;
            }
            let ratio = round_ratio(figures);
            let shown = ratio.map_or_else(|| "n/a".to_owned(), |r| format!("{r:.3}"));
            summary.say(format!(
                "abba round {round}: {name}: {:.0} {:.0} {:.0} {:.0} ops/s -> {shown}",
                figures[0], figures[1], figures[2], figures[3]
            ));
            ratios.extend(ratio);
            if round == planned && ratios.len() == round {
                planned = abba::rounds_wanted(&ratios, TARGET);
            }
        }
        summary.say(abba::report(&name, &ratios, TARGET));
    }
    Ok(())
}

/// `--abba-only`: the summary as `<out>/<backend>-abba-summary.txt`.
pub(crate) fn write(args: &Args, backend: Backend, summary: &Summary) -> Result<(), String> {
    let out = &args.common.out;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let path = out.join(format!("{}-abba-summary.txt", backend.name()));
    std::fs::write(&path, summary.text()).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}
