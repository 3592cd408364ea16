//! The independent log of what the soak's writers were told, and the check of the
//! `inventory` rows against it: pure logic, unit-tested on small synthetic histories.

use std::collections::{BTreeMap, HashMap, HashSet};

use diesel_occ::UuidToken;

/// One entry of the independent log.
#[derive(Debug, Clone)]
pub(crate) enum Record {
    /// An acknowledged insert: the row holds `token` and `available`.
    Inserted {
        sku: String,
        token: UuidToken,
        available: i32,
    },
    /// An acknowledged update from `old`: the row holds `new` and `available`.
    Updated {
        sku: String,
        old: UuidToken,
        new: UuidToken,
        available: i32,
    },
    /// An acknowledged delete of the row at `old`.
    Deleted { sku: String, old: UuidToken },
    /// A write whose outcome is unknown: its connection failed after the statement may
    /// have been sent.
    Unknown { sku: String, write: Unknown },
    /// An acknowledged completion: the effect was recorded with this fence.
    Completed {
        item: i32,
        worker: String,
        fence: i64,
    },
    /// An acknowledged booking.
    Booked {
        concert: i32,
        seat_no: i32,
        buyer: String,
    },
    /// An outcome that must not happen (a hostile token accepted, a valid one refused,
    /// a worker that panicked): always a violation.
    Unexpected { what: String },
}

/// A write of an `inventory` row that may or may not have happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// An insert of a new row holding `available` (its token is not known).
    Insert { available: i32 },
    /// A checked update from `old` to `available`; `new` is the token it wrote when the
    /// writer knows it (a save that returned before its transaction's commit failed).
    Update {
        old: UuidToken,
        new: Option<UuidToken>,
        available: i32,
    },
    /// A checked delete of the row at `old`.
    Delete { old: UuidToken },
}

impl Unknown {
    fn old(&self) -> Option<UuidToken> {
        match self {
            Unknown::Insert { .. } => None,
            Unknown::Update { old, .. } | Unknown::Delete { old } => Some(*old),
        }
    }
}

/// Checks the `inventory` rows (`sku -> (available, token)`) against the log; returns
/// the violations and how many unknown-outcome writes the explanations needed (writes
/// that must have happened).
///
/// Every checked write consumes the token it read, so a row's real history is one
/// chain of tokens from its insert to its final state. The check rebuilds that chain:
/// every acknowledged write must be on it, in order; only writes whose outcome is
/// unknown may be on it or not, each at most once; and the row must end where the
/// chain ends, holding the value the last write on it wrote. Two acknowledged writes
/// from one token cannot both be on a chain: a lost update.
pub(crate) fn inventory(
    rows: &BTreeMap<String, (i32, UuidToken)>,
    log: &[Record],
) -> (Vec<String>, usize) {
    let mut violations = Vec::new();
    for (sku, (available, token)) in rows {
        if *available < 0 {
            violations.push(format!("{sku}: stock below zero ({available})"));
        }
        if token.0.is_nil() {
            violations.push(format!("{sku}: nil token"));
        }
    }
    let mut histories: BTreeMap<&str, History> = BTreeMap::new();
    for record in log {
        match record {
            Record::Inserted {
                sku,
                token,
                available,
            } => {
                let h = histories.entry(sku).or_default();
                if h.insert.replace((*token, *available)).is_some() {
                    violations.push(format!("{sku}: inserted twice"));
                }
            }
            Record::Updated {
                sku,
                old,
                new,
                available,
            } => {
                if old == new {
                    violations.push(format!("{sku}: an acknowledged write kept token {old}"));
                }
                let h = histories.entry(sku).or_default();
                h.updates.push((*old, *new, *available));
            }
            Record::Deleted { sku, old } => histories.entry(sku).or_default().deletes.push(*old),
            Record::Unknown { sku, write } => {
                histories.entry(sku).or_default().unknown.push(*write)
            }
            _ => {}
        }
    }
    let mut applied = 0;
    for (sku, history) in &histories {
        let row = rows
            .get(*sku)
            .map(|(available, token)| (*token, *available));
        applied += history.check(sku, row, &mut violations);
    }
    for sku in rows.keys() {
        if !histories.contains_key(sku.as_str()) {
            violations.push(format!("{sku}: a row no write produced"));
        }
    }
    (violations, applied)
}

