//! The statistic of the library's own cost, fixed before the run: interleaved ABBA rounds, the median
//! of the per-round ratios, a percentile-bootstrap 95 % interval and a verdict on it.
//!
//! One round runs the baseline A and the candidate B as `A B B A`, and its ratio is
//! `sqrt(B1 * B2) / sqrt(A1 * A2)`: a drift of the machine's speed that is geometric
//! over the four runs cancels exactly, a linear one to second order. The ratio of the
//! rounds' medians, which this replaces, pairs runs from different rounds and flips with
//! the shared machine's noise.

/// Rounds the verdict needs: fewer give a smoke figure and no verdict.
pub const MIN_ROUNDS: usize = 21;

/// The most rounds a comparison runs. Its interval is looked at after [`MIN_ROUNDS`]
/// rounds and, while it straddles the threshold, again after each [`EXTRA_ROUNDS`] more,
/// up to this: a ratio near the threshold gets the rounds that decide it, a clear one
/// stops at the first look. (Three looks at an unadjusted 95 % interval: the chance of a
/// wrong "met" is a little above 2.5 %.)
pub const MAX_ROUNDS: usize = 41;

/// Rounds added at each look that finds the interval straddling the threshold.
pub const EXTRA_ROUNDS: usize = 10;

/// Bootstrap resamples of the median.
pub const RESAMPLES: usize = 10_000;

/// The bootstrap's fixed seed: the same ratios always give the same interval.
pub const SEED: u64 = 28;

/// The allowance under the target: met when the interval's lower bound reaches
/// `target - MARGIN`.
pub const MARGIN: f64 = 0.03;

/// Which side runs in slot `slot` (0 to 3) of a round: A, B, B, A.
pub fn is_baseline(slot: usize) -> bool {
    matches!(slot % 4, 0 | 3)
}

/// One round's ratio B / A from its four runs in the order A, B, B, A; `None` when a
/// figure is not positive and finite.
pub fn round_ratio([a1, b1, b2, a2]: [f64; 4]) -> Option<f64> {
    let all = [a1, b1, b2, a2];
    if all.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    Some(((b1 * b2) / (a1 * a2)).sqrt())
}

/// The median of the per-round ratios and its 95 % percentile-bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The median of the per-round ratios.
    pub median: f64,
    /// The interval's lower bound (2.5th percentile of the resampled medians).
    pub low: f64,
    /// The interval's upper bound (97.5th percentile).
    pub high: f64,
    /// How many rounds it rests on.
    pub rounds: usize,
}

/// The estimate of `ratios` ([`RESAMPLES`] resamples, seed [`SEED`]); `None` when
/// there is no ratio.
pub fn estimate(ratios: &[f64]) -> Option<Estimate> {
    estimate_with(ratios, RESAMPLES, SEED)
}

/// [`estimate`] with another resample count and seed.
pub fn estimate_with(ratios: &[f64], resamples: usize, seed: u64) -> Option<Estimate> {
    if ratios.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let n = ratios.len();
    let mut sample = vec![0.0; n];
    let mut medians: Vec<f64> = (0..resamples)
        .map(|_| {
            for slot in &mut sample {
                *slot = ratios[rng.usize(0..n)];
            }
            median_of(&mut sample)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    Some(Estimate {
        median: median_of(&mut ratios.to_vec()),
        low: nearest_rank(&medians, 2.5),
        high: nearest_rank(&medians, 97.5),
        rounds: n,
    })
}

/// The median, sorting `values` in place (the mean of the middle two for an even count).
fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The nearest-rank percentile `p` of non-empty sorted values.
fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The verdict on an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The lower bound reaches `target - MARGIN`.
    Met,
    /// Not met, but the interval straddles `target - MARGIN`: more rounds may decide.
    Straddles,
    /// The whole interval lies under `target - MARGIN`.
    Below,
}

impl Verdict {
    /// The verdict on `estimate` against `target`.
    pub fn of(estimate: &Estimate, target: f64) -> Verdict {
        let threshold = target - MARGIN;
        if estimate.low >= threshold {
            Verdict::Met
        } else if estimate.high >= threshold {
            Verdict::Straddles
        } else {
            Verdict::Below
        }
    }

    /// As the reports print it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Straddles => "below target (the interval straddles the threshold)",
            Verdict::Below => "below target",
        }
    }
}

