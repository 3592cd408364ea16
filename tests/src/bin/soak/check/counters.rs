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
    /// The write deleted the row for good (the `upsert` path's deleted rows): once it
    /// is acknowledged, the row must be absent at the end.
    pub(crate) deletes: bool,
}

/// Checks the rows (`id -> value` at the end) against their seeded values and the
/// writes; returns the violations and how many unknown-outcome increments the final
/// values needed.
///
/// A row below `initial + acknowledged` lost an acknowledged change; a row above
/// `initial + acknowledged + unknown` took a change twice. Two acknowledged writes
/// from one token of one row are a lost update even when the sum hides it. A row whose
/// delete was acknowledged (a write that `deletes`) and that is there at the end was
/// resurrected: an acknowledged delete undone. A row may be missing only when a write
/// deleted it (acknowledged or unknown), and a row that was not seeded may be there only
/// when a write names it.
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
    let all = || acknowledged.iter().chain(unknown);
    let deleted: BTreeMap<i32, Option<i32>> = acknowledged
        .iter()
        .filter(|w| w.deletes)
        .map(|w| (w.row, w.from))
        .collect();
    let resurrected = |row: i32, value: i32| {
        let delete = match deleted[&row] {
            Some(token) => format!("its delete from token {token}"),
            None => "its delete".to_owned(),
        };
        format!("row {row}: resurrected: {delete} was acknowledged, yet it holds {value}")
    };
    for (&row, &start) in initial {
        let Some(&value) = rows.get(&row) else {
            if !all().any(|w| w.row == row && w.deletes) {
                violations.push(format!("row {row}: vanished"));
            }
            continue;
        };
        if deleted.contains_key(&row) {
            violations.push(resurrected(row, value));
            continue;
        }
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
    for (&row, &value) in rows.iter().filter(|(row, _)| !initial.contains_key(row)) {
        if deleted.contains_key(&row) {
            violations.push(resurrected(row, value));
        } else if !all().any(|w| w.row == row) {
            violations.push(format!("row {row}: a row no write produced"));
        }
    }
    let mut from: BTreeMap<(i32, i32), usize> = BTreeMap::new();
    // A resurrected row's writes from its deleted token are reported once, above.
    let reported = |row: &i32| deleted.contains_key(row) && rows.contains_key(row);
    for write in acknowledged.iter().filter(|w| !reported(&w.row)) {
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
/// applied twice, and a change whose writer was told its transaction did not commit
/// (`rolled_back`) must not be in its row at all. Exact where the counter's sum is not:
/// other unknown writes cannot hide a change applied twice, or applied though refused.
pub(crate) fn tags(
    labels: &BTreeMap<i32, String>,
    acknowledged: &[Write],
    rolled_back: &[Write],
) -> Vec<String> {
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
    let holds = |write: &Write, tag: u32| {
        let label = labels.get(&write.row).map_or("", String::as_str);
        label
            .split(';')
            .any(|t| t == tag_text(tag).trim_end_matches(';'))
    };
    for write in acknowledged {
        let Some(tag) = write.tag else { continue };
        if !holds(write, tag) {
            violations.push(format!(
                "row {}: lost update: acknowledged change {tag:x} is not in it",
                write.row
            ));
        }
    }
    for write in rolled_back {
        let Some(tag) = write.tag else { continue };
        if holds(write, tag) {
            violations.push(format!(
                "row {}: applied though refused: change {tag:x} is in it, its transaction \
                 reported as not committed",
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
            deletes: false,
        }
    }

    /// A delete of `row` from token `from`, for good.
    fn delete(row: i32, from: i32) -> Write {
        Write {
            increment: 0,
            deletes: true,
            ..w(row, Some(from))
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
                deletes: false,
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
            tags(&labels, &[tagged(0xa), tagged(0xb)], &[]),
            ["row 1: applied twice: change a is in it 2 times"]
        );
        assert_eq!(
            tags(&labels, &[tagged(0xc)], &[]),
            [
                "row 1: applied twice: change a is in it 2 times",
                "row 1: lost update: acknowledged change c is not in it"
            ]
        );
        let labels = BTreeMap::from([(1, "a;b;".to_owned())]);
        assert!(tags(&labels, &[tagged(0xa)], &[]).is_empty());
    }

    #[test]
    fn a_change_whose_transaction_was_reported_rolled_back_must_not_be_in_its_row() {
        let tagged = |tag| Write {
            tag: Some(tag),
            ..w(1, Some(1))
        };
        let labels = BTreeMap::from([(1, "a;b;".to_owned())]);
        assert!(tags(&labels, &[tagged(0xa)], &[tagged(0xc)]).is_empty());
        assert_eq!(
            tags(&labels, &[tagged(0xa)], &[tagged(0xb)]),
            [
                "row 1: applied though refused: change b is in it, its transaction reported as \
              not committed"
            ]
        );
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

    #[test]
    fn a_row_whose_delete_was_acknowledged_and_that_is_there_was_resurrected() {
        // A row made in the run (7), read at token 1, deleted from it (acknowledged),
        // then upserted from the stale token 1: that upsert must not bring it back.
        let initial = BTreeMap::from([(1, 0)]);
        let made = Write {
            increment: 0,
            ..w(7, None)
        };
        let acked = [made, delete(7, 1)];
        let gone = BTreeMap::from([(1, 0)]);
        assert_eq!(counters(&initial, &gone, &acked, &[]), (vec![], 0));
        let back = BTreeMap::from([(1, 0), (7, 1)]);
        let expected =
            ["row 7: resurrected: its delete from token 1 was acknowledged, yet it holds 1"];
        assert_eq!(counters(&initial, &back, &acked, &[]).0, expected);
        // Acknowledged as well, the stale upsert is the same violation, reported once.
        let upserted = [made, delete(7, 1), w(7, Some(1))];
        assert_eq!(counters(&initial, &back, &upserted, &[]).0, expected);
        // Whatever the upsert was told: its outcome unknown, the row still must not be.
        assert_eq!(
            counters(&initial, &back, &acked, &[w(7, Some(1))]).0,
            expected
        );
    }

    #[test]
    fn a_seeded_row_whose_delete_was_acknowledged_is_not_vanished_and_must_stay_gone() {
        let initial = BTreeMap::from([(1, 0), (2, 0)]);
        let acked = [delete(2, 1)];
        let rows = BTreeMap::from([(1, 0)]);
        assert_eq!(counters(&initial, &rows, &acked, &[]), (vec![], 0));
        let rows = BTreeMap::from([(1, 0), (2, 0)]);
        assert_eq!(
            counters(&initial, &rows, &acked, &[]).0,
            ["row 2: resurrected: its delete from token 1 was acknowledged, yet it holds 0"]
        );
    }

    #[test]
    fn a_row_whose_delete_is_unknown_may_be_there_or_not() {
        let initial = BTreeMap::from([(1, 0)]);
        let made = Write {
            increment: 0,
            ..w(7, None)
        };
        for rows in [BTreeMap::from([(1, 0)]), BTreeMap::from([(1, 0), (7, 0)])] {
            assert_eq!(
                counters(&initial, &rows, &[made], &[delete(7, 1)]),
                (vec![], 0)
            );
        }
        // Made, never deleted: there, named by its write.
        let rows = BTreeMap::from([(1, 0), (7, 0)]);
        assert_eq!(counters(&initial, &rows, &[made], &[]), (vec![], 0));
        // A delete of a seeded row whose outcome is unknown may have happened.
        assert_eq!(
            counters(&initial, &BTreeMap::new(), &[], &[delete(1, 1)]),
            (vec![], 0)
        );
    }
}
