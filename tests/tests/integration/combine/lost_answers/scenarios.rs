//! The combiners on a connection lost mid-group: the first caller's change holds its
//! group on a gate until the three that form the second group, and place the fault, wait.

flavour_prelude!();

use std::sync::Arc;
use std::sync::mpsc;

use diesel_occ::Error;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::{Relay, wait};

#[flavour(asynchronous)]
use crate::combine::asynchronous::{source, until_running};
#[flavour(blocking)]
use crate::combine::blocking::{source, until_running};
use crate::combine::{gated, increment};

#[flavour]
async fn seed(db: &TestDb<Conn>) {
    let insert = "INSERT INTO counters (id, value, version) VALUES (1, 0, 1)";
    raw_sql(db, insert).await;
}

#[flavour]
async fn row(db: &TestDb<Conn>) -> (i32, i32) {
    let mut conn = db.conn().await;
    let counter = Counter::find(&mut conn, 1).await.expect("the row");
    (counter.value, counter.version)
}

/// A change the combiner runs.
type Change = Box<dyn FnMut(&mut Counter) -> i32 + Send>;

/// Writes two groups through `relay`: the first caller's increment alone, then three
/// increments as one group, each running `fault` on its first run (before the group's
/// save). Returns the first caller's result and the three others'. Each caller has a
/// thread or task of its own (the async runtime has a second worker for the test).
#[flavour]
async fn two_groups(
    db: &TestDb<Conn>,
    relay: &Arc<Relay>,
    policy: &RetryPolicy,
    fault: fn(&Relay),
) -> (Result<i32, Error>, Vec<Result<i32, Error>>) {
    let source = source::<Conn>(&relay.url(db.url()));
    let combiner = Arc::new(Combiner::<Counter>::new());
    let apply = |change: Change| {
        let (combiner, source, policy) = (Arc::clone(&combiner), source.clone(), policy.clone());
        spawn(move || async move { combiner.apply(&source, &policy, 1, change).await })
    };
    let (running_tx, running) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    let first = apply(Box::new(gated(running_tx, go_rx, increment)));
    until_running(running).await;
    let rest: Vec<_> = (0..3)
        .map(|_| {
            let relay = Arc::clone(relay);
            let mut first_run = true;
            apply(Box::new(move |counter| {
                if std::mem::take(&mut first_run) {
                    fault(&relay);
                }
                increment(counter)
            }))
        })
        .collect();
    let queued = async || combiner.waiting(&1) == 3;
    wait_until("3 changes to row 1 to wait", wait::TIMEOUT, queued).await;
    go.send(()).unwrap();
    let first = joined(first).await.unwrap();
    let mut results = Vec::new();
    for caller in rest {
        results.push(joined(caller).await.unwrap());
    }
    (first, results)
}

fn assert_unknown(results: &[Result<i32, Error>]) {
    for result in results {
        let unknown = matches!(result, Err(Error::OutcomeUnknown));
        assert!(unknown, "possibly saved, so unknown: {results:?}");
    }
}

/// The second group's save runs in a transaction (an escalated policy); the server
/// commits it, and the answer to the COMMIT is lost with the connection. The three
/// units are in the row once, and no caller is told `Ok` or runs its change again.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_group_whose_commit_answer_is_lost_is_unknown_to_every_caller_and_never_rerun() {
    let db = db!();
    seed(&db).await;
    let relay = Arc::new(Relay::to(db.url()));
    let policy = RetryPolicy::new().max_attempts(5).escalate_after(0);
    let (first, rest) = two_groups(&db, &relay, &policy, |relay| {
        relay.lose_reply_to("COMMIT");
    })
    .await;
    assert_eq!(first.expect("the first group"), 1);
    assert_eq!(relay.replies_lost(), 1, "the fault was placed");
    // The first group and the committed second group, once.
    assert_eq!(row(&db).await, (4, 3));
    assert_unknown(&rest);
}

/// The second group's connection is lost before its save (autocommit): the helper cannot
/// tell whether the UPDATE reached the server, so every caller is told the outcome is
/// unknown and nothing is run again; the row holds the first group only.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_group_whose_connection_is_lost_at_the_save_is_unknown_to_every_caller_and_never_rerun() {
    let db = db!();
    seed(&db).await;
    let relay = Arc::new(Relay::to(db.url()));
    let policy = RetryPolicy::new().max_attempts(5);
    let (first, rest) = two_groups(&db, &relay, &policy, Relay::cut_all).await;
    assert_eq!(first.expect("the first group"), 1);
    // Nothing of the second group reached the server.
    assert_eq!(row(&db).await, (1, 2));
    assert_unknown(&rest);
}
