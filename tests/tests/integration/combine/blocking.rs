//! The blocking combiner on a real database, its groups formed by force: the first
//! caller's change holds its group open on a gate until the others are seen queued
//! (`Combiner::waiting`), so which changes share a group never depends on timing.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, ScopedJoinHandle};

use diesel::prelude::*;
use diesel_occ::blocking::Combiner;
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, UuidToken};
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::{TestDb, wait, wait_until};

use super::{Conn, schema};

/// A row whose `available` a CHECK constraint keeps at 0 or more.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: UuidToken,
}

fn seed(db: &TestDb<Conn>) {
    diesel::insert_into(schema::counters::table)
        .values(Counter::new(1, 0))
        .execute(&mut db.conn())
        .expect("seed");
}

fn row(db: &TestDb<Conn>) -> Counter {
    Counter::find(&mut db.conn(), 1).expect("the row")
}

/// The change every caller makes: one more, and the value it left.
fn increment(counter: &mut Counter) -> i32 {
    counter.value += 1;
    counter.value
}

/// A change that, on its first run only, says it is running and waits to be let go:
/// it holds its group open while the test queues the next one.
fn gated(running: Sender<()>, go: Receiver<()>) -> impl FnMut(&mut Counter) -> i32 + Send {
    let gate = Mutex::new(Some((running, go)));
    move |counter| {
        if let Some((running, go)) = gate.lock().unwrap().take() {
            running.send(()).unwrap();
            go.recv().unwrap();
        }
        increment(counter)
    }
}

/// Waits until `n` changes to row 1 wait behind the group being written.
fn until_waiting(combiner: &Combiner<Counter>, n: usize) {
    let what = format!("{n} changes to row 1 to wait");
    wait_until(&what, wait::TIMEOUT, || combiner.waiting(&1) >= n);
}

struct Group<'s> {
    first: ScopedJoinHandle<'s, Result<i32, Error>>,
    go: Sender<()>,
}

/// Starts the first caller, whose change holds its group open until [`Group::go`].
fn hold_first<'s, 'e: 's>(
    scope: &'s thread::Scope<'s, 'e>,
    combiner: &'e Combiner<Counter>,
    db: &'e TestDb<Conn>,
) -> Group<'s> {
    let (running_tx, running) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let first = scope.spawn(move || {
        combiner.apply(
            &|| Ok::<_, ConnectionError>(db.conn()),
            &policy(),
            1,
            gated(running_tx, go_rx),
        )
    });
    running.recv().expect("the first change runs");
    Group { first, go }
}

fn policy() -> RetryPolicy {
    RetryPolicy::new().max_attempts(5)
}

#[test]
fn changes_queued_while_a_group_is_written_are_saved_as_one_group() {
    let db = test_db!();
    seed(&db);
    let combiner = Combiner::<Counter>::new();
    let source = || Ok::<_, ConnectionError>(db.conn());
    let mut left: Vec<i32> = thread::scope(|scope| {
        let group = hold_first(scope, &combiner, &db);
        let rest: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| combiner.apply(&source, &policy(), 1, increment)))
            .collect();
        until_waiting(&combiner, 3);
        group.go.send(()).unwrap();
        std::iter::once(group.first)
            .chain(rest)
            .map(|t| t.join().unwrap().expect("saved"))
            .collect()
    });
    left.sort();
    assert_eq!(left, vec![1, 2, 3, 4], "each change saw the ones before it");
    let saved = row(&db);
    assert_eq!(saved.value, 4);
    // Two saves: the first caller's group, then the three queued behind it as one.
    assert_eq!(saved.version, 3);
    assert_eq!(combiner.waiting(&1), 0);
}

