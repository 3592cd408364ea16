//! Waits on a blocking connection, each bounded: a statement timeout, a lock wait
//! timeout, an exhausted r2d2 pool, and the retry policy's deadline bounding a pool
//! checkout and a locking read with the pools' default settings. After each, nothing
//! was written.
//!
//! A lock holder takes the row lock before the attempt writes and keeps it until the
//! attempt has failed; with the default settings it is released after `HELD_FOR`
//! whatever happens, so a helper that does not bound its wait still returns, and fails
//! the test on its elapsed time rather than hanging it.

use std::cell::Cell;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel_occ::prelude::*;
use diesel_occ::retry::{self, RetryPolicy};
use diesel_occ::blocking;
use diesel_occ::{Error, PoolErrorKind, TransientKind};
use diesel_occ_tests::TestDb;

use super::super::{BOUND, DEADLINE, HELD_FOR};
use super::Conn;
use super::counters::{Counter, connector, quick, row, seed};
use crate::servers::Server;

/// An r2d2 pool of one connection, every other setting r2d2's default
/// (`connection_timeout` 30 s).
fn default_pool(db: &TestDb<Conn>) -> Pool<ConnectionManager<Conn>> {
    Pool::builder()
        .max_size(1)
        .build(ConnectionManager::<Conn>::new(db.url()))
        .expect("pool")
}

/// Adds one to row 1, reading it with `AttemptDsl::find`.
fn increment(conn: &mut Conn, attempt: retry::Attempt) -> Result<i32, Error> {
    let mut counter: Counter = attempt.find(conn, 1)?;
    counter.value += 1;
    counter.save_checked(conn)?;
    Ok(counter.version)
}

/// Runs `body` while another thread holds what `hold` returned, until
/// `body` is done or `HELD_FOR` has passed; `hold` runs on that thread and
/// `release` ends what it holds.
fn while_held<H, R>(
    hold: impl FnOnce() -> H + Send,
    release: impl FnOnce(H) + Send,
    body: impl FnOnce() -> R,
) -> R {
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    thread::scope(|scope| {
        scope.spawn(move || {
            let held = hold();
            held_tx.send(()).expect("the test waits");
            let _ = release_rx.recv_timeout(HELD_FOR);
            release(held);
        });
        held_rx.recv().expect("the holder holds");
        let result = body();
        let _ = release_tx.send(());
        result
    })
}

/// The pool's only connection is checked out elsewhere: the checkout waits
/// for the time left, not r2d2's 30 s, and fails with a pool timeout; the
/// closure never runs.
#[test]
fn an_exhausted_default_pool_is_a_pool_timeout_within_the_deadline() {
    let db = test_db!();
    seed(&db);
    let pool = default_pool(&db);
    let policy = RetryPolicy::new().deadline(DEADLINE);
    let (result, elapsed) = while_held(
        || pool.get().expect("the only connection"),
        drop,
        || {
            let started = Instant::now();
            let result = blocking::retry(&pool, &policy, increment);
            (result, started.elapsed())
        },
    );
    eprintln!("{}: {result:?} after {elapsed:?}", module_path!());
    let Err(Error::Pool(error)) = &result else {
        panic!("expected Error::Pool, got {result:?} after {elapsed:?}");
    };
    assert_eq!(error.kind(), PoolErrorKind::Timeout);
    assert!(elapsed < BOUND, "took {elapsed:?}");
    assert_eq!(row(&db), (10, 1), "nothing was written");
}

/// Another session holds row 1's lock: the escalated attempt's locking read
/// waits for the time left, not until the lock is released, and the helper
/// gives up with the deadline reached and a lock wait timeout as the last
/// error. The pool's connection stays usable: the next call saves.
#[test]
fn a_held_row_lock_ends_the_escalated_read_within_the_deadline() {
    let db = test_db!();
    seed(&db);
    let pool = default_pool(&db);
    let policy = RetryPolicy::new().escalate_after(0).deadline(DEADLINE);
    let (result, elapsed) = while_held(
        || {
            let mut holder = db.conn();
            holder.lock_counter(1);
            holder
        },
        |mut holder| holder.batch_execute("ROLLBACK").expect("release the lock"),
        || {
            let started = Instant::now();
            let result = blocking::retry(&pool, &policy, increment);
            (result, started.elapsed())
        },
    );
    eprintln!("{}: {result:?} after {elapsed:?}", module_path!());
    let Err(Error::RetriesExhausted(exhausted)) = &result else {
        panic!("expected RetriesExhausted, got {result:?} after {elapsed:?}");
    };
    assert!(exhausted.deadline_reached(), "{exhausted:?}");
    assert_eq!(
        exhausted.last_error().transient_kind(),
        Some(TransientKind::LockWaitTimeout),
        "{exhausted:?}"
    );
    assert!(elapsed < BOUND, "took {elapsed:?}");
    assert_eq!(row(&db), (10, 1), "nothing was written");

    let saved = blocking::retry(&pool, &policy, increment).expect("the lock is free");
    assert_eq!(saved, 2);
    assert_eq!(row(&db), (11, 2));
}

