//! The statistics every report uses: medians, nearest-rank percentiles and ratios.

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
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
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

/// Whether `value` reaches `target`, as the reports print it.
pub fn verdict(value: f64, target: f64) -> &'static str {
    if value >= target {
        "met"
    } else {
        "below target"
    }
}

/// Per-round ratios as the reports list them: two decimals, space separated.
pub fn listed(ratios: &[f64]) -> String {
    let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    listed.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles() {
        assert!(median(Vec::new()).is_nan());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(percentile(&[1, 2, 3, 4], 99.0), 4);
        assert_eq!(ratio(1.0, 0.0), "n/a");
        assert_eq!(ratio(1.0, 4.0), "0.250");
    }
}
