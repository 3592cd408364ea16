//! The paired rounds' samples: one figure of one strategy at one key count in one
//! round, their medians and their per-round ratios.

use diesel_occ_bench::stats::{median, per_round};

/// One round's figure of one strategy (or pgbench) at one key count.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) round: usize,
    pub(crate) label: String,
    pub(crate) keys: i32,
    pub(crate) value: f64,
}

/// Every round's samples.
#[derive(Debug, Default)]
pub(crate) struct Samples(pub(crate) Vec<Sample>);

impl Samples {
    pub(crate) fn push(&mut self, round: usize, label: &str, keys: i32, value: f64) {
        let label = label.to_owned();
        self.0.push(Sample {
            round,
            label,
            keys,
            value,
        });
    }

    pub(crate) fn median(&self, label: &str, keys: i32) -> f64 {
        median(
            self.0
                .iter()
                .filter(|s| s.label == label && s.keys == keys)
                .map(|s| s.value)
                .collect(),
        )
    }

    pub(crate) fn has(&self, label: &str, keys: i32) -> bool {
        self.median(label, keys).is_finite()
    }

    pub(crate) fn value(&self, round: usize, label: &str, keys: i32) -> Option<f64> {
        self.0
            .iter()
            .find(|s| s.round == round && s.label == label && s.keys == keys)
            .map(|s| s.value)
    }

    /// Each round's ratio of `a` to `b`, from two runs seconds apart: the drift of a
    /// shared machine hits both sides alike, which the ratio of medians does not
    /// guarantee.
    pub(crate) fn ratios(
        &self,
        rounds: usize,
        (a, a_keys): (&str, i32),
        (b, b_keys): (&str, i32),
    ) -> Vec<f64> {
        (1..=rounds)
            .filter_map(|round| Some(self.value(round, a, a_keys)? / self.value(round, b, b_keys)?))
            .collect()
    }

    /// The per-round ratios' line: `  per round, a / b at K keys: ... -> M [L, H], n
    /// rounds`.
    pub(crate) fn per_round(
        &self,
        rounds: usize,
        (a, a_keys): (&str, i32),
        (b, b_keys): (&str, i32),
    ) -> String {
        let ratios = self.ratios(rounds, (a, a_keys), (b, b_keys));
        let at = if a_keys == b_keys {
            format!("{a} / {b} at {a_keys} keys")
        } else {
            format!("{a} at {a_keys} keys / {b} at {b_keys} keys")
        };
        format!("  per round, {at}: {}", per_round(&ratios))
    }
}
