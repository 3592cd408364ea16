//! The check on small synthetic histories.

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
