//! The blocking combiner on a connection lost mid-group. The first caller's change
//! holds its group open on a gate until three more changes are queued; those three form
//! the second group, and the fault is placed by their own first runs.

use std::sync::{Arc, mpsc};
use std::thread;

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::blocking::Combiner;
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::{Relay, TestDb, wait, wait_until};

use super::{Conn, schema};

fn seed(db: &TestDb<Conn>) {
    diesel::insert_into(schema::counters::table)
        .values(Counter {
            id: 1,
            value: 0,
            label: None,
            version: 1,
        })
        .execute(&mut db.conn())
        .expect("seed");
}

fn row(db: &TestDb<Conn>) -> (i32, i32) {
    let counter = Counter::find(&mut db.conn(), 1).expect("the row");
    (counter.value, counter.version)
}

fn increment(counter: &mut Counter) -> i32 {
    counter.value += 1;
    counter.value
}

/// Writes two groups through `relay`: the first caller's increment alone, then three
/// increments as one group, each of which runs `fault` on its first run (before the
/// group's save). Returns the first caller's result and the three others'.
fn two_groups(
    db: &TestDb<Conn>,
    relay: &Arc<Relay>,
    policy: &RetryPolicy,
    fault: fn(&Relay),
) -> (Result<i32, Error>, Vec<Result<i32, Error>>) {
    let url = relay.url(db.url());
    let source = || Conn::establish(&url);
    let combiner = Combiner::<Counter>::new();
    let (combiner, source) = (&combiner, &source);
    thread::scope(|scope| {
        let (running_tx, running) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let first = scope.spawn(move || {
            let mut gate = Some((running_tx, go_rx));
            combiner.apply(source, policy, 1, move |counter: &mut Counter| {
                if let Some((running, go)) = gate.take() {
                    running.send(()).unwrap();
                    go.recv().unwrap();
                }
                increment(counter)
            })
        });
        running.recv().expect("the first change runs");
        let rest: Vec<_> = (0..3)
            .map(|_| {
                let relay = Arc::clone(relay);
                scope.spawn(move || {
                    let mut first_run = true;
                    combiner.apply(source, policy, 1, move |counter: &mut Counter| {
                        if std::mem::take(&mut first_run) {
                            fault(&relay);
                        }
                        increment(counter)
                    })
                })
            })
            .collect();
        wait_until("3 changes to row 1 to wait", wait::TIMEOUT, || {
            combiner.waiting(&1) >= 3
        });
        go.send(()).unwrap();
        let first = first.join().unwrap();
        (first, rest.into_iter().map(|t| t.join().unwrap()).collect())
    })
}

fn assert_unknown(results: &[Result<i32, Error>]) {
    for result in results {
        assert!(
            matches!(result, Err(Error::OutcomeUnknown)),
            "a change that may be in the row is reported as unknown, never run again: \
             {results:?}"
        );
    }
}

/// The second group's save runs in a transaction (an escalated policy); the server
/// commits it, and the answer to the COMMIT is lost with the connection. The three
/// units are in the row once, and no caller is told `Ok` or runs its change again.
#[test]
fn a_group_whose_commit_answer_is_lost_is_unknown_to_every_caller_and_never_rerun() {
    let db = test_db!();
    seed(&db);
    let relay = Arc::new(Relay::to(db.url()));
    let policy = RetryPolicy::new().max_attempts(5).escalate_after(0);
    let (first, rest) = two_groups(&db, &relay, &policy, |relay| {
        relay.lose_reply_to("COMMIT");
    });
    assert_eq!(first.expect("the first group"), 1);
    assert_eq!(relay.replies_lost(), 1, "the fault was placed");
    assert_eq!(
        row(&db),
        (4, 3),
        "the first group and the committed second group, once"
    );
    assert_unknown(&rest);
}

/// The second group's connection is lost before its save (autocommit): the helper cannot
/// tell whether the UPDATE reached the server, so every caller is told the outcome is
/// unknown and nothing is run again; the row holds the first group only.
#[test]
fn a_group_whose_connection_is_lost_at_the_save_is_unknown_to_every_caller_and_never_rerun() {
    let db = test_db!();
    seed(&db);
    let relay = Arc::new(Relay::to(db.url()));
    let policy = RetryPolicy::new().max_attempts(5);
    let (first, rest) = two_groups(&db, &relay, &policy, Relay::cut_all);
    assert_eq!(first.expect("the first group"), 1);
    assert_eq!(
        row(&db),
        (1, 2),
        "nothing of the second group reached the server"
    );
    assert_unknown(&rest);
}
