//! Bounded waits in both flavours (r2d2 / deadpool): an exhausted pool, the policy's deadline
//! bounding a checkout and a locking read under the pools' defaults; blocking only, statement
//! and lock wait timeouts. A holder keeps the connection or row lock until the attempt failed,
//! at most `HELD_FOR`: an unbounded wait fails the test on its elapsed time, not hanging it.

flavour_prelude!();

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

#[flavour(asynchronous)]
use diesel::connection::SimpleConnection as _;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, PoolErrorKind, TransientKind};

use super::super::{BOUND, DEADLINE, HELD_FOR};
use super::counters::{Counter, ServerDb, quick, row, seed};
use crate::servers::Server;

#[flavour(blocking)]
type Pool = diesel::r2d2::Pool<diesel::r2d2::ConnectionManager<Conn>>;
#[flavour(asynchronous)]
type Pool = diesel_async::pooled_connection::deadpool::Pool<Conn>;

/// A pool of one connection, otherwise the pool's defaults: r2d2 waits 30 s for a connection;
/// deadpool has no runtime and no wait timeout (a checkout waits forever).
#[flavour(blocking)]
fn default_pool(db: &ServerDb) -> Pool {
    let manager = diesel::r2d2::ConnectionManager::<Conn>::new(db.url());
    Pool::builder().max_size(1).build(manager).expect("pool")
}

#[flavour(asynchronous)]
fn default_pool(db: &ServerDb) -> Pool {
    use diesel_async::pooled_connection::AsyncDieselConnectionManager;
    let manager = AsyncDieselConnectionManager::<Conn>::new(db.url());
    Pool::builder(manager).max_size(1).build().expect("pool")
}

/// Adds one to row 1 through the retry helper, reading it with `AttemptDsl::find`.
#[flavour]
async fn increment(pool: &Pool, policy: &RetryPolicy) -> Result<i32, Error> {
    retry(pool, policy, async |conn, attempt| {
        let mut counter: Counter = attempt.find(conn, 1).await?;
        counter.value += 1;
        counter.save_checked(conn).await?;
        Ok(counter.version)
    })
    .await
}

/// Keeps `held` on a thread until the returned call or `HELD_FOR`, then `release`s it.
fn hold<H: Send + 'static>(held: H, release: impl FnOnce(H) + Send + 'static) -> impl FnOnce() {
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let thread = thread::spawn(move || {
        let _ = release_rx.recv_timeout(HELD_FOR);
        release(held);
    });
    move || {
        let _ = release_tx.send(());
        thread.join().expect("the holder");
    }
}

/// The pool's only connection is checked out elsewhere: the checkout waits for the time left, not
/// r2d2's 30 s or deadpool's forever, and fails with a pool timeout; the closure never runs.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn an_exhausted_default_pool_is_a_pool_timeout_within_the_deadline() {
    let db = server_db!();
    seed(&db);
    let pool = default_pool(&db);
    let release = hold(pool.get().await.expect("the only connection"), drop);
    let policy = RetryPolicy::new().deadline(DEADLINE);
    let started = Instant::now();
    let result = increment(&pool, &policy).await;
    let elapsed = started.elapsed();
    release();
    eprintln!("{}: {result:?} after {elapsed:?}", module_path!());
    let Err(Error::Pool(error)) = &result else {
        panic!("expected Error::Pool, got {result:?} after {elapsed:?}");
    };
    assert_eq!(error.kind(), PoolErrorKind::Timeout);
    assert!(elapsed < BOUND, "took {elapsed:?}");
    assert_eq!(row(&db), (10, 1), "nothing was written");
}

/// Another session holds row 1's lock: the escalated attempt's locking read waits for the
/// time left, and the helper gives up, the deadline reached, the last error a lock wait
/// timeout. The connection went back to the pool usable: the next call saves on it.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_held_row_lock_ends_the_escalated_read_within_the_deadline() {
    let db = server_db!();
    seed(&db);
    let pool = default_pool(&db);
    let mut locker = db.conn();
    locker.lock_counter(1);
    let release = hold(locker, |mut locker| {
        locker.batch_execute("ROLLBACK").expect("release the lock")
    });
    let policy = RetryPolicy::new().escalate_after(0).deadline(DEADLINE);
    let started = Instant::now();
    let result = increment(&pool, &policy).await;
    let elapsed = started.elapsed();
    release();
    eprintln!("{}: {result:?} after {elapsed:?}", module_path!());
    let Err(Error::RetriesExhausted(exhausted)) = &result else {
        panic!("expected RetriesExhausted, got {result:?} after {elapsed:?}");
    };
    assert!(exhausted.deadline_reached(), "{exhausted:?}");
    let last = exhausted.last_error().transient_kind();
    assert_eq!(last, Some(TransientKind::LockWaitTimeout), "{exhausted:?}");
    assert!(elapsed < BOUND, "took {elapsed:?}");
    assert_eq!(row(&db), (10, 1), "nothing was written");

    let saved = increment(&pool, &policy).await.expect("the lock is free");
    assert_eq!(saved, 2);
    assert_eq!(row(&db), (11, 2));
}

