//! The library's own cost in ABBA rounds, fixed before the run: `occ /
//! handwritten-prepared` and `occ-async / handwritten-async` at the most keys. One round
//! runs the baseline A and the candidate B as `A B B A`, and its ratio is
//! `sqrt(B1 * B2) / sqrt(A1 * A2)`: a drift of the machine's speed that is geometric
//! over the four runs cancels exactly, a linear one to second order. The statistic is
//! the median of the per-round ratios with its bootstrap interval (`stats::estimate`).

use diesel_occ_bench::stats::{Estimate, RESAMPLES, SEED, estimate};
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run};

/// Rounds a comparison runs first.
pub(crate) const MIN_ROUNDS: usize = 21;

/// The most rounds a comparison runs. Its interval is looked at after [`MIN_ROUNDS`]
/// rounds and, while it straddles [`THRESHOLD`], again after each [`EXTRA_ROUNDS`]
/// more, up to this: a ratio near the threshold gets the rounds that decide it, a clear
/// one stops at the first look. (Three looks at an unadjusted 95 % interval: the chance
/// that an interval wrongly clears the threshold is a little above 2.5 %.)
pub(crate) const MAX_ROUNDS: usize = 41;

/// Rounds added at each look that finds the interval straddling the threshold.
pub(crate) const EXTRA_ROUNDS: usize = 10;

/// The ratio the library's cost is judged against: 0.97 with an allowance of 0.03.
const THRESHOLD: f64 = 0.94;

/// Runs every comparison's rounds in turn and prints each round and the estimates.
/// The comparisons, as (baseline, library), are those `--strategies` allows: the
/// blocking one needs `occ` and `handwritten-prepared`, the async one `occ-async`.
pub(crate) fn rounds(
    setting: &Setting<'_>,
    args: &Args,
    summary: &mut Summary,
) -> Result<(), String> {
    let (_, keys) = args.narrow_and_wide();
    let has = |s| args.strategies.contains(&s);
    let comparisons = [
        (Strategy::HandwrittenPrepared, Strategy::Occ),
        (Strategy::HandwrittenAsynchronous, Strategy::OccAsynchronous),
    ];
    for (baseline, library) in comparisons {
        if !has(library) || (baseline == Strategy::HandwrittenPrepared && !has(baseline)) {
            continue;
        }
        let (a, b) = (baseline.name(), library.name());
        let name = format!("{b} / {a} at {keys} keys");
        summary.say(format!(
            "-- abba rounds ({} rounds, and up to {} while the interval straddles the threshold): \
             {name}, each round {a} {b} {b} {a}",
            args.common.rounds,
            MAX_ROUNDS.max(args.common.rounds)
        ));
        let mut ratios = Vec::new();
        let mut planned = args.common.rounds;
        let mut round = 0;
        while round < planned {
            round += 1;
            let mut figures = [0.0; 4];
            for (slot, figure) in figures.iter_mut().enumerate() {
                let side = if is_baseline(slot) { baseline } else { library };
                *figure = run(setting, side, keys)?.ops_per_sec();
            }
            let ratio = round_ratio(figures);
            let shown = ratio.map_or_else(|| "n/a".to_owned(), |r| format!("{r:.3}"));
            summary.say(format!(
                "abba round {round}: {name}: {:.0} {:.0} {:.0} {:.0} ops/s -> {shown}",
                figures[0], figures[1], figures[2], figures[3]
            ));
            ratios.extend(ratio);
            if round == planned && ratios.len() == round {
                planned = rounds_wanted(&ratios);
            }
        }
        summary.say(report(&name, &ratios));
    }
    Ok(())
}

/// Which side runs in slot `slot` (0 to 3) of a round: A, B, B, A.
pub(crate) fn is_baseline(slot: usize) -> bool {
    matches!(slot % 4, 0 | 3)
}

/// One round's ratio B / A from its four runs in the order A, B, B, A; `None` when a
/// figure is not positive and finite.
pub(crate) fn round_ratio([a1, b1, b2, a2]: [f64; 4]) -> Option<f64> {
    let all = [a1, b1, b2, a2];
    if all.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    Some(((b1 * b2) / (a1 * a2)).sqrt())
}

/// Whether the interval has [`THRESHOLD`] inside it: more rounds may decide.
fn straddles(estimate: &Estimate) -> bool {
    estimate.low < THRESHOLD && THRESHOLD <= estimate.high
}

/// How many rounds a comparison with `ratios` so far should have in all: more than it has
/// when it has reached a look (at least [`MIN_ROUNDS`], and [`EXTRA_ROUNDS`] past the
/// last) and the interval straddles the threshold, up to [`MAX_ROUNDS`]; otherwise as many
/// as it has. A comparison started with fewer than [`MIN_ROUNDS`] (a smoke run) is never
/// extended.
pub(crate) fn rounds_wanted(ratios: &[f64]) -> usize {
    let n = ratios.len();
    let at_a_look = n >= MIN_ROUNDS && (n - MIN_ROUNDS).is_multiple_of(EXTRA_ROUNDS);
    if at_a_look && estimate(ratios).is_some_and(|e| straddles(&e)) && n < MAX_ROUNDS {
        (n + EXTRA_ROUNDS).min(MAX_ROUNDS)
    } else {
        n
    }
}

