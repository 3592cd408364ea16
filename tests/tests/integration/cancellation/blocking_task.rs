//! Cancellation of `asynchronous::retry_in_blocking_task` (SQLite through
//! `SyncConnectionWrapper`): a blocking task cannot be stopped, so a dropped future lets
//! its running attempt finish whole on its blocking thread (diesel-async's wrapper makes
//! the drop wait for it), discards that attempt's connection (never back in the pool,
//! never in an open transaction) and starts no further attempt; every write lands whole
//! and at most once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use diesel_async::TransactionManager;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::asynchronous as occ;
use diesel_occ::prelude::{AttemptDsl, CheckedDsl};

use super::AsyncConn as Conn;
use super::counters::{Counter, connection_id, load, quick, seed, try_plain_increment};
use crate::pools::{Counting, impatient, warm_pool};

/// The blocking closure's increment, with the blocking API on the wrapped connection.
fn increment(
    conn: &mut diesel::SqliteConnection,
    attempt: &occ::Attempt,
) -> Result<Counter, diesel_occ::Error> {
    let mut row: Counter = attempt.find(conn, 1)?;
    row.increment();
    row.save_checked(conn)?;
    Ok(row)
}

/// The future is dropped while its escalated attempt has saved inside `BEGIN IMMEDIATE`
/// and is still running on its blocking thread. diesel-async's wrapper makes the drop
/// wait for that blocking task, so once the drop returns the attempt has ended: its
/// transaction committed exactly once, the write lock is free, the connection left the
/// pool (discarded, never returned), no later attempt ran, and the pool hands out a
/// fresh connection outside any transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_blocking_task_retry_finishes_its_attempt_whole_and_discards_the_connection() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool: Pool<Conn> = warm_pool(&db, 1).await;
    let before = connection_id(&mut pool.get().await.expect("pooled")).await;
    let source = Counting::new(&pool);
    let policy = quick().escalate_after(0);
    let saved = Arc::new(tokio::sync::Notify::new());
    let (go, wait) = mpsc::channel::<()>();
    let notify = Arc::clone(&saved);
    let attempts = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&attempts);
    let retry = occ::retry_in_blocking_task(&source, &policy, move |conn, attempt| {
        counted.fetch_add(1, Ordering::SeqCst);
        assert!(attempt.runs_in_transaction());
        let row = increment(conn, &attempt)?;
        notify.notify_one();
        // Holds the write lock until the test says go.
        let _ = wait.recv_timeout(Duration::from_secs(10));
        Ok(row)
    });
    tokio::select! {
        _ = retry => panic!("the attempt waits for the test"),
        () = saved.notified() => {
            // Let the attempt go on a little after the drop has started.
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                let _ = go.send(());
            });
        }
    }
    // The future was dropped at the end of the select, its attempt running.
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "no attempt after the drop"
    );
    assert_eq!(
        source.discards(),
        1,
        "the attempt's connection is discarded"
    );
    assert_eq!(
        pool.status().size,
        0,
        "the discarded connection left the pool"
    );
    let mut other = impatient(&db).await;
    let row = load(&mut other, 1).await;
    assert_eq!(
        (row.value, row.version),
        (1, 2),
        "the dropped attempt's write committed whole, once"
    );
    try_plain_increment(&mut other, 1)
        .await
        .expect("the write lock is free once the drop returned");
    let mut fresh = pool
        .get()
        .await
        .expect("the pool still hands out connections");
    assert_ne!(connection_id(&mut fresh).await, before, "a new connection");
    assert_eq!(
        <Conn as diesel_async::AsyncConnection>::TransactionManager::transaction_manager_status_mut(
            &mut fresh
        )
        .transaction_depth()
        .expect("a usable transaction manager"),
        None,
        "not inside a transaction"
    );
    drop(fresh);
    let after =
        occ::retry_in_blocking_task(&pool, &quick(), |conn, attempt| increment(conn, &attempt))
            .await
            .expect("the pool works after the drop");
    assert_eq!((after.value, after.version), (3, 4));
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "the dropped retry never ran again"
    );
}

/// Futures dropped at arbitrary points, optimistic and escalated attempts alike: every
/// read sees a row written only by whole writes, every acknowledged write is stored,
/// and the pool still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_blocking_task_retries_never_leave_a_half_applied_write() {
    const RUNS: u32 = 160;
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool: Pool<Conn> = warm_pool(&db, 3).await;
    let mut checker = db.conn().await;
    let typical = {
        let started = Instant::now();
        for _ in 0..5 {
            occ::retry_in_blocking_task(&pool, &quick(), |conn, attempt| increment(conn, &attempt))
                .await
                .expect("uncontended increment");
        }
        started.elapsed() / 5
    };
    let (mut completed, mut cancelled) = (0, 0);
    for run in 0..RUNS {
        let deadline = Duration::from_micros(20) + typical * ((run * 379) % 200) / 100;
        let policy = quick().max_attempts(5).escalate_after(run % 3);
        let outcome = tokio::time::timeout(
            deadline,
            occ::retry_in_blocking_task(&pool, &policy, |conn, attempt| increment(conn, &attempt)),
        )
        .await;
        match outcome {
            Ok(Ok(row)) => {
                row.assert_whole();
                completed += 1;
            }
            Ok(Err(error)) => panic!("run {run}: {error:?}"),
            Err(_elapsed) => cancelled += 1,
        }
        load(&mut checker, 1).await.assert_whole();
    }
    // Attempts whose futures were dropped finish on their threads; they land whole.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stored = load(&mut checker, 1).await;
    stored.assert_whole();
    assert!(
        stored.value >= completed + 5,
        "every acknowledged write is stored: {} < {}",
        stored.value,
        completed + 5
    );
    assert!(
        stored.value <= completed + cancelled + 5,
        "no write is applied twice: {} > {}",
        stored.value,
        completed + cancelled + 5
    );
    let after = occ::retry_in_blocking_task(&pool, &quick().max_attempts(10), |conn, attempt| {
        increment(conn, &attempt)
    })
    .await
    .expect("the pool is usable after all that");
    after.assert_whole();
    assert!(pool.status().size <= 3);
    eprintln!(
        "{}: {RUNS} runs (an increment takes {typical:?}): {completed} completed, {cancelled} cancelled",
        module_path!()
    );
    assert!(cancelled > 0, "some deadlines cut the work short");
}