#[test]
fn a_write_outside_the_combiner_between_read_and_save_reruns_every_change_of_the_group() {
    let db = test_db!();
    seed(&db);
    let combiner = Combiner::<Counter>::new();
    let source = || Ok::<_, ConnectionError>(db.conn());
    let runs = Arc::new(Mutex::new(0));
    let (combiner, source) = (&combiner, &source);
    thread::scope(|scope| {
        let group = hold_first(scope, combiner, &db);
        // The second group: an outside writer commits after this change's first read,
        // before the group's save.
        let outside = scope.spawn(|| {
            let mut first_run = true;
            combiner.apply(source, &policy(), 1, {
                let url = db.url().to_owned();
                move |counter: &mut Counter| {
                    if std::mem::take(&mut first_run) {
                        let mut conn = Conn::establish(&url).expect("outside writer");
                        diesel::update(schema::counters::table.find(1))
                            .set((
                                schema::counters::value.eq(schema::counters::value + 100),
                                schema::counters::version.eq(schema::counters::version + 1),
                            ))
                            .execute(&mut conn)
                            .expect("the outside write");
                    }
                    increment(counter)
                }
            })
        });
        until_waiting(combiner, 1);
        let counted = Arc::clone(&runs);
        let last = scope.spawn(move || {
            combiner.apply(source, &policy(), 1, move |counter: &mut Counter| {
                *counted.lock().unwrap() += 1;
                increment(counter)
            })
        });
        until_waiting(combiner, 2);
        group.go.send(()).unwrap();
        assert_eq!(group.first.join().unwrap().expect("saved"), 1);
        assert_eq!(outside.join().unwrap().expect("saved"), 102);
        assert_eq!(last.join().unwrap().expect("saved"), 103);
    });
    assert_eq!(
        *runs.lock().unwrap(),
        2,
        "the group read again and ran it again"
    );
    let saved = row(&db);
    assert_eq!(saved.value, 103, "the outside write is kept");
    // The first group, the outside write, the second group once.
    assert_eq!(saved.version, 4);
}

#[test]
fn a_group_that_fails_for_good_gives_every_caller_its_own_error() {
    let db = test_db!();
    seed(&db);
    let combiner = Combiner::<Counter>::new();
    let source = || Ok::<_, ConnectionError>(db.conn());
    thread::scope(|scope| {
        let group = hold_first(scope, &combiner, &db);
        let rest: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| combiner.apply(&source, &policy(), 1, increment)))
            .collect();
        until_waiting(&combiner, 2);
        // The row goes while the first group holds what it read.
        diesel::delete(schema::counters::table.find(1))
            .execute(&mut db.conn())
            .expect("delete");
        group.go.send(()).unwrap();
        for caller in std::iter::once(group.first).chain(rest) {
            let error = caller.join().unwrap().unwrap_err();
            assert!(
                matches!(error, Error::NotFound(_)),
                "every caller is told the row is gone: {error:?}"
            );
        }
    });
    assert_eq!(combiner.waiting(&1), 0);
}

#[test]
fn a_change_that_panics_leaves_its_group_and_panics_in_its_callers_thread() {
    let db = test_db!();
    seed(&db);
    let combiner = Combiner::<Counter>::new();
    let source = || Ok::<_, ConnectionError>(db.conn());
    thread::scope(|scope| {
        let group = hold_first(scope, &combiner, &db);
        let panics = scope.spawn(|| {
            combiner.apply(&source, &policy(), 1, |counter: &mut Counter| -> i32 {
                counter.value += 1000;
                panic!("the caller's own bug")
            })
        });
        until_waiting(&combiner, 1);
        let after = scope.spawn(|| combiner.apply(&source, &policy(), 1, increment));
        until_waiting(&combiner, 2);
        group.go.send(()).unwrap();
        assert_eq!(group.first.join().unwrap().expect("saved"), 1);
        let payload = panics.join().unwrap_err();
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"the caller's own bug")
        );
        assert_eq!(
            after.join().unwrap().expect("saved"),
            2,
            "its change never counted"
        );
    });
    let saved = row(&db);
    assert_eq!((saved.value, saved.version), (2, 3));
}

#[test]
fn a_group_whose_changes_leave_the_row_as_read_writes_nothing() {
    let db = test_db!();
    seed(&db);
    let combiner = Combiner::<Counter>::new();
    let source = || Ok::<_, ConnectionError>(db.conn());
    let seen = combiner
        .apply(&source, &policy(), 1, |counter: &mut Counter| counter.value)
        .expect("read");
    assert_eq!(seen, 0);
    assert_eq!(row(&db).version, 1, "no save, no fresh token");
}

