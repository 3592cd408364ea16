//! The async combiner on a connection lost mid-group, with the groups formed as in
//! `blocking.rs`: the first change holds the writer task on a gate (the runtime has a
//! second worker for the test) until three more changes are queued.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::Combiner;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::{AsyncTestDb, Relay, wait, wait_until_async};

use super::{AsyncConn as Conn, schema};

async fn seed(db: &AsyncTestDb<Conn>) {
    diesel::insert_into(schema::counters::table)
        .values(Counter {
            id: 1,
            value: 0,
            label: None,
            version: 1,
        })
        .execute(&mut db.conn().await)
        .await
        .expect("seed");
}

async fn row(db: &AsyncTestDb<Conn>) -> (i32, i32) {
    let counter = Counter::find(&mut db.conn().await, 1)
        .await
        .expect("the row");
    (counter.value, counter.version)
}

fn increment(counter: &mut Counter) -> i32 {
    counter.value += 1;
    counter.value
}

/// Writes two groups through `relay`, as the blocking `two_groups` does.
async fn two_groups(
    db: &AsyncTestDb<Conn>,
    relay: &Arc<Relay>,
    policy: &RetryPolicy,
    fault: fn(&Relay),
) -> (Result<i32, Error>, Vec<Result<i32, Error>>) {
    let url = relay.url(db.url());
    let source = move || {
        let url = url.clone();
        Box::pin(async move { diesel_occ_tests::connect_async::<Conn>(&url).await })
            as std::pin::Pin<Box<dyn Future<Output = diesel::ConnectionResult<Conn>> + Send>>
    };
    let combiner = Arc::new(Combiner::<Counter>::new());
    let apply = |change: Box<dyn FnMut(&mut Counter) -> i32 + Send>| {
        let (combiner, source, policy) = (Arc::clone(&combiner), source.clone(), policy.clone());
        tokio::spawn(async move { combiner.apply(&source, &policy, 1, change).await })
    };
    let (running_tx, running) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    let gate = Mutex::new(Some((running_tx, go_rx)));
    let first = apply(Box::new(move |counter| {
        if let Some((running, go)) = gate.lock().unwrap().take() {
            running.send(()).unwrap();
            go.recv().unwrap();
        }
        increment(counter)
    }));
    tokio::task::spawn_blocking(move || running.recv().expect("the first change runs"))
        .await
        .unwrap();
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
    wait_until_async("3 changes to row 1 to wait", wait::TIMEOUT, async || {
        combiner.waiting(&1) == 3
    })
    .await;
    go.send(()).unwrap();
    let first = first.await.unwrap();
    let mut results = Vec::new();
    for caller in rest {
        results.push(caller.await.unwrap());
    }
    (first, results)
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

/// The second group's COMMIT runs on the server and its answer is lost: the three
/// units are in the row once, and no caller is told `Ok` or runs its change again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_commit_answer_is_lost_is_unknown_to_every_caller_and_never_rerun() {
    let db = async_test_db!();
    seed(&db).await;
    let relay = Arc::new(Relay::to(db.url()));
    let policy = RetryPolicy::new().max_attempts(5).escalate_after(0);
    let (first, rest) = two_groups(&db, &relay, &policy, |relay| {
        relay.lose_reply_to("COMMIT");
    })
    .await;
    assert_eq!(first.expect("the first group"), 1);
    assert_eq!(relay.replies_lost(), 1, "the fault was placed");
    assert_eq!(
        row(&db).await,
        (4, 3),
        "the first group and the committed second group, once"
    );
    assert_unknown(&rest);
}

/// The second group's connection is lost before its save (autocommit): every caller is
/// told the outcome is unknown and nothing is run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_connection_is_lost_at_the_save_is_unknown_to_every_caller_and_never_rerun() {
    let db = async_test_db!();
    seed(&db).await;
    let relay = Arc::new(Relay::to(db.url()));
    let policy = RetryPolicy::new().max_attempts(5);
    let (first, rest) = two_groups(&db, &relay, &policy, Relay::cut_all).await;
    assert_eq!(first.expect("the first group"), 1);
    assert_eq!(
        row(&db).await,
        (1, 2),
        "nothing of the second group reached the server"
    );
    assert_unknown(&rest);
}
