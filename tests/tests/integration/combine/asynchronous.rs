//! The async combiner on a real database, its groups formed by force as in
//! `blocking.rs`: the first change holds the writer task inside its group on a gate
//! (the runtime has a second worker for the test) until the others are seen queued.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use diesel::{ExpressionMethods, Insertable, QueryDsl, Queryable, Selectable};
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::{Error, UuidToken};
use diesel_occ::asynchronous::Combiner;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::{AsyncTestDb, wait, wait_until_async};
use tokio::task::JoinHandle;

use super::counters::{Counter, load, seed};
use super::{AsyncConn as Conn, schema};

/// A source that connects per attempt, as the combiner's writer task needs: `Clone`
/// and `'static`.
fn source(
    db: &AsyncTestDb<Conn>,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = diesel::ConnectionResult<Conn>> + Send>>
+ Clone
+ Send
+ Sync
+ 'static {
    let url = db.url().to_owned();
    move || {
        let url = url.clone();
        Box::pin(async move { diesel_occ_tests::connect_async::<Conn>(&url).await })
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy::new().max_attempts(5)
}

fn increment(counter: &mut Counter) -> i32 {
    counter.value += 1;
    counter.value
}

type Applied = JoinHandle<Result<i32, Error>>;

/// Starts a caller of `change` on its own task.
fn spawn_apply(
    combiner: &Arc<Combiner<Counter>>,
    db: &AsyncTestDb<Conn>,
    change: impl FnMut(&mut Counter) -> i32 + Send + 'static,
) -> Applied {
    let (combiner, source) = (Arc::clone(combiner), source(db));
    tokio::spawn(async move { combiner.apply(&source, &policy(), 1, change).await })
}

/// Starts the first caller, whose change (first run only) holds the writer task in
/// its group until `go` is sent.
async fn hold_first(combiner: &Arc<Combiner<Counter>>, db: &AsyncTestDb<Conn>) -> (Applied, Sender<()>) {
    let (running_tx, running) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    let gate = Mutex::new(Some((running_tx, go_rx)));
    let first = spawn_apply(combiner, db, move |counter| {
        if let Some((running, go)) = gate.lock().unwrap().take() {
            running.send(()).unwrap();
            go.recv().unwrap();
        }
        increment(counter)
    });
    tokio::task::spawn_blocking(move || running.recv().expect("the first change runs"))
        .await
        .unwrap();
    (first, go)
}

async fn until_waiting(combiner: &Combiner<Counter>, n: usize) {
    let what = format!("{n} changes to row 1 to wait");
    wait_until_async(&what, wait::TIMEOUT, async || combiner.waiting(&1) == n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_queued_while_a_group_is_written_are_saved_as_one_group() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db).await;
    let rest: Vec<_> = (0..3).map(|_| spawn_apply(&combiner, &db, increment)).collect();
    until_waiting(&combiner, 3).await;
    go.send(()).unwrap();
    let mut left = Vec::new();
    for caller in std::iter::once(first).chain(rest) {
        left.push(caller.await.unwrap().expect("saved"));
    }
    left.sort();
    assert_eq!(left, vec![1, 2, 3, 4], "each change saw the ones before it");
    let saved = load(&mut db.conn().await, 1).await;
    assert_eq!(saved.value, 4);
    // Two saves: the first group, then the three queued behind it as one.
    assert_eq!(saved.version, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_goes_away_before_its_group_is_taken_withdraws_its_change() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db).await;
    let runs = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&runs);
    let gone = spawn_apply(&combiner, &db, move |counter| {
        counted.fetch_add(1, Ordering::SeqCst);
        increment(counter)
    });
    until_waiting(&combiner, 1).await;
    gone.abort();
    assert!(gone.await.unwrap_err().is_cancelled());
    assert_eq!(combiner.waiting(&1), 0, "withdrawn from the queue");
    go.send(()).unwrap();
    assert_eq!(first.await.unwrap().expect("saved"), 1);
    assert_eq!(AtomicU32::load(&runs, Ordering::SeqCst), 0, "the withdrawn change never ran");
    let saved = load(&mut db.conn().await, 1).await;
    assert_eq!((saved.value, saved.version), (1, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_outside_the_combiner_between_read_and_save_reruns_every_change_of_the_group() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db).await;
    // The second group: an outside writer commits after this change's first read,
    // before the group's save (on a thread of its own: the change runs in the writer
    // task and cannot await).
    let url = db.url().to_owned();
    let mut first_run = true;
    let outside = spawn_apply(&combiner, &db, move |counter| {
        if std::mem::take(&mut first_run) {
            let url = url.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(async {
                        let mut conn = diesel_occ_tests::connect_async::<Conn>(&url)
                            .await
                            .expect("outside writer");
                        diesel::update(schema::counters::table.find(1))
                            .set((
                                schema::counters::value.eq(schema::counters::value + 100),
                                schema::counters::version.eq(schema::counters::version + 1),
                            ))
                            .execute(&mut conn)
                            .await
                            .expect("the outside write");
                    });
            })
            .join()
            .unwrap();
        }
        increment(counter)
    });
    until_waiting(&combiner, 1).await;
    let runs = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&runs);
    let last = spawn_apply(&combiner, &db, move |counter| {
        counted.fetch_add(1, Ordering::SeqCst);
        increment(counter)
    });
    until_waiting(&combiner, 2).await;
    go.send(()).unwrap();
    assert_eq!(first.await.unwrap().expect("saved"), 1);
    assert_eq!(outside.await.unwrap().expect("saved"), 102);
    assert_eq!(last.await.unwrap().expect("saved"), 103);
    assert_eq!(AtomicU32::load(&runs, Ordering::SeqCst), 2, "the group read again and ran it again");
    let saved = load(&mut db.conn().await, 1).await;
    assert_eq!(saved.value, 103, "the outside write is kept");
    assert_eq!(saved.version, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_fails_for_good_gives_every_caller_its_own_error() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db).await;
    let rest: Vec<_> = (0..2).map(|_| spawn_apply(&combiner, &db, increment)).collect();
    until_waiting(&combiner, 2).await;
    // The row goes while the first group holds what it read.
    diesel::delete(schema::counters::table.find(1))
        .execute(&mut db.conn().await)
        .await
        .expect("delete");
    go.send(()).unwrap();
    for caller in std::iter::once(first).chain(rest) {
        let error = caller.await.unwrap().unwrap_err();
        assert!(
            matches!(error, Error::NotFound(_)),
            "every caller is told the row is gone: {error:?}"
        );
    }
    assert_eq!(combiner.waiting(&1), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_panics_leaves_its_group_and_panics_in_its_callers_task() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db).await;
    let panics = spawn_apply(&combiner, &db, |counter| {
        counter.value += 1000;
        panic!("the caller's own bug")
    });
    until_waiting(&combiner, 1).await;
    let after = spawn_apply(&combiner, &db, increment);
    until_waiting(&combiner, 2).await;
    go.send(()).unwrap();
    assert_eq!(first.await.unwrap().expect("saved"), 1);
    assert!(panics.await.unwrap_err().is_panic());
    assert_eq!(after.await.unwrap().expect("saved"), 2, "its change never counted");
    let saved = load(&mut db.conn().await, 1).await;
    assert_eq!((saved.value, saved.version), (2, 3));
}