/// What the log says about one row.
#[derive(Debug, Default)]
struct History {
    /// The acknowledged insert: its token and value.
    insert: Option<(UuidToken, i32)>,
    /// Acknowledged updates: from, to, value.
    updates: Vec<(UuidToken, UuidToken, i32)>,
    /// Acknowledged deletes: the token each was guarded by.
    deletes: Vec<UuidToken>,
    unknown: Vec<Unknown>,
}

/// A run of acknowledged writes: from `start`, following the acknowledged write from
/// each token, to `end` (`None`: an acknowledged delete).
#[derive(Debug)]
struct Segment {
    start: UuidToken,
    end: Option<UuidToken>,
    writes: usize,
}

/// Gives up on a row whose unknown writes allow too many chains to try them all.
const SEARCH_STEPS: u32 = 1_000_000;

/// The search for one chain that explains a row's final state.
struct Search<'h> {
    history: &'h History,
    segments: Vec<Segment>,
    /// The segment that starts at the acknowledged insert.
    root: Option<usize>,
    /// The final state: the row's token and value, or `None` when it is gone.
    row: Option<(UuidToken, i32)>,
    used: Vec<bool>,
    visited: Vec<bool>,
    steps: u32,
    /// Unknown writes on the chain found.
    applied: usize,
}

impl History {
    /// Adds the row's violations; returns how many unknown writes its explanation
    /// needed.
    fn check(
        &self,
        sku: &str,
        row: Option<(UuidToken, i32)>,
        violations: &mut Vec<String>,
    ) -> usize {
        let mut produced: HashMap<UuidToken, i32> = HashMap::new();
        produced.extend(self.insert);
        for (_, new, available) in &self.updates {
            if produced.insert(*new, *available).is_some() {
                violations.push(format!("{sku}: token {new} acknowledged twice"));
            }
        }
        // The next acknowledged write from each token: `Some(new)`, or `None` for a
        // delete. Two from one token are the lost update this soak exists to catch.
        let mut next: HashMap<UuidToken, Option<UuidToken>> = HashMap::new();
        let mut consumed: BTreeMap<UuidToken, usize> = BTreeMap::new();
        let writes = self.updates.iter().map(|(old, new, _)| (*old, Some(*new)));
        for (old, new) in writes.chain(self.deletes.iter().map(|old| (*old, None))) {
            next.insert(old, new);
            *consumed.entry(old).or_default() += 1;
        }
        let mut lost = false;
        for (token, writes) in consumed.iter().filter(|(_, n)| **n > 1) {
            violations.push(format!(
                "{sku}: lost update: {writes} acknowledged writes from token {token}"
            ));
            lost = true;
        }
        if lost {
            // No chain holds both writes; the lost update says it all.
            return 0;
        }
        if let Some((token, available)) = row {
            if let Some(acked) = produced.get(&token).filter(|acked| **acked != available) {
                violations.push(format!(
                    "{sku}: holds {available} at token {token}, acknowledged {acked}"
                ));
            }
            if !self.deletes.is_empty() {
                violations.push(format!("{sku}: deleted row resurrected"));
                return 0;
            }
        }
        let mut search = Search::new(self, &next, &produced, row);
        if search.segments.iter().map(|s| s.writes).sum::<usize>() != next.len() {
            violations.push(format!("{sku}: acknowledged writes form a cycle"));
            return 0;
        }
        if search.explains() {
            return search.applied;
        }
        let state = match row {
            Some((token, available)) => format!("token {token} holding {available}"),
            None => "no row".to_owned(),
        };
        let why = if search.steps > SEARCH_STEPS {
            "is too ambiguous to check against"
        } else {
            "is not explained by"
        };
        let message = format!(
            "{state} {why} its {} acknowledged writes plus at most its {} unknown-outcome \
             writes",
            self.updates.len() + self.deletes.len() + usize::from(self.insert.is_some()),
            self.unknown.len()
        );
        if row.is_none() && self.insert.is_some() && self.deletes.is_empty() {
            violations.push(format!("{sku}: acknowledged row vanished: {message}"));
        } else {
            violations.push(format!("{sku}: {message}"));
        }
        0
    }
}

