//! The race harness without a database: the barrier, the write order, caught panics
//! and the report's helpers, blocking and asynchronous.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Phase, Race, RaceReport, WriterError};
use crate::error::{ConcurrencyConflict, ConflictState, EntityKey, Error, NotFound, Operation};
use crate::token::TokenValue;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Yields until `counter` reaches `target`, up to a bound: whether it got there. Only
/// futures polled concurrently can all reach it.
async fn meet(counter: &AtomicUsize, target: usize) -> bool {
    for _ in 0..1_000 {
        if counter.load(Ordering::SeqCst) >= target {
            return true;
        }
        tokio::task::yield_now().await;
    }
    false
}

fn conflict(current: i64) -> Error {
    Error::Conflict(ConcurrencyConflict::new(
        "concerts",
        EntityKey::new(&["id"], vec!["1".into()]),
        Operation::Update,
        TokenValue::Integer(1),
        ConflictState::Stale {
            current: TokenValue::Integer(current),
        },
    ))
}

#[test]
fn every_writer_reads_before_any_writes() {
    let reads = AtomicUsize::new(0);
    let report = Race::new(4).run(
        |_| reads.fetch_add(1, Ordering::SeqCst),
        |writer, _| (writer, reads.load(Ordering::SeqCst)),
    );
    assert_eq!(
        report.into_values().unwrap(),
        [(0, 4), (1, 4), (2, 4), (3, 4)],
        "each write saw all four reads, and the outcomes are in writer order"
    );
}

#[test]
fn in_order_writes_one_at_a_time_in_writer_order() {
    let log = Mutex::new(Vec::new());
    let report = Race::new(4).in_order().run(
        |writer| log.lock().unwrap().push(("read", writer)),
        |writer, ()| log.lock().unwrap().push(("write", writer)),
    );
    assert!(report.failures().next().is_none(), "{report:?}");
    let log = log.into_inner().unwrap();
    assert!(
        log[..4].iter().all(|(phase, _)| *phase == "read"),
        "{log:?}"
    );
    assert_eq!(
        log[4..],
        [("write", 0), ("write", 1), ("write", 2), ("write", 3)]
    );
}

#[test]
fn a_panic_while_writing_is_that_writer_outcome() {
    let report = Race::new(3).run(
        |writer| writer,
        |writer, read| {
            assert_ne!(writer, 1, "writer 1 fails");
            read
        },
    );
    assert_eq!(report.outcome(0), Some(&Ok(0)));
    assert_eq!(report.outcome(2), Some(&Ok(2)));
    let Some(Err(WriterError::Panicked {
        writer: 1,
        phase: Phase::Write,
        message,
    })) = report.outcome(1)
    else {
        panic!("expected writer 1 to have panicked while writing: {report:?}");
    };
    assert!(message.contains("writer 1 fails"), "{message}");
    assert_eq!(
        report.into_values().unwrap_err().writer(),
        1,
        "the first failure"
    );
}

#[test]
fn a_panic_in_order_still_passes_the_turn() {
    let report = Race::new(3).in_order().run(
        |_| (),
        |writer, ()| {
            assert_ne!(writer, 0, "writer 0 fails");
            writer
        },
    );
    assert!(matches!(
        report.outcome(0),
        Some(Err(WriterError::Panicked { writer: 0, .. }))
    ));
    assert_eq!(report.outcomes()[1..], [Ok(1), Ok(2)]);
}

#[test]
fn a_panic_while_reading_abandons_the_race_instead_of_hanging() {
    let writes = AtomicUsize::new(0);
    let report = Race::new(3).run(
        |writer| assert_ne!(writer, 2, "writer 2 cannot read"),
        |_, ()| writes.fetch_add(1, Ordering::SeqCst),
    );
    assert_eq!(writes.load(Ordering::SeqCst), 0, "nobody wrote");
    let outcomes = report.into_outcomes();
    assert_eq!(
        outcomes[..2],
        [
            Err(WriterError::Abandoned { writer: 0, by: 2 }),
            Err(WriterError::Abandoned { writer: 1, by: 2 }),
        ]
    );
    assert!(matches!(
        &outcomes[2],
        Err(WriterError::Panicked { writer: 2, phase: Phase::Read, message })
            if message.contains("writer 2 cannot read")
    ));
}

#[test]
fn no_writers_is_an_empty_report() {
    let report = Race::new(0).run(|_| (), |_, ()| ());
    assert_eq!(report.writers(), 0);
    assert!(report.into_values().unwrap().is_empty());
}