/// The report line of one comparison: the estimate and its interval, and where the
/// interval lies against the threshold.
pub(crate) fn report(name: &str, ratios: &[f64]) -> String {
    let Some(estimate) = estimate(ratios) else {
        return format!("abba: {name}: no round gave a ratio");
    };
    let side = match () {
        _ if straddles(&estimate) => "straddles",
        _ if estimate.low >= THRESHOLD => "lies above",
        _ => "lies below",
    };
    format!(
        "abba: {name}, {} rounds: median of per-round ratios {:.3}, 95 % CI [{:.3}, {:.3}] \
         (percentile bootstrap, {RESAMPLES} resamples, seed {SEED}); the interval \
         {side} {THRESHOLD}",
        estimate.rounds, estimate.median, estimate.low, estimate.high,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel_occ_bench::stats::median;

    /// Runs `rounds` ABBA rounds of a true ratio B / A = `truth` on a machine whose
    /// speed at run `t` is `speed(t)`; the per-round ratios.
    fn abba(rounds: usize, truth: f64, speed: impl Fn(usize) -> f64) -> Vec<f64> {
        (0..rounds)
            .map(|round| {
                let runs: Vec<f64> = (0..4)
                    .map(|slot| {
                        let side = if is_baseline(slot) { 1.0 } else { truth };
                        1000.0 * side * speed(4 * round + slot)
                    })
                    .collect();
                round_ratio([runs[0], runs[1], runs[2], runs[3]]).unwrap()
            })
            .collect()
    }

    #[test]
    fn an_interval_straddles_the_threshold_or_clears_it() {
        let at = |low, high| Estimate {
            median: (low + high) / 2.0,
            low,
            high,
            rounds: 21,
        };
        assert!(!straddles(&at(0.94, 0.99)));
        assert!(straddles(&at(0.93, 0.99)));
        assert!(!straddles(&at(0.90, 0.93)));
        assert!(report("x", &[0.98; 21]).ends_with("the interval lies above 0.94"));
        assert!(report("x", &[0.90; 21]).ends_with("the interval lies below 0.94"));
        assert!(report("x", &[]).contains("no round gave a ratio"));
    }

    #[test]
    fn abba_rounds_cancel_a_drift_that_a_fixed_order_ratio_of_medians_misjudges() {
        // The machine slows 5 % per run (a build starting on the other core); the
        // candidate is truly at 0.98 of the baseline.
        let speed = |t: usize| 0.95f64.powi(t as i32);
        let ratios = abba(21, 0.98, speed);
        let estimate = estimate(&ratios).unwrap();
        assert!((estimate.median - 0.98).abs() < 1e-9, "{estimate:?}");
        assert!((estimate.low - 0.98).abs() < 1e-9, "{estimate:?}");
        assert!(estimate.low >= THRESHOLD);
        // The same drift, each round running A then B, judged by the ratio of medians:
        // B always runs on a slower machine, and the verdict flips.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..21 {
            a.push(1000.0 * speed(2 * round));
            b.push(1000.0 * 0.98 * speed(2 * round + 1));
        }
        let naive = median(b) / median(a);
        assert!(naive < THRESHOLD, "naive ratio of medians {naive}");
    }

    #[test]
    fn rounds_with_a_missing_figure_give_no_ratio() {
        assert_eq!(round_ratio([1.0, 0.0, 1.0, 1.0]), None);
        assert_eq!(round_ratio([1.0, f64::NAN, 1.0, 1.0]), None);
        assert_eq!(round_ratio([2.0, 2.0, 2.0, 2.0]), Some(1.0));
    }

    #[test]
    fn a_straddling_interval_gets_ten_more_rounds_at_each_look_up_to_the_cap() {
        // Wide enough to straddle 0.94 at every look: alternating 0.85 and 1.05.
        let straddling = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| if i % 2 == 0 { 0.85 } else { 1.05 })
                .collect()
        };
        assert_eq!(rounds_wanted(&straddling(21)), 31);
        assert_eq!(rounds_wanted(&straddling(31)), 41);
        assert_eq!(rounds_wanted(&straddling(41)), 41);
        // Between looks, and in a smoke run, the plan stands.
        assert_eq!(rounds_wanted(&straddling(25)), 25);
        assert_eq!(rounds_wanted(&straddling(3)), 3);
        // A decided interval stops at the first look.
        assert_eq!(rounds_wanted(&[0.99; 21]), 21);
        assert_eq!(rounds_wanted(&[0.80; 21]), 21);
    }
}