impl<'h> Search<'h> {
    fn new(
        history: &'h History,
        next: &HashMap<UuidToken, Option<UuidToken>>,
        produced: &HashMap<UuidToken, i32>,
        row: Option<(UuidToken, i32)>,
    ) -> Search<'h> {
        let insert = history.insert.map(|(token, _)| token);
        // A token no acknowledged write produced starts a segment: the insert's, or one
        // an unknown write must have produced (the final token, a token an
        // acknowledged or unknown write started from).
        let mut starts: Vec<UuidToken> = insert.into_iter().collect();
        let mut seen: HashSet<UuidToken> = produced.keys().copied().collect();
        let candidates = next
            .keys()
            .copied()
            .chain(row.map(|(token, _)| token))
            .chain(history.unknown.iter().filter_map(Unknown::old));
        for token in candidates {
            if seen.insert(token) {
                starts.push(token);
            }
        }
        // Determinism: the search order must not depend on hashing.
        starts[usize::from(insert.is_some())..].sort();
        let segments: Vec<Segment> = starts
            .into_iter()
            .map(|start| {
                let (mut end, mut writes) = (Some(start), 0);
                while let Some(&step) = end.and_then(|token| next.get(&token)) {
                    end = step;
                    writes += 1;
                    if writes > next.len() {
                        break;
                    }
                }
                Segment { start, end, writes }
            })
            .collect();
        Search {
            history,
            root: insert.map(|_| 0),
            row,
            used: vec![false; history.unknown.len()],
            visited: vec![false; segments.len()],
            segments,
            steps: 0,
            applied: 0,
        }
    }

    /// Segments that must be on the chain: the insert's and every one holding an
    /// acknowledged write.
    fn mandatory(&self) -> usize {
        (0..self.segments.len())
            .filter(|&i| self.root == Some(i) || self.segments[i].writes > 0)
            .filter(|&i| !self.visited[i])
            .count()
    }

    fn explains(&mut self) -> bool {
        match self.root {
            Some(root) => self.enter(root),
            None => {
                // No acknowledged insert: the row exists only if an unknown insert
                // happened.
                if self.row.is_none() && self.mandatory() == 0 {
                    return true;
                }
                for i in 0..self.history.unknown.len() {
                    if let Unknown::Insert { available } = self.history.unknown[i] {
                        if self.try_unknown(i, None, available) {
                            return true;
                        }
                    }
                }
                false
            }
        }
    }

    /// Whether the chain can go on through segment `at` to the final state.
    fn enter(&mut self, at: usize) -> bool {
        self.steps += 1;
        if self.steps > SEARCH_STEPS {
            return false;
        }
        self.visited[at] = true;
        let found = self.from(at);
        self.visited[at] = false;
        found
    }

    fn from(&mut self, at: usize) -> bool {
        let left = self.mandatory();
        let Some(end) = self.segments[at].end else {
            return self.row.is_none() && left == 0;
        };
        match self.row {
            // The row's token ends the chain: nothing wrote after it.
            Some((token, _)) if token == end => return left == 0,
            None if left == 0 => {
                let deleted = self
                    .history
                    .unknown
                    .iter()
                    .enumerate()
                    .any(|(i, write)| !self.used[i] && *write == Unknown::Delete { old: end });
                if deleted {
                    self.applied += 1;
                    return true;
                }
            }
            _ => {}
        }
        for i in 0..self.history.unknown.len() {
            if let Unknown::Update {
                old,
                new,
                available,
            } = self.history.unknown[i]
            {
                if old == end && !self.used[i] && self.try_unknown(i, new, available) {
                    return true;
                }
            }
        }
        false
    }

    /// Whether unknown write `i`, having happened and written `new` (when known) and
    /// `available`, leads on to the final state.
    fn try_unknown(&mut self, i: usize, new: Option<UuidToken>, available: i32) -> bool {
        self.used[i] = true;
        let mut found = false;
        for to in 0..self.segments.len() {
            let segment = &self.segments[to];
            if self.visited[to] || self.root == Some(to) {
                continue;
            }
            if new.is_some_and(|new| new != segment.start) {
                continue;
            }
            // A final token this write produced must hold what it wrote.
            if segment.writes == 0
                && self
                    .row
                    .is_some_and(|(token, held)| token == segment.start && held != available)
            {
                continue;
            }
            if self.enter(to) {
                self.applied += 1;
                found = true;
                break;
            }
        }
        self.used[i] = false;
        found
    }
}

