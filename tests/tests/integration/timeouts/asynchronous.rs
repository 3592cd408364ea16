//! Waits on an async connection from a deadpool pool, each bounded: an exhausted pool,
//! and the retry policy's deadline bounding a pool checkout and a locking read with
//! deadpool's default settings. After each, nothing was written.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::asynchronous;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, PoolErrorKind, TransientKind};
use diesel_occ_tests::TestDb;

use super::super::{BOUND, DEADLINE, HELD_FOR};
use super::counters::{Counter, pool, quick, row, seed};
use super::{AsyncConn, Conn};
use crate::servers::Server;

/// A deadpool pool of one whose object is held elsewhere: `Error::Pool`
/// (timed out) after the pool's wait timeout, within the policy's deadline,
/// and the closure never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_deadpool_pool_is_a_typed_pool_error_within_the_deadline() {
    let db = test_db!();
    let pool = pool(&db, Some(Duration::from_millis(200)));
    let _held = pool.get().await.expect("the only connection");
    let deadline = Duration::from_secs(5);
    let policy = quick().deadline(deadline);
    let runs = AtomicU32::new(0);
    let started = Instant::now();
    let result: Result<(), Error> = asynchronous::retry(&pool, &policy, async |_conn, _attempt| {
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

/// A deadpool pool of one connection, every other setting deadpool's
/// default: no runtime, no wait timeout (a checkout waits forever).
fn default_pool(db: &TestDb<Conn>) -> Pool<AsyncConn> {
    Pool::builder(AsyncDieselConnectionManager::<AsyncConn>::new(db.url()))
        .max_size(1)
        .build()
        .expect("pool")
}

/// Adds one to row 1, reading it with `AttemptDsl::find`.
async fn increment(pool: &Pool<AsyncConn>, policy: &RetryPolicy) -> Result<i32, Error> {
    asynchronous::retry(pool, policy, async |conn, attempt| {
        let mut counter: Counter = attempt.find(conn, 1).await?;
        counter.value += 1;
        counter.save_checked(conn).await?;
        Ok(counter.version)
    })
    .await
}

/// The pool's only connection is checked out elsewhere: the checkout waits
/// for the time left, not forever, and fails with a pool timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_default_pool_is_a_pool_timeout_within_the_deadline() {
    let db = test_db!();
    seed(&db);
    let pool = default_pool(&db);
    let held = pool.get().await.expect("the only connection");
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn(async move {
        let _ = tokio::time::timeout(HELD_FOR, released).await;
        drop(held);
    });
    let policy = RetryPolicy::new().deadline(DEADLINE);
    let started = Instant::now();
    let result = increment(&pool, &policy).await;
    let elapsed = started.elapsed();
    let _ = release.send(());
    holder.await.expect("holder");
    eprintln!("{}: {result:?} after {elapsed:?}", module_path!());
    let Err(Error::Pool(error)) = &result else {
        panic!("expected Error::Pool, got {result:?} after {elapsed:?}");
    };
    assert_eq!(error.kind(), PoolErrorKind::Timeout);
    assert!(elapsed < BOUND, "took {elapsed:?}");
    assert_eq!(row(&db), (10, 1), "nothing was written");
}

/// Another session holds row 1's lock: the escalated attempt's locking read
/// waits for the time left, and the helper gives up with the deadline
/// reached and a lock wait timeout. The connection went back to the pool
/// in step: the next call saves on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_row_lock_ends_the_escalated_read_within_the_deadline() {
    let db = test_db!();
    seed(&db);
    let pool = default_pool(&db);
    let (locked_tx, locked) = tokio::sync::oneshot::channel();
    let (release, released) = mpsc::channel::<()>();
    let mut holder = db.conn();
    let holder = std::thread::spawn(move || {
        holder.lock_counter(1);
        locked_tx.send(()).expect("the test waits");
        let _ = released.recv_timeout(HELD_FOR);
        holder.batch_execute("ROLLBACK").expect("release the lock");
    });
    locked.await.expect("the holder holds the lock");
    let policy = RetryPolicy::new().escalate_after(0).deadline(DEADLINE);
    let started = Instant::now();
    let result = increment(&pool, &policy).await;
    let elapsed = started.elapsed();
    let _ = release.send(());
    tokio::task::spawn_blocking(move || holder.join().expect("holder"))
        .await
        .expect("join");
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

    let saved = increment(&pool, &policy).await.expect("the lock is free");
    assert_eq!(saved, 2);
    assert_eq!(row(&db), (11, 2));
}
