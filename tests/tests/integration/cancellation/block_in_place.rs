//! Cancellation on `SyncConnectionWrapper<SqliteConnection, BlockInPlace>`: every
//! statement runs within one poll of its future, so a future can only be dropped
//! between statements; a retry dropped inside its escalated attempt still discards the
//! connection (rolling back and freeing SQLite's write lock), and futures dropped at
//! arbitrary points leave whole rows and a working pool, for both retry helpers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::asynchronous as occ;
use diesel_occ::asynchronous::prelude::*;

use super::AsyncConn as Conn;
use super::counters::{Counter, load, quick, seed, try_plain_increment};
use crate::pools::{Counting, impatient, warm_pool};

/// The blocking closure's increment, with the blocking API on the wrapped connection.
fn increment(
    conn: &mut diesel::SqliteConnection,
    attempt: &occ::Attempt,
) -> Result<Counter, diesel_occ::Error> {
    use diesel_occ::prelude::{AttemptDsl, CheckedDsl};
    let mut row: Counter = AttemptDsl::find(attempt, conn, 1)?;
    row.increment();
    CheckedDsl::save_checked(&mut row, conn)?;
    Ok(row)
}

/// The retry future is dropped while its escalated attempt has saved inside
/// `BEGIN IMMEDIATE` and awaits something else: the connection is discarded (closed),
/// so SQLite rolls back and the write lock is free at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_dropped_inside_an_escalated_attempt_rolls_back_and_frees_the_lock() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool: Pool<Conn> = warm_pool(&db, 2).await;
    let source = Counting::new(&pool);
    let saved = Arc::new(tokio::sync::Notify::new());
    let policy = quick().escalate_after(0);
    let retry = occ::retry(&source, &policy, async |conn, attempt| {
        let mut row: Counter = attempt.find(conn, 1).await?;
        row.increment();
        row.save_checked(conn).await?;
        saved.notify_one();
        std::future::pending::<()>().await;
        Ok(())
    });
    tokio::select! {
        _ = retry => panic!("the attempt never ends"),
        () = saved.notified() => {}
    }
    assert_eq!(
        source.discards(),
        1,
        "the attempt's connection is discarded"
    );
    let mut other = impatient(&db).await;
    try_plain_increment(&mut other, 1)
        .await
        .expect("the write lock is free at once");
    let row = load(&mut other, 1).await;
    assert_eq!(
        (row.value, row.version),
        (1, 2),
        "only the plain increment: the dropped attempt rolled back"
    );
    assert_eq!(
        pool.status().size,
        1,
        "the discarded connection left the pool"
    );
}

/// Futures of both helpers dropped at arbitrary points (between statements, during a
/// backoff, waiting for a checkout): every read sees whole writes, every acknowledged
/// write is stored, none twice, and the pool still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_retries_on_block_in_place_never_leave_a_half_applied_write() {
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
        let outcome = if run % 2 == 0 {
            tokio::time::timeout(
                deadline,
                occ::retry_in_blocking_task(&pool, &policy, |conn, attempt| {
                    increment(conn, &attempt)
                }),
            )
            .await
        } else {
            tokio::time::timeout(
                deadline,
                occ::retry(&pool, &policy, async |conn, attempt| {
                    let mut row: Counter = attempt.find(conn, 1).await?;
                    row.increment();
                    row.save_checked(conn).await?;
                    Ok(row)
                }),
            )
            .await
        };
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
    let stored = load(&mut checker, 1).await;
    stored.assert_whole();
    assert!(
        stored.value >= completed + 5 && stored.value <= completed + cancelled + 5,
        "every acknowledged write stored, none twice: {} for {completed} acknowledged, {cancelled} cancelled",
        stored.value
    );
    let after = occ::retry(&pool, &quick().max_attempts(10), async |conn, attempt| {
        let mut row: Counter = attempt.find(conn, 1).await?;
        row.increment();
        row.save_checked(conn).await?;
        Ok(row)
    })
    .await
    .expect("the pool is usable after all that");
    after.assert_whole();
    assert!(pool.status().size <= 3);
    eprintln!(
        "{}: {RUNS} runs (an increment takes {typical:?}): {completed} completed, {cancelled} cancelled",
        module_path!()
    );
}
