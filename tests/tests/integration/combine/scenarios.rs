//! The combiner, its groups formed by force: the first caller's change holds its group
//! on a gate until the others are seen queued (`Combiner::waiting`), never by timing.
//! The async runtime has a second worker for the test while the gate holds the writer.

flavour_prelude!();

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};

use diesel::{ExpressionMethods, Insertable, QueryDsl, Queryable, Selectable};
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, UuidToken};
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::wait;

use super::schema;
#[flavour(asynchronous)]
use crate::combine::asynchronous::{source, until_running};
#[flavour(blocking)]
use crate::combine::blocking::{source, until_running};
use crate::combine::{gated, increment};

/// A row whose `available` a CHECK constraint keeps at 0 or more.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: UuidToken,
}

/// Runs `write` from inside a change, which cannot await.
#[flavour(blocking)]
fn from_a_change(write: impl FnOnce()) {
    write();
}

/// Runs `write` from inside a change, which cannot await: on a thread with a runtime of
/// its own, as the change runs in the combiner's writer task.
#[flavour(asynchronous)]
fn from_a_change<F: Future<Output = ()> + Send + 'static>(
    write: impl FnOnce() -> F + Send + 'static,
) {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(write())
    })
    .join()
    .unwrap();
}

fn policy() -> RetryPolicy {
    RetryPolicy::new().max_attempts(5)
}

/// Rows `keys` at value 0.
#[flavour]
async fn seed(db: &TestDb<Conn>, keys: &[i32]) {
    for key in keys {
        let insert = format!("INSERT INTO counters (id, value, version) VALUES ({key}, 0, 1)");
        raw_sql(db, &insert).await;
    }
}

#[flavour]
async fn row(db: &TestDb<Conn>, key: i32) -> Counter {
    Counter::find(&mut db.conn().await, key)
        .await
        .expect("the row")
}

/// A write outside the combiner: `amount` more, and a new token.
#[flavour]
async fn add_outside(conn: &mut Conn, key: i32, amount: i32) {
    use schema::counters::dsl::*;
    diesel::update(counters.find(key))
        .set((value.eq(value + amount), version.eq(version + 1)))
        .execute(conn)
        .await
        .expect("the outside write");
}

/// Takes `n` from the stock, returning what is left.
fn take(n: i32) -> impl FnMut(&mut Stock) -> i32 + Send + 'static {
    move |stock| {
        stock.available -= n;
        stock.available
    }
}

/// Starts a caller of `change` on row 1.
#[flavour]
fn spawn_apply<E>(
    combiner: &Arc<Combiner<E>>,
    db: &TestDb<Conn>,
    change: impl FnMut(&mut E) -> i32 + Send + 'static,
) -> Spawned<Result<i32, Error>>
where
    E: Combinable<Conn> + Versioned<Key = i32> + Sync + 'static,
{
    let (combiner, source) = (Arc::clone(combiner), source::<Conn>(db.url()));
    spawn(move || async move { combiner.apply(&source, &policy(), 1, change).await })
}

/// Starts the first caller, whose `change` holds its group open until `go` is sent.
#[flavour]
async fn hold_first<E>(
    combiner: &Arc<Combiner<E>>,
    db: &TestDb<Conn>,
    change: impl FnMut(&mut E) -> i32 + Send + 'static,
) -> (Spawned<Result<i32, Error>>, Sender<()>)
where
    E: Combinable<Conn> + Versioned<Key = i32> + Sync + 'static,
{
    let (running_tx, running) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let first = spawn_apply(combiner, db, gated(running_tx, go_rx, change));
    until_running(running).await;
    (first, go)
}

/// Waits until `n` changes to row 1 wait behind the group being written.
#[flavour]
async fn until_waiting<E: Versioned<Key = i32>>(combiner: &Combiner<E>, n: usize) {
    let what = format!("{n} changes to row 1 to wait");
    wait_until(&what, wait::TIMEOUT, async || combiner.waiting(&1) == n).await;
}