/// A lock holder keeps the row locked while the attempt's UPDATE waits
/// under a statement timeout.
fn timed_out_write(
    db: &TestDb<Conn>,
    timeout: &'static str,
    attempts: u32,
) -> (Result<(), Error>, u32) {
    seed(db);
    let mut holder = db.conn();
    holder.lock_counter(1);
    let source = connector(db);
    let runs = Cell::new(0);
    let policy = quick().max_attempts(attempts);
    let result = blocking::retry(&source, &policy, |conn, attempt| {
        runs.set(runs.get() + 1);
        conn.batch_execute(timeout)?;
        let mut counter: Counter = attempt.find(conn, 1)?;
        counter.value += 1;
        counter.save_checked(conn)
    });
    holder.batch_execute("ROLLBACK").expect("release the lock");
    assert_eq!(row(db), (10, 1), "nothing was written");
    (result, runs.get())
}

/// A statement timeout while waiting for a row lock: a typed database error,
/// classified as the server says (not transient: the helper does not retry
/// it).
#[test]
fn a_statement_timeout_is_a_typed_error_classified_as_the_backend_says() {
    let db = test_db!();
    let (result, runs) = timed_out_write(&db, Conn::STATEMENT_TIMEOUT, 3);
    let error = result.expect_err("the statement timed out");
    assert!(matches!(error, Error::Database(_)), "{error:?}");
    assert_eq!(
        error.transient_kind(),
        Conn::STATEMENT_TIMEOUT_KIND,
        "{error:?}"
    );
    assert_eq!(runs, 1, "not retried");
    eprintln!(
        "{}: statement timeout -> {error:?}, transient {:?}",
        module_path!(),
        error.transient_kind()
    );
}

/// A lock timeout: a transient lock wait timeout; the helper retries it
/// until the policy gives up, with the timeout as the last error.
#[test]
fn a_lock_timeout_is_transient_and_retried_until_the_policy_gives_up() {
    let db = test_db!();
    let (result, runs) = timed_out_write(&db, Conn::LOCK_TIMEOUT, 2);
    let Err(Error::RetriesExhausted(exhausted)) = result else {
        panic!("expected RetriesExhausted, got {result:?}");
    };
    assert_eq!(exhausted.attempts(), 2);
    assert_eq!(runs, 2);
    assert_eq!(
        exhausted.last_error().transient_kind(),
        Conn::LOCK_TIMEOUT_KIND,
        "{exhausted:?}"
    );
}

/// An r2d2 pool of one whose connection is held elsewhere: the helper
/// returns `Error::Pool` (timed out) once r2d2's `connection_timeout`
/// passes, well within the policy's deadline, and never runs the closure.
#[test]
fn an_exhausted_r2d2_pool_is_a_typed_pool_error_within_the_deadline() {
    let db = test_db!();
    seed(&db);
    let pool = Pool::builder()
        .max_size(1)
        .connection_timeout(Duration::from_millis(200))
        .build(ConnectionManager::<Conn>::new(db.url()))
        .expect("pool");
    let _held = pool.get().expect("the only connection");
    let deadline = Duration::from_secs(5);
    let policy = quick().deadline(deadline);
    let started = Instant::now();
    let runs = Cell::new(0);
    let result: Result<(), Error> = blocking::retry(&pool, &policy, |_conn, _attempt| {
        runs.set(runs.get() + 1);
        Ok(())
    });
    let elapsed = started.elapsed();
    let Err(Error::Pool(error)) = &result else {
        panic!("expected Error::Pool, got {result:?}");
    };
    assert_eq!(error.kind(), PoolErrorKind::Timeout);
    assert_eq!(runs.get(), 0);
    assert!(elapsed < deadline, "took {elapsed:?}");
}