/// What a run proves too little by: fewer acknowledged writes or injected faults than
/// required. Empty when it proves enough.
pub(crate) fn evidence(
    acknowledged: u64,
    min_acknowledged: u64,
    faults: u64,
    min_faults: u64,
) -> Vec<String> {
    let mut shortfalls = Vec::new();
    if acknowledged < min_acknowledged {
        shortfalls.push(format!(
            "{acknowledged} acknowledged writes (at least {min_acknowledged} required)"
        ));
    }
    if faults < min_faults {
        shortfalls.push(format!(
            "{faults} faults injected (at least {min_faults} required)"
        ));
    }
    shortfalls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u128) -> UuidToken {
        UuidToken(uuid::Uuid::from_u128(n))
    }

    fn inserted(token: u128, available: i32) -> Record {
        Record::Inserted {
            sku: "a".into(),
            token: t(token),
            available,
        }
    }

    fn updated(old: u128, new: u128, available: i32) -> Record {
        Record::Updated {
            sku: "a".into(),
            old: t(old),
            new: t(new),
            available,
        }
    }

    fn deleted(old: u128) -> Record {
        Record::Deleted {
            sku: "a".into(),
            old: t(old),
        }
    }

    fn unknown(write: Unknown) -> Record {
        Record::Unknown {
            sku: "a".into(),
            write,
        }
    }

    fn unknown_update(old: u128, available: i32) -> Record {
        unknown(Unknown::Update {
            old: t(old),
            new: None,
            available,
        })
    }

    /// The check of one row `a`, present at `row` (token, available) or absent.
    fn check(row: Option<(u128, i32)>, log: &[Record]) -> Vec<String> {
        let rows = row
            .map(|(token, available)| ("a".to_owned(), (available, t(token))))
            .into_iter()
            .collect();
        inventory(&rows, log).0
    }

    #[track_caller]
    fn assert_passes(row: Option<(u128, i32)>, log: &[Record]) {
        let violations = check(row, log);
        assert!(
            violations.is_empty(),
            "unexpected violations: {violations:#?}"
        );
    }

    #[track_caller]
    fn assert_fails(row: Option<(u128, i32)>, log: &[Record], expected: &str) {
        let violations = check(row, log);
        assert!(
            violations.iter().any(|v| v.contains(expected)),
            "expected a violation containing {expected:?}, got {violations:#?}"
        );
    }

    #[test]
    fn an_acknowledged_chain_ending_at_the_row_passes() {
        let log = [inserted(1, 10), updated(1, 2, 8), updated(2, 3, 5)];
        assert_passes(Some((3, 5)), &log);
    }

    #[test]
    fn two_acknowledged_writes_from_one_token_are_a_lost_update() {
        // What a writer without the token in its predicate leaves behind.
        let log = [inserted(1, 10), updated(1, 2, 8), updated(1, 3, 9)];
        assert_fails(
            Some((3, 9)),
            &log,
            "lost update: 2 acknowledged writes from token",
        );
    }

    #[test]
    fn a_row_behind_its_acknowledged_history_fails_even_with_unknown_writes() {
        // The write 2 -> 3 was acknowledged, yet the row holds 2: an unknown write
        // from 3 cannot take the row back to a token it already left.
        let log = [
            inserted(1, 10),
            updated(1, 2, 8),
            updated(2, 3, 5),
            unknown_update(3, 4),
        ];
        assert_fails(Some((2, 8)), &log, "not explained");
    }

    #[test]
    fn an_acknowledged_value_that_the_row_does_not_hold_fails() {
        let log = [inserted(1, 10), updated(1, 2, 8)];
        assert_fails(Some((2, 7)), &log, "holds 7 at token");
    }

    #[test]
    fn an_unknown_write_explains_a_token_nothing_acknowledged() {
        let log = [inserted(1, 10), updated(1, 2, 8), unknown_update(2, 6)];
        assert_passes(Some((99, 6)), &log);
        // ... or it did not happen.
        assert_passes(Some((2, 8)), &log);
    }

    #[test]
    fn an_unknown_write_does_not_explain_a_value_it_did_not_write() {
        let log = [inserted(1, 10), updated(1, 2, 8), unknown_update(2, 6)];
        assert_fails(Some((99, 5)), &log, "not explained");
    }

    #[test]
    fn an_unknown_write_with_a_known_token_explains_only_that_token() {
        // A save that returned inside a transaction whose commit then failed.
        let write = Unknown::Update {
            old: t(2),
            new: Some(t(3)),
            available: 6,
        };
        let log = [inserted(1, 10), updated(1, 2, 8), unknown(write)];
        assert_passes(Some((3, 6)), &log);
        assert_fails(Some((99, 6)), &log, "not explained");
    }

    #[test]
    fn acknowledged_writes_after_an_unknown_one_continue_from_its_token() {
        // The unknown write 2 -> 50 committed; a writer then read 50 and wrote 51.
        let log = [
            inserted(1, 10),
            updated(1, 2, 8),
            unknown_update(2, 6),
            updated(50, 51, 4),
        ];
        assert_passes(Some((51, 4)), &log);
    }

    #[test]
    fn one_unknown_write_explains_at_most_one_write() {
        // 2 -> 50 and 51 -> 99 both need a write nobody acknowledged; one is logged.
        let mut log = vec![
            inserted(1, 10),
            updated(1, 2, 8),
            unknown_update(2, 6),
            updated(50, 51, 4),
        ];
        assert_fails(Some((99, 3)), &log, "not explained");
        log.push(unknown_update(51, 3));
        assert_passes(Some((99, 3)), &log);
    }

    #[test]
    fn an_unknown_write_cannot_explain_two_acknowledged_segments_alone() {
        // Two runs of acknowledged writes that neither start from the row's history
        // nor are joined by an unknown write each.
        let log = [
            inserted(1, 10),
            unknown_update(1, 6),
            updated(50, 51, 4),
            updated(60, 61, 2),
        ];
        assert_fails(Some((61, 2)), &log, "not explained");
    }

    #[test]
    fn an_unknown_update_does_not_explain_a_vanished_row() {
        let log = [inserted(1, 10), updated(1, 2, 8), unknown_update(2, 6)];
        assert_fails(None, &log, "vanished");
    }

    #[test]
    fn an_unknown_delete_explains_a_vanished_row() {
        let log = [
            inserted(1, 10),
            updated(1, 2, 8),
            unknown(Unknown::Delete { old: t(2) }),
        ];
        assert_passes(None, &log);
        assert_passes(Some((2, 8)), &log);
    }

    #[test]
    fn an_unknown_delete_from_a_token_the_row_left_explains_nothing() {
        let log = [
            inserted(1, 10),
            updated(1, 2, 8),
            unknown(Unknown::Delete { old: t(1) }),
        ];
        assert_fails(None, &log, "vanished");
    }

    #[test]
    fn an_acknowledged_delete_ends_the_history() {
        let log = [inserted(1, 10), updated(1, 2, 8), deleted(2)];
        assert_passes(None, &log);
        assert_fails(Some((2, 8)), &log, "resurrected");
    }

    #[test]
    fn an_unknown_insert_explains_a_row_with_its_value_or_no_row() {
        let log = [unknown(Unknown::Insert { available: 7 })];
        assert_passes(Some((5, 7)), &log);
        assert_passes(None, &log);
        assert_fails(Some((5, 8)), &log, "not explained");
    }

    #[test]
    fn a_run_with_too_few_writes_or_no_fault_proves_too_little() {
        assert!(evidence(500, 200, 3, 1).is_empty());
        assert_eq!(
            evidence(199, 200, 3, 1),
            ["199 acknowledged writes (at least 200 required)"]
        );
        assert_eq!(
            evidence(500, 200, 0, 1),
            ["0 faults injected (at least 1 required)"]
        );
        assert_eq!(evidence(0, 200, 0, 1).len(), 2);
        // Both minimums can be waived on purpose.
        assert!(evidence(0, 0, 0, 0).is_empty());
    }

    #[test]
    fn a_row_nothing_wrote_fails() {
        assert_fails(Some((5, 7)), &[], "a row no write produced");
    }
}
