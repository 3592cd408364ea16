//! Escalation on an async connection: after a conflict the retry helper's next
//! attempt reads the row with a lock and holds it until it commits, a row that
//! conflicted stays locked from the first read of later operations, and uncontended
//! work never takes a lock.

use std::sync::Mutex as StdMutex;
use std::time::Duration;

use diesel_occ::Error;
use diesel_occ::asynchronous as occ;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::{AsyncTestConnection, Backend};
use tokio::sync::Mutex;

use super::AsyncConn as Conn;
use super::counters::{Counter, load, quick, seed, try_plain_increment};
use crate::pools::{impatient, warm_pool};

/// The lock is gone with the commit: the other writer's plain increment lands at once.
async fn assert_unlocked(other: &Mutex<Conn>) {
    let unblocked = try_plain_increment(&mut *other.lock().await, 1).await;
    assert_eq!(unblocked.expect("unblocked"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_one_conflict_the_attempt_holds_the_row_lock_until_it_commits() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    let other = Mutex::new(impatient(&db).await);
    let seen = StdMutex::new(Vec::new());
    let result = occ::retry(
        &pool,
        &quick().max_attempts(3).escalate_after(1),
        async |conn, attempt| {
            let mut row: Counter = attempt.find(conn, 1).await?;
            // The other writer tries in every attempt, after the read.
            let blocked = try_plain_increment(&mut *other.lock().await, 1).await;
            let what = (attempt.number(), attempt.is_escalated(), blocked.is_err());
            seen.lock().unwrap().push(what);
            row.increment();
            row.save_checked(conn).await?;
            Ok(row)
        },
    )
    .await
    .expect("the escalated attempt wins");
    // Attempt 1 is lock-free and loses; attempt 2 holds the lock, so the other
    // writer cannot get in.
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen, [(1, false, false), (2, true, true)]);
    let stored = load(&mut db.conn().await, 1).await;
    assert_eq!(stored, result, "committed and visible");
    assert_eq!(stored.value, 2, "their first increment and ours");
    assert_unlocked(&other).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_row_that_conflicted_is_locked_from_the_first_read_of_the_next_operation() {
    let db = async_test_db!();
    seed(&db, 1).await;
    seed(&db, 2).await;
    let pool = warm_pool(&db, 2).await;
    let other = Mutex::new(impatient(&db).await);
    let policy = quick().max_attempts(3);
    let policy = policy.escalate_hot_rows(1, Duration::from_secs(3600));
    let seen = StdMutex::new(Vec::new());
    for id in [1, 1, 2] {
        occ::retry(&pool, &policy, async |conn, attempt| {
            let locks = attempt.locks_row::<Counter>(&id);
            let mut row: Counter = attempt.find(conn, id).await?;
            // The other writer tries in every attempt, after the read.
            let blocked = try_plain_increment(&mut *other.lock().await, id).await;
            let what = (id, attempt.number(), locks, blocked.is_err());
            seen.lock().unwrap().push(what);
            row.increment();
            row.save_checked(conn).await?;
            Ok(row)
        })
        .await
        .expect("every operation lands");
    }
    let sqlite = Conn::BACKEND == Backend::Sqlite;
    let row_two: &[(i32, u32, bool, bool)] = if sqlite {
        // While row 1 is hot every attempt runs in the helper's transaction,
        // and SQLite's `BEGIN IMMEDIATE` locks the whole database: the other
        // writer waits, so row 2's first attempt cannot lose.
        &[(2, 1, false, true)]
    } else {
        // Row 2 has its own history: cold until its own conflict.
        &[(2, 1, false, false), (2, 2, true, true)]
    };
    let mut expected = vec![
        // Row 1 is cold: the first read is lock-free, and loses.
        (1, 1, false, false),
        // The conflict made it hot: the retry locks it and wins.
        (1, 2, true, true),
        // The next operation locks it from its first read: no attempt lost.
        (1, 1, true, true),
    ];
    expected.extend_from_slice(row_two);
    assert_eq!(seen.into_inner().unwrap(), expected);
    // Every locking transaction was committed and the locks are gone.
    assert_eq!(load(&mut db.conn().await, 1).await.value, 3);
    let row_two = load(&mut db.conn().await, 2).await.value;
    assert_eq!(row_two, if sqlite { 1 } else { 2 });
    assert_unlocked(&other).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_escalated_attempt_leaves_nothing_written() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    let result: Result<(), Error> =
        occ::retry(&pool, &quick().escalate_after(0), async |conn, attempt| {
            assert!(attempt.is_escalated());
            let mut row: Counter = attempt.find(conn, 1).await?;
            row.increment();
            row.save_checked(conn).await?;
            // Not retryable: the loop ends and the transaction rolls back.
            Err(diesel::result::Error::NotFound.into())
        })
        .await;
    assert!(matches!(result, Err(Error::Database(_))), "{result:?}");
    let row = load(&mut db.conn().await, 1).await;
    assert_eq!((row.value, row.version), (0, 1), "rolled back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn low_contention_never_escalates() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    for _ in 0..20 {
        let attempt = occ::retry(&pool, &quick().escalate_after(1), async |conn, attempt| {
            let mut row: Counter = attempt.find(conn, 1).await?;
            row.increment();
            row.save_checked(conn).await?;
            Ok(attempt)
        })
        .await
        .expect("uncontended");
        assert_eq!((attempt.number(), attempt.is_escalated()), (1, false));
    }
    assert_eq!(load(&mut db.conn().await, 1).await.value, 20);
}