#[test]
fn winners_losers_and_conflicts() {
    let report: RaceReport<Result<&str, Error>> = RaceReport {
        outcomes: vec![
            Ok(Err(conflict(2))),
            Ok(Ok("seat")),
            Ok(Err(Error::NotFound(NotFound {
                table: "concerts",
                key: EntityKey::new(&["id"], vec!["1".into()]),
            }))),
            Err(WriterError::Abandoned { writer: 3, by: 9 }),
        ],
    };
    assert_eq!(report.winners().collect::<Vec<_>>(), [(1, &"seat")]);
    assert_eq!(
        report
            .losers()
            .map(|(writer, _)| writer)
            .collect::<Vec<_>>(),
        [0, 2]
    );
    let conflicts: Vec<_> = report.conflicts().collect();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].0, 0);
    assert_eq!(conflicts[0].1.current::<i32>(), Some(2));
    assert_eq!(
        report
            .failures()
            .map(WriterError::writer)
            .collect::<Vec<_>>(),
        [3]
    );
}

#[test]
fn writer_errors_say_who_and_when() {
    let panicked = WriterError::Panicked {
        writer: 1,
        phase: Phase::Read,
        message: "boom".into(),
    };
    assert_eq!(
        panicked.to_string(),
        "writer 1 panicked while reading: boom"
    );
    assert_eq!(
        WriterError::Abandoned { writer: 0, by: 1 }.to_string(),
        "writer 0 did not write: writer 1 failed before the barrier"
    );
}

#[test]
fn asynchronous_reads_meet_before_writes_and_writes_overlap() {
    let (reads, writes) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let report = runtime().block_on(Race::new(3).run_asynchronous(
        async |_| {
            reads.fetch_add(1, Ordering::SeqCst);
            meet(&reads, 3).await
        },
        async |writer, all_read| {
            let before = reads.load(Ordering::SeqCst);
            writes.fetch_add(1, Ordering::SeqCst);
            (writer, all_read, before, meet(&writes, 3).await)
        },
    ));
    assert_eq!(
        report.into_values().unwrap(),
        [(0, true, 3, true), (1, true, 3, true), (2, true, 3, true)],
        "the reads ran together and finished before any write; the writes ran together"
    );
}

#[test]
fn asynchronous_in_order_writes_one_at_a_time() {
    let writes = AtomicUsize::new(0);
    let report = runtime().block_on(Race::new(3).in_order().run_asynchronous(
        async |_| (),
        async |writer, ()| {
            let turn = writes.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            (writer, turn, writes.load(Ordering::SeqCst))
        },
    ));
    assert_eq!(
        report.into_values().unwrap(),
        [(0, 0, 1), (1, 1, 2), (2, 2, 3)],
        "each write finished before the next began"
    );
}

#[test]
fn asynchronous_panics_are_outcomes() {
    let report = runtime().block_on(Race::new(2).run_asynchronous(
        async |_| (),
        async |writer, ()| {
            tokio::task::yield_now().await;
            assert_ne!(writer, 0, "writer 0 fails after a yield");
            writer
        },
    ));
    assert!(matches!(
        report.outcome(0),
        Some(Err(WriterError::Panicked { writer: 0, phase: Phase::Write, message }))
            if message.contains("after a yield")
    ));
    assert_eq!(report.outcome(1), Some(&Ok(1)));

    let writes = AtomicUsize::new(0);
    let report = runtime().block_on(Race::new(2).run_asynchronous(
        async |writer| {
            tokio::task::yield_now().await;
            assert_ne!(writer, 1, "writer 1 cannot read");
        },
        async |_, ()| writes.fetch_add(1, Ordering::SeqCst),
    ));
    assert_eq!(writes.load(Ordering::SeqCst), 0, "nobody wrote");
    assert_eq!(
        report.outcome(0),
        Some(&Err(WriterError::Abandoned { writer: 0, by: 1 }))
    );
}

#[test]
fn asynchronous_race_of_closures_returning_futures() {
    // Plain closures that return futures work as well as async closures.
    let report = runtime().block_on(Race::new(2).run_asynchronous(
        |writer| async move { writer * 10 },
        |writer, read| async move { read + writer },
    ));
    assert_eq!(report.into_values().unwrap(), [0, 11]);
}

#[test]
fn an_asynchronous_race_of_send_writers_is_send() {
    // So a test may spawn it (`tokio::spawn`) when its writers are `Send`.
    fn assert_send<F: std::future::Future + Send>(future: F) -> F {
        future
    }
    let race = Race::new(2);
    let report = runtime().block_on(assert_send(
        race.run_asynchronous(async |writer| writer, async |_, read| read),
    ));
    assert_eq!(report.into_values().unwrap(), [0, 1]);
}
