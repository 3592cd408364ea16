//! The statistics every report uses: medians, nearest-rank percentiles, and the median
//! of per-round ratios with its 95 % percentile-bootstrap interval.

/// Bootstrap resamples of the median.
pub const RESAMPLES: usize = 10_000;

/// The bootstrap's fixed seed: the same ratios always give the same interval.
pub const SEED: u64 = 28;

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The nearest-rank percentile `p` (0 to 100) of sorted values; 0 when empty.
pub fn percentile<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `a / b` to three decimals, or `n/a`.
pub fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() {
        format!("{:.3}", a / b)
    } else {
        "n/a".into()
    }
}

/// The median of per-round ratios and its 95 % percentile-bootstrap interval.
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

impl std::fmt::Display for Estimate {
    /// `0.981 [0.950, 1.010], 21 rounds`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (median, low, high, rounds) = (self.median, self.low, self.high, self.rounds);
        write!(f, "{median:.3} [{low:.3}, {high:.3}], {rounds} rounds")
    }
}

/// The estimate of `ratios` ([`RESAMPLES`] resamples, seed [`SEED`]); `None` when
/// there is no ratio.
pub fn estimate(ratios: &[f64]) -> Option<Estimate> {
    if ratios.is_empty() {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(SEED);
    let n = ratios.len();
    let mut medians: Vec<f64> = (0..RESAMPLES)
        .map(|_| median((0..n).map(|_| ratios[rng.usize(0..n)]).collect()))
        .collect();
    medians.sort_by(f64::total_cmp);
    Some(Estimate {
        median: median(ratios.to_vec()),
        low: percentile(&medians, 2.5),
        high: percentile(&medians, 97.5),
        rounds: n,
    })
}

/// Per-round ratios as the reports list them: each to two decimals, then their median
/// and its interval (`0.98 1.02 1.01 -> 1.010 [0.980, 1.020], 3 rounds`).
pub fn per_round(ratios: &[f64]) -> String {
    let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    match estimate(ratios) {
        Some(estimate) => format!("{} -> {estimate}", listed.join(" ")),
        None => "no round gave a ratio".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles() {
        assert!(median(Vec::new()).is_nan());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(percentile::<u64>(&[], 50.0), 0);
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(percentile(&[1, 2, 3, 4], 99.0), 4);
        assert_eq!(ratio(1.0, 0.0), "n/a");
        assert_eq!(ratio(1.0, 4.0), "0.250");
    }

    #[test]
    fn a_constant_ratio_is_its_own_estimate_and_interval() {
        let estimate = estimate(&[0.98; 21]).unwrap();
        assert!((estimate.median - 0.98).abs() < 1e-12, "{estimate:?}");
        assert!((estimate.low - 0.98).abs() < 1e-12, "{estimate:?}");
        assert!((estimate.high - 0.98).abs() < 1e-12, "{estimate:?}");
        assert_eq!(
            per_round(&[0.98; 3]),
            "0.98 0.98 0.98 -> 0.980 [0.980, 0.980], 3 rounds"
        );
        assert_eq!(super::estimate(&[]), None);
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
        // Fixed seed: the same data print the same interval, whatever the order.
        let mut shuffled = ratios.clone();
        shuffled.reverse();
        assert_eq!(estimate(&shuffled).unwrap().median, first.median);
        assert_eq!(estimate(&ratios), Some(first));
    }
}
