//! The check of a write path's counter rows: every acknowledged change is +1 to a
//! row's counter (recorded client-side with the token it was read at), so each row's
//! final value must be its initial value plus the acknowledged increments, plus at
//! most the increments whose outcome is unknown. Pure logic, unit-tested below.

use std::collections::BTreeMap;

/// One write of a counter row, as its writer was told (acknowledged) or not told
/// (unknown outcome).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Write {
    pub(crate) row: i32,
    /// The token the write was guarded by; `None` for a write that reads no token
    /// (a bulk update, a combined change).
    pub(crate) from: Option<i32>,
    /// What it adds to the row's counter (0 for a write that only moves the token).
    pub(crate) increment: i32,
    /// The change's own mark, which the combiners' changes append to the row's label
    /// (`tags`).
    pub(crate) tag: Option<u32>,
}

/// Checks the rows (`id -> value` at the end) against their seeded values and the
/// writes; returns the violations and how many unknown-outcome increments the final
/// values needed.
///
/// A row below `initial + acknowledged` lost an acknowledged change; a row above
/// `initial + acknowledged + unknown` took a change twice. Two acknowledged writes
/// from one token of one row are a lost update even when the sum hides it.
pub(crate) fn counters(
    initial: &BTreeMap<i32, i32>,
    rows: &BTreeMap<i32, i32>,
    acknowledged: &[Write],
    unknown: &[Write],
) -> (Vec<String>, u64) {
    let mut violations = Vec::new();
    let sum = |writes: &[Write], row: i32| -> i64 {
        writes
            .iter()
            .filter(|w| w.row == row)
            .map(|w| i64::from(w.increment))
            .sum()
    };
    let mut needed = 0;
    for (&row, &start) in initial {
        let Some(&value) = rows.get(&row) else {
            violations.push(format!("row {row}: vanished"));
            continue;
        };
        let low = i64::from(start) + sum(acknowledged, row);
        let high = low + sum(unknown, row);
        let value = i64::from(value);
        if value < low {
            violations.push(format!(
                "row {row}: lost update: holds {value}, its acknowledged changes need at \
                 least {low} ({} lost)",
                low - value
            ));
        } else if value > high {
            violations.push(format!(
                "row {row}: applied twice: holds {value}, its acknowledged changes plus \
                 every unknown one make at most {high}"
            ));
        } else {
            needed += (value - low) as u64;
        }
    }
    for row in rows.keys().filter(|row| !initial.contains_key(row)) {
        violations.push(format!("row {row}: a row no write produced"));
    }
    let mut from: BTreeMap<(i32, i32), usize> = BTreeMap::new();
    for write in acknowledged {
        if let Some(token) = write.from {
            *from.entry((write.row, token)).or_default() += 1;
        }
    }
    for ((row, token), writes) in from.into_iter().filter(|(_, n)| *n > 1) {
        violations.push(format!(
            "row {row}: lost update: {writes} acknowledged writes from token {token}"
        ));
    }
    (violations, needed)
}

/// The text a tagged change appends to its row's label.
pub(crate) fn tag_text(tag: u32) -> String {
    format!("{tag:x};")
}

/// Checks the tags of tagged changes against the rows' labels (`id -> label`): an
/// acknowledged change whose tag is not in its row was lost, a tag in a row twice was
/// applied twice. Exact where the counter's sum is not: other unknown writes cannot
/// hide a change applied twice.
pub(crate) fn tags(labels: &BTreeMap<i32, String>, acknowledged: &[Write]) -> Vec<String> {
    let mut violations = Vec::new();
    for (row, label) in labels {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for tag in label.split(';').filter(|tag| !tag.is_empty()) {
            *seen.entry(tag).or_default() += 1;
        }
        for (tag, times) in seen.into_iter().filter(|(_, n)| *n > 1) {
            violations.push(format!(
                "row {row}: applied twice: change {tag} is in it {times} times"
            ));
        }
    }
    for write in acknowledged {
        let Some(tag) = write.tag else { continue };
        let label = labels.get(&write.row).map_or("", String::as_str);
        if !label
            .split(';')
            .any(|t| t == tag_text(tag).trim_end_matches(';'))
        {
            violations.push(format!(
                "row {}: lost update: acknowledged change {tag:x} is not in it",
                write.row
            ));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(row: i32, from: Option<i32>) -> Write {
        Write {
            row,
            from,
            increment: 1,
            tag: None,
        }
    }

    fn check(value: i32, acknowledged: &[Write], unknown: &[Write]) -> (Vec<String>, u64) {
        let initial = BTreeMap::from([(1, 0)]);
        let rows = BTreeMap::from([(1, value)]);
        counters(&initial, &rows, acknowledged, unknown)
    }

    #[test]
    fn a_row_holding_every_acknowledged_change_passes() {
        let acked = [w(1, Some(1)), w(1, Some(2)), w(1, None)];
        assert_eq!(check(3, &acked, &[]), (vec![], 0));
    }

    #[test]
    fn unknown_changes_may_have_happened_once_each() {
        let acked = [w(1, Some(1))];
        let unknown = [w(1, Some(2)), w(1, Some(3))];
        assert_eq!(check(1, &acked, &unknown), (vec![], 0));
        assert_eq!(check(3, &acked, &unknown), (vec![], 2));
        let (violations, _) = check(4, &acked, &unknown);
        assert!(violations[0].contains("applied twice"), "{violations:?}");
    }

    #[test]
    fn a_row_behind_its_acknowledged_changes_is_a_lost_update() {
        let acked = [w(1, Some(1)), w(1, Some(2))];
        let (violations, _) = check(1, &acked, &[w(1, Some(3))]);
        assert!(
            violations[0].contains("lost update: holds 1"),
            "{violations:?}"
        );
    }

    #[test]
    fn two_acknowledged_writes_from_one_token_are_a_lost_update_whatever_the_sum() {
        // Two blind writers from token 1, one of them adding 2 to hide the loss.
        let acked = [
            w(1, Some(1)),
            Write {
                row: 1,
                from: Some(1),
                increment: 0,
                tag: None,
            },
        ];
        let (violations, _) = check(1, &acked, &[]);
        assert_eq!(
            violations,
            ["row 1: lost update: 2 acknowledged writes from token 1"]
        );
    }

    #[test]
    fn a_tag_twice_or_an_acknowledged_tag_missing_fails() {
        let tagged = |tag| Write {
            tag: Some(tag),
            ..w(1, None)
        };
        let labels = BTreeMap::from([(1, "a;b;a;".to_owned())]);
        assert_eq!(
            tags(&labels, &[tagged(0xa), tagged(0xb)]),
            ["row 1: applied twice: change a is in it 2 times"]
        );
        assert_eq!(
            tags(&labels, &[tagged(0xc)]),
            [
                "row 1: applied twice: change a is in it 2 times",
                "row 1: lost update: acknowledged change c is not in it"
            ]
        );
        let labels = BTreeMap::from([(1, "a;b;".to_owned())]);
        assert!(tags(&labels, &[tagged(0xa)]).is_empty());
    }

    #[test]
    fn a_vanished_or_unseeded_row_fails() {
        let initial = BTreeMap::from([(1, 0)]);
        let (violations, _) = counters(&initial, &BTreeMap::from([(2, 0)]), &[], &[]);
        assert_eq!(
            violations,
            ["row 1: vanished", "row 2: a row no write produced"]
        );
    }
}