/// How many rounds a comparison with `ratios` so far should have in all: more than it has
/// when it has reached a look (at least [`MIN_ROUNDS`], and [`EXTRA_ROUNDS`] past the
/// last) and the interval straddles the threshold, up to [`MAX_ROUNDS`]; otherwise as many
/// as it has. A comparison started with fewer than [`MIN_ROUNDS`] (a smoke run) is never
/// extended.
pub fn rounds_wanted(ratios: &[f64], target: f64) -> usize {
    let n = ratios.len();
    let at_a_look = n >= MIN_ROUNDS && (n - MIN_ROUNDS).is_multiple_of(EXTRA_ROUNDS);
    let straddles = estimate(ratios)
        .is_some_and(|estimate| Verdict::of(&estimate, target) == Verdict::Straddles);
    if at_a_look && straddles && n < MAX_ROUNDS {
        (n + EXTRA_ROUNDS).min(MAX_ROUNDS)
    } else {
        n
    }
}

/// The report line of one comparison: the estimate, the interval, the rule and the
/// verdict, with a note when there were fewer than [`MIN_ROUNDS`] rounds.
pub fn report(name: &str, ratios: &[f64], target: f64) -> String {
    let Some(estimate) = estimate(ratios) else {
        return format!("abba: {name}: no round gave a ratio: no verdict");
    };
    let verdict = Verdict::of(&estimate, target).text();
    let verdict = if estimate.rounds < MIN_ROUNDS {
        format!(
            "no verdict ({} < {MIN_ROUNDS} rounds: a smoke figure; the interval alone reads {verdict})",
            estimate.rounds
        )
    } else {
        verdict.to_owned()
    };
    format!(
        "abba: {name}, {} rounds: median of per-round ratios {:.3}, 95 % CI [{:.3}, {:.3}] \
         (percentile bootstrap, {RESAMPLES} resamples, seed {SEED}); target >= {target} \
         (met when the lower bound >= {:.2}): {verdict}",
        estimate.rounds,
        estimate.median,
        estimate.low,
        estimate.high,
        target - MARGIN,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::median;

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
    fn a_constant_ratio_is_its_own_estimate_and_interval() {
        let ratios = vec![0.98; 21];
        let estimate = estimate(&ratios).unwrap();
        assert!((estimate.median - 0.98).abs() < 1e-12, "{estimate:?}");
        assert!((estimate.low - 0.98).abs() < 1e-12, "{estimate:?}");
        assert!((estimate.high - 0.98).abs() < 1e-12, "{estimate:?}");
        assert_eq!(Verdict::of(&estimate, 0.97), Verdict::Met);
        assert_eq!(Verdict::of(&estimate, 1.05), Verdict::Below);
    }

    #[test]
    fn a_noisy_ratio_gets_an_interval_around_it_and_the_same_one_every_time() {
        let mut rng = fastrand::Rng::with_seed(7);
        // A true ratio of 1.0 with +-5 % noise per round.
        let ratios: Vec<f64> = (0..21).map(|_| 0.95 + 0.1 * rng.f64()).collect();
        let first = estimate(&ratios).unwrap();
        assert!(
            first.low < first.median && first.median < first.high,
            "{first:?}"
        );
        assert!(first.low <= 1.0 && 1.0 <= first.high, "{first:?}");
        assert!(first.high - first.low < 0.1, "{first:?}");
        assert_eq!(Verdict::of(&first, 0.97), Verdict::Met, "{first:?}");
        // Fixed seed: the same data print the same interval, whatever the order.
        let mut shuffled = ratios.clone();
        shuffled.reverse();
        assert_eq!(estimate(&shuffled).unwrap().median, first.median);
        assert_eq!(estimate(&ratios), Some(first));
    }

    #[test]
    fn the_verdict_says_when_the_interval_straddles() {
        let at = |low, high| Estimate {
            median: (low + high) / 2.0,
            low,
            high,
            rounds: 21,
        };
        assert_eq!(Verdict::of(&at(0.94, 0.99), 0.97), Verdict::Met);
        assert_eq!(Verdict::of(&at(0.93, 0.99), 0.97), Verdict::Straddles);
        assert_eq!(Verdict::of(&at(0.90, 0.93), 0.97), Verdict::Below);
        assert!(report("x", &[0.98; 3], 0.97).contains("no verdict (3 < 21 rounds"));
        assert!(report("x", &[0.98; 21], 0.97).ends_with(": met"));
        assert!(report("x", &[0.90; 21], 0.97).ends_with(": below target"));
        assert!(report("x", &[], 0.97).contains("no verdict"));
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
        assert_eq!(Verdict::of(&estimate, 0.97), Verdict::Met);
        // The same drift, each round running A then B, judged by the ratio of medians:
        // B always runs on a slower machine, and the verdict flips.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..21 {
            a.push(1000.0 * speed(2 * round));
            b.push(1000.0 * 0.98 * speed(2 * round + 1));
        }
        let naive = median(b) / median(a);
        assert!(naive < 0.97 - MARGIN, "naive ratio of medians {naive}");
    }

    #[test]
    fn per_round_ratios_keep_a_verdict_that_the_noise_flips_in_a_ratio_of_medians() {
        // The machine's speed wanders from run to run (a random walk of up to +-6 % a
        // run, as other sessions' builds come and go); runs differ by +-1 % more. The
        // candidate is truly at 0.99 of the baseline, so target 0.97 is met.
        let mut rng = fastrand::Rng::with_seed(11);
        let (mut old_flips, mut abba_flips) = (0, 0);
        for _ in 0..200 {
            let mut log_speed = 0.0;
            let mut run = |side: f64| {
                log_speed += 0.12 * rng.f64() - 0.06;
                side * f64::exp(log_speed) * (0.99 + 0.02 * rng.f64())
            };
            let rounds: Vec<[f64; 4]> = (0..21)
                .map(|_| [run(1.0), run(0.99), run(0.99), run(1.0)])
                .collect();
            let ratios: Vec<f64> = rounds.iter().map(|r| round_ratio(*r).unwrap()).collect();
            if Verdict::of(&estimate_with(&ratios, 1000, SEED).unwrap(), 0.97) != Verdict::Met {
                abba_flips += 1;
            }
            // The old statistic and rule: the ratio of the sides' medians against 0.97.
            let a = median(rounds.iter().map(|r| r[0]).collect());
            let b = median(rounds.iter().map(|r| r[1]).collect());
            if b / a < 0.97 {
                old_flips += 1;
            }
        }
        assert_eq!(
            abba_flips, 0,
            "the ratio of medians flipped {old_flips} times"
        );
        assert!(
            old_flips >= 20,
            "the ratio of medians flipped only {old_flips} times in 200"
        );
    }

    #[test]
    fn rounds_with_a_missing_figure_give_no_ratio() {
        assert_eq!(round_ratio([1.0, 0.0, 1.0, 1.0]), None);
        assert_eq!(round_ratio([1.0, f64::NAN, 1.0, 1.0]), None);
        assert_eq!(round_ratio([2.0, 2.0, 2.0, 2.0]), Some(1.0));
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn a_straddling_interval_gets_ten_more_rounds_at_each_look_up_to_the_cap() {
        // Wide enough to straddle 0.94 at every look: alternating 0.85 and 1.05.
        let straddling = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| if i % 2 == 0 { 0.85 } else { 1.05 })
                .collect()
        };
        assert_eq!(rounds_wanted(&straddling(21), 0.97), 31);
        assert_eq!(rounds_wanted(&straddling(31), 0.97), 41);
        assert_eq!(rounds_wanted(&straddling(41), 0.97), 41);
        // Between looks, and in a smoke run, the plan stands.
        assert_eq!(rounds_wanted(&straddling(25), 0.97), 25);
        assert_eq!(rounds_wanted(&straddling(3), 0.97), 3);
        // A decided interval stops at the first look.
        assert_eq!(rounds_wanted(&[0.99; 21], 0.97), 21);
        assert_eq!(rounds_wanted(&[0.80; 21], 0.97), 21);
    }
}