/// Whatever the interleaving: 8 threads through the combiner and one writer outside it,
/// on two rows; every change that returned `Ok` is in the row exactly once, and so is
/// every outside write. (The assertion holds for any schedule, so nothing is forced.)
#[test]
fn every_saved_change_lands_exactly_once_beside_writes_outside_the_combiner() {
    let db = test_db!();
    seed(&db);
    diesel::insert_into(schema::counters::table)
        .values(Counter::new(2, 0))
        .execute(&mut db.conn())
        .expect("seed row 2");
    let combiner = Combiner::<Counter>::new();
    let source = || Ok::<_, ConnectionError>(db.conn());
    let policy = RetryPolicy::new().max_attempts(1000);
    let (combined, outside) = thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|worker| {
                let (combiner, source, policy) = (&combiner, &source, &policy);
                scope.spawn(move || {
                    let mut saved = [0, 0];
                    for op in 0..40 {
                        let key = 1 + (worker + op) % 2;
                        combiner
                            .apply(source, policy, key, increment)
                            .expect("saved");
                        saved[(key - 1) as usize] += 1;
                    }
                    saved
                })
            })
            .collect();
        let outside = scope.spawn(|| {
            let mut conn = db.conn();
            let mut written = [0, 0];
            for op in 0..20 {
                let key = 1 + op % 2;
                diesel::update(schema::counters::table.find(key))
                    .set((
                        schema::counters::value.eq(schema::counters::value + 1000),
                        schema::counters::version.eq(schema::counters::version + 1),
                    ))
                    .execute(&mut conn)
                    .expect("the outside write");
                written[(key - 1) as usize] += 1;
            }
            written
        });
        let combined = workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .fold([0, 0], |a, b| [a[0] + b[0], a[1] + b[1]]);
        (combined, outside.join().unwrap())
    });
    for key in [1, 2] {
        let i = (key - 1) as usize;
        let saved = Counter::find(&mut db.conn(), key).expect("the row");
        assert_eq!(saved.value, combined[i] + 1000 * outside[i], "row {key}");
    }
    assert_eq!(combiner.waiting(&1) + combiner.waiting(&2), 0);
}

/// Takes `n` from the stock, returning what is left.
fn take(n: i32) -> impl FnMut(&mut Stock) -> i32 + Send {
    move |stock| {
        stock.available -= n;
        stock.available
    }
}

/// A group of a valid change and one that breaks the CHECK constraint: the group's save
/// fails for the second one's sake, so each runs alone and gets its own result; the
/// valid one, the group's leader, lands.
#[test]
fn a_group_that_breaks_a_check_constraint_gives_each_change_its_own_result() {
    let db = test_db!();
    diesel::insert_into(schema::stock::table)
        .values(Stock {
            id: 1,
            available: 2,
            version: UuidToken::initial(),
        })
        .execute(&mut db.conn())
        .expect("seed");
    let combiner = Combiner::<Stock>::new();
    let source = || Ok::<_, ConnectionError>(db.conn());
    let (combiner, source) = (&combiner, &source);
    thread::scope(|scope| {
        // The first group holds the row until the second group is queued.
        let (running_tx, running) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let first = scope.spawn(move || {
            let mut gate = Some((running_tx, go_rx));
            combiner.apply(source, &policy(), 1, move |stock: &mut Stock| {
                if let Some((running, go)) = gate.take() {
                    running.send(()).unwrap();
                    go.recv().unwrap();
                }
                take(1)(stock)
            })
        });
        running.recv().expect("the first change runs");
        // Queued first, so it leads the second group.
        let valid = scope.spawn(|| combiner.apply(source, &policy(), 1, take(1)));
        wait_until("1 change to row 1 to wait", wait::TIMEOUT, || {
            combiner.waiting(&1) >= 1
        });
        let too_much = scope.spawn(|| combiner.apply(source, &policy(), 1, take(5)));
        wait_until("2 changes to row 1 to wait", wait::TIMEOUT, || {
            combiner.waiting(&1) >= 2
        });
        go.send(()).unwrap();
        assert_eq!(first.join().unwrap().expect("saved"), 1);
        let valid = valid.join().unwrap();
        let too_much = too_much.join().unwrap();
        assert_eq!(valid.expect("the valid change lands"), 0);
        match too_much {
            Err(error @ Error::Database(_)) => assert!(!error.is_retryable(), "{error:?}"),
            other => panic!("expected the CHECK violation, got {other:?}"),
        }
    });
    let saved = Stock::find(&mut db.conn(), 1).expect("the row");
    assert_eq!(
        saved.available, 0,
        "both valid changes, nothing of the other"
    );
    assert_eq!(combiner.waiting(&1), 0);
}