/// What a caller that did not panic returned.
#[flavour]
async fn returned<T>(caller: Spawned<T>) -> T {
    joined(caller).await.expect("the caller does not panic")
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn changes_queued_while_a_group_is_written_are_saved_as_one_group() {
    let db = db!();
    seed(&db, &[1]).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db, increment).await;
    let rest: Vec<_> = (0..3)
        .map(|_| spawn_apply(&combiner, &db, increment))
        .collect();
    until_waiting(&combiner, 3).await;
    go.send(()).unwrap();
    let mut left = Vec::new();
    for caller in std::iter::once(first).chain(rest) {
        left.push(returned(caller).await.expect("saved"));
    }
    left.sort();
    assert_eq!(left, vec![1, 2, 3, 4], "each change saw the ones before it");
    let saved = row(&db, 1).await;
    assert_eq!(saved.value, 4);
    // Two saves: the first caller's group, then the three queued behind it as one.
    assert_eq!(saved.version, 3);
    assert_eq!(combiner.waiting(&1), 0);
}

#[flavour(asynchronous, test(flavor = "multi_thread", worker_threads = 2))]
async fn a_caller_that_goes_away_before_its_group_is_taken_withdraws_its_change() {
    let db = db!();
    seed(&db, &[1]).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db, increment).await;
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
    assert_eq!(returned(first).await.expect("saved"), 1);
    let ran = AtomicU32::load(&runs, Ordering::SeqCst);
    assert_eq!(ran, 0, "the withdrawn change never ran");
    let saved = row(&db, 1).await;
    assert_eq!((saved.value, saved.version), (1, 2));
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_write_outside_the_combiner_between_read_and_save_reruns_every_change_of_the_group() {
    let db = db!();
    seed(&db, &[1]).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db, increment).await;
    // The second group: an outside writer commits after this change's first read,
    // before the group's save.
    let connect = source::<Conn>(db.url());
    let mut first_run = true;
    let outside = spawn_apply(&combiner, &db, move |counter| {
        if std::mem::take(&mut first_run) {
            let connect = connect.clone();
            from_a_change(move || async move {
                let mut conn = connect().await.expect("outside writer");
                add_outside(&mut conn, 1, 100).await;
            });
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
    assert_eq!(returned(first).await.expect("saved"), 1);
    assert_eq!(returned(outside).await.expect("saved"), 102);
    assert_eq!(returned(last).await.expect("saved"), 103);
    let ran = AtomicU32::load(&runs, Ordering::SeqCst);
    assert_eq!(ran, 2, "the group read again and ran it again");
    let saved = row(&db, 1).await;
    assert_eq!(saved.value, 103, "the outside write is kept");
    // The first group, the outside write, the second group once.
    assert_eq!(saved.version, 4);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_group_that_fails_for_good_gives_every_caller_its_own_error() {
    let db = db!();
    seed(&db, &[1]).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db, increment).await;
    let rest: Vec<_> = (0..2)
        .map(|_| spawn_apply(&combiner, &db, increment))
        .collect();
    until_waiting(&combiner, 2).await;
    // The row goes while the first group holds what it read.
    raw_sql(&db, "DELETE FROM counters WHERE id = 1").await;
    go.send(()).unwrap();
    for caller in std::iter::once(first).chain(rest) {
        let error = returned(caller).await.unwrap_err();
        let gone = matches!(error, Error::NotFound(_));
        assert!(gone, "every caller is told the row is gone: {error:?}");
    }
    assert_eq!(combiner.waiting(&1), 0);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_change_that_panics_leaves_its_group_and_panics_in_its_caller() {
    let db = db!();
    seed(&db, &[1]).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let (first, go) = hold_first(&combiner, &db, increment).await;
    let panics = spawn_apply(&combiner, &db, |counter| {
        counter.value += 1000;
        panic!("the caller's own bug")
    });
    until_waiting(&combiner, 1).await;
    let after = spawn_apply(&combiner, &db, increment);
    until_waiting(&combiner, 2).await;
    go.send(()).unwrap();
    assert_eq!(returned(first).await.expect("saved"), 1);
    let payload = joined(panics).await.unwrap_err();
    let message = payload.downcast_ref::<&str>();
    assert_eq!(message, Some(&"the caller's own bug"));
    let after = returned(after).await.expect("saved");
    assert_eq!(after, 2, "its change never counted");
    let saved = row(&db, 1).await;
    assert_eq!((saved.value, saved.version), (2, 3));
}

#[flavour(test)]
async fn a_group_whose_changes_leave_the_row_as_read_writes_nothing() {
    let db = db!();
    seed(&db, &[1]).await;
    let combiner = Combiner::<Counter>::new();
    let read = |counter: &mut Counter| counter.value;
    let source = source::<Conn>(db.url());
    let seen = combiner.apply(&source, &policy(), 1, read).await;
    assert_eq!(seen.expect("read"), 0);
    assert_eq!(row(&db, 1).await.version, 1, "no save, no fresh token");
}

/// Whatever the interleaving: 8 callers through the combiner and one writer outside it,
/// on two rows; every change that returned `Ok` is in the row exactly once, and so is
/// every outside write. (The assertion holds for any schedule, so nothing is forced.)
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn every_saved_change_lands_exactly_once_beside_writes_outside_the_combiner() {
    let db = db!();
    seed(&db, &[1, 2]).await;
    let combiner = Arc::new(Combiner::<Counter>::new());
    let policy = RetryPolicy::new().max_attempts(1000);
    let source = source::<Conn>(db.url());
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let (combiner, source, policy) =
                (Arc::clone(&combiner), source.clone(), policy.clone());
            spawn(move || async move {
                let mut saved = [0, 0];
                for op in 0..40 {
                    let key = 1 + (worker + op) % 2;
                    let applied = combiner.apply(&source, &policy, key, increment).await;
                    applied.expect("saved");
                    saved[(key - 1) as usize] += 1;
                }
                saved
            })
        })
        .collect();
    let connect = source.clone();
    let outside = spawn(move || async move {
        let mut conn = connect().await.expect("outside writer");
        let mut written = [0, 0];
        for op in 0..20 {
            let key = 1 + op % 2;
            add_outside(&mut conn, key, 1000).await;
            written[(key - 1) as usize] += 1;
        }
        written
    });
    let mut combined = [0, 0];
    for worker in workers {
        let saved = returned(worker).await;
        combined = [combined[0] + saved[0], combined[1] + saved[1]];
    }
    let outside = returned(outside).await;
    for key in [1, 2] {
        let i = (key - 1) as usize;
        let saved = row(&db, key).await;
        assert_eq!(saved.value, combined[i] + 1000 * outside[i], "row {key}");
    }
    assert_eq!(combiner.waiting(&1) + combiner.waiting(&2), 0);
}

/// A group of a valid change and one that breaks the CHECK constraint: the group's save
/// fails for the second one's sake, so each runs alone and gets its own result; the
/// valid one, the group's leader, lands.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_group_that_breaks_a_check_constraint_gives_each_change_its_own_result() {
    let db = db!();
    let row = {
        use schema::stock::dsl::*;
        (id.eq(1), available.eq(2), version.eq(UuidToken::initial()))
    };
    insert_rows!(&mut db.conn().await, schema::stock::table, row);
    let combiner = Arc::new(Combiner::<Stock>::new());
    let (first, go) = hold_first(&combiner, &db, take(1)).await;
    // Queued first, so it leads the second group.
    let valid = spawn_apply(&combiner, &db, take(1));
    until_waiting(&combiner, 1).await;
    let too_much = spawn_apply(&combiner, &db, take(5));
    until_waiting(&combiner, 2).await;
    go.send(()).unwrap();
    assert_eq!(returned(first).await.expect("saved"), 1);
    assert_eq!(returned(valid).await.expect("the valid change lands"), 0);
    match returned(too_much).await {
        Err(error @ Error::Database(_)) => assert!(!error.is_retryable(), "{error:?}"),
        other => panic!("expected the CHECK violation, got {other:?}"),
    }
    let saved = Stock::find(&mut db.conn().await, 1).await.expect("the row");
    assert_eq!(saved.available, 0, "the valid changes, not the other");
    assert_eq!(combiner.waiting(&1), 0);
}
