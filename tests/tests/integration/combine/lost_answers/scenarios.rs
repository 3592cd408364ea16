//! The combiners on a connection lost mid-group, in both flavours. The first caller's
//! change holds its group open on a gate until three more changes are queued; those
//! three form the second group, and the fault is placed by their own first runs.

flavour_prelude!();

use std::sync::Arc;

use diesel_occ::Error;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::{Relay, wait};

use super::schema;

#[flavour]
async fn seed(db: &TestDb<Conn>) {
    diesel::insert_into(schema::counters::table)
        .values(Counter::new(1, 0))
        .execute(&mut db.conn().await)
        .await
        .expect("seed");
}

#[flavour]
async fn row(db: &TestDb<Conn>) -> (i32, i32) {
    let counter = Counter::find(&mut db.conn().await, 1)
        .await
        .expect("the row");
    (counter.value, counter.version)
}

fn increment(counter: &mut Counter) -> i32 {
    counter.value += 1;
    counter.value
}

/// The first change's gate: it tells the test it runs, then waits for the go.
type Gate = (std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>);

/// Writes two groups through `relay`: the first caller's increment alone, then three
/// increments as one group, each of which runs `fault` on its first run (before the
/// group's save). Returns the first caller's result and the three others'.
#[flavour(blocking)]
fn two_groups(
    db: &TestDb<Conn>,
    relay: &Arc<Relay>,
    policy: &RetryPolicy,
    fault: fn(&Relay),
) -> (Result<i32, Error>, Vec<Result<i32, Error>>) {
    use diesel_occ::blocking::Combiner;
    use std::sync::mpsc;

    let url = relay.url(db.url());
    let source = || Conn::establish(&url);
    let combiner = Combiner::<Counter>::new();
    let (combiner, source) = (&combiner, &source);
    std::thread::scope(|scope| {
        let (running_tx, running) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let first = scope.spawn(move || {
            let mut gate: Option<Gate> = Some((running_tx, go_rx));
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

/// [`two_groups`] on tasks: the first change holds its writer task on the gate (the
/// runtime has a second worker for the test).
#[flavour(asynchronous)]
async fn two_groups(
    db: &TestDb<Conn>,
    relay: &Arc<Relay>,
    policy: &RetryPolicy,
    fault: fn(&Relay),
) -> (Result<i32, Error>, Vec<Result<i32, Error>>) {
    use diesel_occ::asynchronous::Combiner;
    use std::sync::{Mutex, mpsc};

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
    let gate: Mutex<Option<Gate>> = Mutex::new(Some((running_tx, go_rx)));
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
    wait_until("3 changes to row 1 to wait", wait::TIMEOUT, async || {
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

/// The second group's save runs in a transaction (an escalated policy); the server
/// commits it, and the answer to the COMMIT is lost with the connection. The three
/// units are in the row once, and no caller is told `Ok` or runs its change again.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
    assert_eq!(
        row(&db).await,
        (4, 3),
        "the first group and the committed second group, once"
    );
    assert_unknown(&rest);
}

/// The second group's connection is lost before its save (autocommit): the helper cannot
/// tell whether the UPDATE reached the server, so every caller is told the outcome is
/// unknown and nothing is run again; the row holds the first group only.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_connection_is_lost_at_the_save_is_unknown_to_every_caller_and_never_rerun() {
    let db = db!();
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