/// A row whose `available` a CHECK constraint keeps at 0 or more.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: UuidToken,
}

/// Takes `n` from the stock, returning what is left.
fn take(n: i32) -> impl FnMut(&mut Stock) -> i32 + Send + 'static {
    move |stock| {
        stock.available -= n;
        stock.available
    }
}

/// A group of a valid change and one that breaks the CHECK constraint: the group's save
/// fails for the second one's sake, so each runs alone and gets its own result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_breaks_a_check_constraint_gives_each_change_its_own_result() {
    let db = async_test_db!();
    diesel::insert_into(schema::stock::table)
        .values(Stock {
            id: 1,
            available: 2,
            version: UuidToken::initial(),
        })
        .execute(&mut db.conn().await)
        .await
        .expect("seed");
    let combiner = Arc::new(Combiner::<Stock>::new());
    let apply = |change: Box<dyn FnMut(&mut Stock) -> i32 + Send>| {
        let (combiner, source) = (Arc::clone(&combiner), source(&db));
        tokio::spawn(async move { combiner.apply(&source, &policy(), 1, change).await })
    };
    // The first group holds the writer task until the second group is queued.
    let (running_tx, running) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    let mut gate = Some((running_tx, go_rx));
    let first = apply(Box::new(move |stock| {
        if let Some((running, go)) = gate.take() {
            running.send(()).unwrap();
            go.recv().unwrap();
        }
        take(1)(stock)
    }));
    tokio::task::spawn_blocking(move || running.recv().expect("the first change runs"))
        .await
        .unwrap();
    let valid = apply(Box::new(take(1)));
    wait_until_async("1 change to row 1 to wait", wait::TIMEOUT, async || {
        combiner.waiting(&1) == 1
    })
    .await;
    let too_much = apply(Box::new(take(5)));
    wait_until_async("2 changes to row 1 to wait", wait::TIMEOUT, async || {
        combiner.waiting(&1) == 2
    })
    .await;
    go.send(()).unwrap();
    assert_eq!(first.await.unwrap().expect("saved"), 1);
    assert_eq!(valid.await.unwrap().expect("the valid change lands"), 0);
    match too_much.await.unwrap() {
        Err(error @ Error::Database(_)) => assert!(!error.is_retryable(), "{error:?}"),
        other => panic!("expected the CHECK violation, got {other:?}"),
    }
    let saved = Stock::find(&mut db.conn().await, 1).await.expect("the row");
    assert_eq!(saved.available, 0, "both valid changes, nothing of the other");
    assert_eq!(combiner.waiting(&1), 0);
}
