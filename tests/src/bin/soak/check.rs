//! The check of the `inventory` rows against the independent log: pure logic,
//! unit-tested on small synthetic histories.

use std::collections::{BTreeMap, HashMap, HashSet};

use diesel_occ::UuidToken;

use crate::record::{Record, Unknown};

pub(crate) mod counters;

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
        let produced = self.produced(sku, violations);
        let Some(next) = self.next_writes(sku, violations) else {
            // No chain holds both writes; the lost update says it all.
            return 0;
        };
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
        violations.push(self.unexplained(sku, row, search.steps));
        0
    }

    /// The value each acknowledged token was written with.
    fn produced(&self, sku: &str, violations: &mut Vec<String>) -> HashMap<UuidToken, i32> {
        let mut produced: HashMap<UuidToken, i32> = HashMap::new();
        produced.extend(self.insert);
        for (_, new, available) in &self.updates {
            if produced.insert(*new, *available).is_some() {
                violations.push(format!("{sku}: token {new} acknowledged twice"));
            }
        }
        produced
    }

    /// The next acknowledged write from each token: `Some(new)`, or `None` for a
    /// delete. Two from one token are the lost update this soak exists to catch:
    /// reported, and then there is no chain to search (`None`).
    fn next_writes(
        &self,
        sku: &str,
        violations: &mut Vec<String>,
    ) -> Option<HashMap<UuidToken, Option<UuidToken>>> {
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
        (!lost).then_some(next)
    }

    /// The violation for a final state that no chain of the row's writes explains.
    fn unexplained(&self, sku: &str, row: Option<(UuidToken, i32)>, steps: u32) -> String {
        let state = match row {
            Some((token, available)) => format!("token {token} holding {available}"),
            None => "no row".to_owned(),
        };
        let why = if steps > SEARCH_STEPS {
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
            format!("{sku}: acknowledged row vanished: {message}")
        } else {
            format!("{sku}: {message}")
        }
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
                    if let Unknown::Insert { available } = self.history.unknown[i]
                        && self.try_unknown(i, None, available)
                    {
                        return true;
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
                && old == end
                && !self.used[i]
                && self.try_unknown(i, new, available)
            {
                return true;
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
mod tests;