/// A pool of one whose connection is held elsewhere, waiting 200 ms for it: the helper returns
/// a timed-out `Error::Pool` well within the policy's deadline, and never runs the closure.
#[flavour]
async fn exhausted_pool_fails_within_the_deadline(pool: &Pool) {
    let _held = pool.get().await.expect("the only connection");
    let deadline = Duration::from_secs(5);
    let policy = quick().deadline(deadline);
    let runs = AtomicU32::new(0);
    let started = Instant::now();
    let result: Result<(), Error> = retry(pool, &policy, async |_conn, _attempt| {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .await;
    let elapsed = started.elapsed();
    let Err(Error::Pool(error)) = &result else {
        panic!("expected Error::Pool, got {result:?}");
    };
    assert_eq!(error.kind(), PoolErrorKind::Timeout);
    assert_eq!(AtomicU32::load(&runs, Ordering::SeqCst), 0);
    assert!(elapsed < deadline, "took {elapsed:?}");
}

/// An r2d2 pool whose `connection_timeout` is 200 ms.
#[flavour(blocking, test)]
fn an_exhausted_r2d2_pool_is_a_typed_pool_error_within_the_deadline() {
    let db = server_db!();
    let manager = diesel::r2d2::ConnectionManager::<Conn>::new(db.url());
    let builder = Pool::builder().max_size(1);
    let builder = builder.connection_timeout(Duration::from_millis(200));
    exhausted_pool_fails_within_the_deadline(&builder.build(manager).expect("pool"));
}

/// A deadpool pool whose wait timeout is 200 ms.
#[flavour(asynchronous, test(flavor = "multi_thread", worker_threads = 2))]
async fn an_exhausted_deadpool_pool_is_a_typed_pool_error_within_the_deadline() {
    let db = server_db!();
    let pool = super::counters::pool(&db, Some(Duration::from_millis(200)));
    exhausted_pool_fails_within_the_deadline(&pool).await;
}

/// A holder keeps row 1 locked while the attempt's UPDATE waits under `timeout` (a session
/// setting); returns the helper's result and how many attempts ran.
#[flavour(blocking)]
fn timed_out_write(db: &ServerDb, timeout: &str, attempts: u32) -> (Result<(), Error>, u32) {
    seed(db);
    let mut holder = db.conn();
    holder.lock_counter(1);
    let source = super::counters::connector(db);
    let runs = std::cell::Cell::new(0);
    let policy = quick().max_attempts(attempts);
    let result = retry(&source, &policy, |conn, attempt| {
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

/// A statement timeout on a row lock: a typed error, classified as the server says (not retried).
#[flavour(blocking, test)]
fn a_statement_timeout_is_a_typed_error_classified_as_the_backend_says() {
    let db = server_db!();
    let (result, runs) = timed_out_write(&db, Conn::STATEMENT_TIMEOUT, 3);
    let error = result.expect_err("the statement timed out");
    assert!(matches!(error, Error::Database(_)), "{error:?}");
    let kind = error.transient_kind();
    assert_eq!(kind, Conn::STATEMENT_TIMEOUT_KIND, "{error:?}");
    assert_eq!(runs, 1, "not retried");
    let test = module_path!();
    eprintln!("{test}: statement timeout -> {error:?}, transient {kind:?}");
}

/// A lock timeout: transient, retried until the policy gives up, the timeout as the last error.
#[flavour(blocking, test)]
fn a_lock_timeout_is_transient_and_retried_until_the_policy_gives_up() {
    let db = server_db!();
    let (result, runs) = timed_out_write(&db, Conn::LOCK_TIMEOUT, 2);
    let Err(Error::RetriesExhausted(exhausted)) = result else {
        panic!("expected RetriesExhausted, got {result:?}");
    };
    assert_eq!(exhausted.attempts(), 2);
    assert_eq!(runs, 2);
    let last = exhausted.last_error().transient_kind();
    assert_eq!(last, Conn::LOCK_TIMEOUT_KIND, "{exhausted:?}");
}
