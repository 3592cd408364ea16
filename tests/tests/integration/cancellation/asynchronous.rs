//! Cancellation on an async connection: a retry or save future dropped at any point
//! leaves no half-applied write, no lock and no out-of-step connection in the pool;
//! a plain diesel-async transaction dropped the same way is the control.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_occ::Error;
use diesel_occ::asynchronous as occ;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::AsyncTestConnection;

use super::AsyncConn as Conn;
use super::counters::{Counter, connection_id, load, quick, seed, try_plain_increment};
use crate::pools::{Counting, impatient, warm_pool};

/// The retry future is dropped while its escalated attempt has saved and
/// holds the lock: the connection is discarded (closed), so the server
/// rolls back and the lock is free at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_a_retry_inside_an_escalated_attempt_rolls_back_and_frees_the_lock() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
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
    // The retry future is dropped here, after its save.
    assert_eq!(
        source.discards(),
        1,
        "the attempt's connection is discarded"
    );
    let mut other = impatient(&db).await;
    let row = load(&mut other, 1).await;
    assert_eq!((row.value, row.version), (0, 1), "nothing committed");
    // Nothing holds the lock any more: an impatient writer gets in at once.
    // (SQLite: the wrapper closes the connection when its blocking task
    // ends; wait for that briefly.)
    let mut tries = 0;
    while let Err(error) = try_plain_increment(&mut other, 1).await {
        tries += 1;
        assert!(tries < 20, "the lock outlived the dropped retry: {error}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        pool.status().size,
        1,
        "the discarded connection left the pool"
    );
    drop(
        pool.get()
            .await
            .expect("the pool still hands out connections"),
    );
}

/// A retry dropped while the server is still running its attempt's
/// statement: the attempt's connection is discarded, not returned, so the
/// pool never hands out a connection whose last response is unread (an
/// `AsyncMysqlConnection` returned in that state answers the next query
/// with the previous one's rows).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_dropped_mid_statement_leaves_no_out_of_step_connection_in_the_pool() {
    let db = async_test_db!();
    seed(&db, 1).await;
    // One connection: whatever the next checkout gets, it is not the old one.
    let pool = warm_pool(&db, 1).await;
    let source = Counting::new(&pool);
    let policy = quick().escalate_after(0);
    let before = connection_id(&mut pool.get().await.unwrap()).await;
    let cancelled = tokio::time::timeout(
        Duration::from_millis(100),
        occ::retry(&source, &policy, async |conn, attempt| {
            let mut row: Counter = attempt.find(conn, 1).await?;
            row.increment();
            row.save_checked(conn).await?;
            conn.batch_execute(Conn::SLOW_STATEMENT).await?;
            Ok(())
        }),
    )
    .await;
    assert!(cancelled.is_err(), "the timeout fired mid-statement");
    assert_eq!(source.discards(), 1);
    let mut conn = pool.get().await.expect("a new connection");
    assert_ne!(
        connection_id(&mut conn).await,
        before,
        "not the discarded one"
    );
    for _ in 0..5 {
        let row = load(&mut conn, 1).await;
        assert_eq!(
            (row.value, row.version),
            (0, 1),
            "the escalated save was rolled back"
        );
    }
}

/// The control: a plain diesel-async transaction future, dropped the same
/// way, keeps its transaction and locks on the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_a_dropped_plain_transaction_keeps_its_lock() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let mut conn = db.conn().await;
    let saved = Arc::new(tokio::sync::Notify::new());
    let notify = Arc::clone(&saved);
    {
        let transaction = conn.transaction::<(), Error, _>(async |conn| {
            let mut row: Counter = Counter::find(conn, 1).await?;
            row.increment();
            row.save_checked(conn).await?;
            notify.notify_one();
            std::future::pending::<()>().await;
            Ok(())
        });
        tokio::select! {
            _ = transaction => panic!("never ends"),
            () = saved.notified() => {}
        }
    }
    let mut other = impatient(&db).await;
    assert!(
        try_plain_increment(&mut other, 1).await.is_err(),
        "the dropped transaction still holds the lock"
    );
    drop(conn);
    let mut tries = 0;
    while try_plain_increment(&mut other, 1).await.is_err() {
        tries += 1;
        assert!(tries < 20, "closing the connection frees the lock");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let row = load(&mut other, 1).await;
    assert_eq!(
        (row.value, row.version),
        (1, 2),
        "only the other writer's increment"
    );
}

/// Futures dropped at arbitrary points: a few hundred saves and retries
/// under `tokio::time::timeout` with varied short deadlines. After every run
/// the row holds values and token of whole writes, and the pool still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_saves_and_retries_never_leave_a_half_applied_write() {
    const RUNS: u32 = 240;
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool: Pool<Conn> = warm_pool(&db, 3).await;
    let (mut completed, mut cancelled, mut conflicts) = (0, 0, 0);
    let mut checker = db.conn().await;
    // Deadlines from almost nothing to twice what a whole save takes here
    // and now, so that the cuts fall at every stage on a fast or a busy
    // machine alike.
    let typical = {
        let mut conn = pool.get().await.expect("pooled connection");
        let started = Instant::now();
        for _ in 0..5 {
            let mut row = load(&mut conn, 1).await;
            row.increment();
            row.save_checked(&mut *conn)
                .await
                .expect("uncontended save");
        }
        started.elapsed() / 5
    };
    for run in 0..RUNS {
        let deadline = Duration::from_micros(20) + typical * ((run * 379) % 200) / 100;
        let outcome = if run % 2 == 0 {
            let mut conn = pool.get().await.expect("pooled connection");
            let outcome = tokio::time::timeout(deadline, async {
                let mut row = load(&mut conn, 1).await;
                row.increment();
                row.save_checked(&mut *conn).await
            })
            .await;
            if outcome.is_err() {
                // A connection whose query future was dropped must not go
                // back to the pool: AsyncMysqlConnection can be left out of
                // step with the server (the next user then fails with
                // "cannot read a column value"). Detach and close it, as
                // the retry helper does with a cancelled attempt's.
                drop(Object::take(conn));
            }
            outcome
        } else {
            let policy = quick().max_attempts(5).escalate_after(run % 3);
            tokio::time::timeout(
                deadline,
                occ::retry(&pool, &policy, async |conn, attempt| {
                    let mut row: Counter = attempt.find(conn, 1).await?;
                    row.increment();
                    row.save_checked(conn).await
                }),
            )
            .await
        };
        match outcome {
            Ok(Ok(())) => completed += 1,
            Ok(Err(error)) if error.is_conflict() => conflicts += 1,
            Ok(Err(error)) => panic!("run {run}: {error:?}"),
            Err(_elapsed) => cancelled += 1,
        }
        load(&mut checker, 1).await.assert_whole();
    }
    // Writes whose futures were dropped after sending may land late; they
    // land whole, too.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = load(&mut checker, 1).await;
    before.assert_whole();
    assert!(
        before.value >= completed + 5,
        "every acknowledged write is stored"
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
        "{}: {RUNS} cancellation runs (a save takes {typical:?}): {completed} completed, {cancelled} cancelled, {conflicts} conflicts; {} writes stored",
        module_path!(),
        before.value - 5
    );
    assert!(cancelled > 0, "some deadlines cut the work short");
}
