//! The async retry helper through a deadpool pool: a fresh checkout per attempt, on a
//! distinct server connection, exhaustion after exactly N, deadlines and the hot row.
//!
//! Races are forced: writers meet at a `tokio::sync::Barrier` after they have read,
//! and interference inside a retry attempt runs at a fixed point of the attempt.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::time::{Duration, Instant};

use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::asynchronous as occ;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::AsyncTestDb;
use tokio::sync::{Barrier, Mutex};

use super::counters::{Counter, bump, connection_id, exhausted, load, quick, seed};
use super::{AsyncConn as Conn, schema};
use crate::pools::{Counting, warm_pool};

#[derive(Debug, PartialEq)]
struct SoldOut;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retry_futures_are_send_and_run_on_spawned_tasks() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let policy = quick().max_attempts(50).escalate_after(1);
                occ::retry(&pool, &policy, async |conn, attempt| {
                    let mut row: Counter = attempt.find(conn, 1).await?;
                    row.increment();
                    row.save_checked(conn).await?;
                    Ok(row.value)
                })
                .await
            })
        })
        .collect();
    let mut values = Vec::new();
    for task in tasks {
        values.push(task.await.expect("task").expect("retry"));
    }
    values.sort();
    assert_eq!(values, [1, 2, 3, 4]);
    load(&mut db.conn().await, 1).await.assert_whole();
}

/// Deadpool hands idle connections out first in, first out; the pool has
/// four warm idle connections, so if every attempt really returns its
/// connection and checks one out anew, four attempts land on four distinct
/// server connections (PostgreSQL `pg_backend_pid()`, MariaDB
/// `CONNECTION_ID()`, on SQLite a random id each connection stores in a
/// TEMP table when it opens).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_attempt_runs_on_a_distinct_server_connection_until_exactly_n() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 4).await;
    let source = Counting::new(&pool);
    let other = Mutex::new(db.conn().await);
    let other_id = connection_id(&mut *other.lock().await).await;
    let seen = StdMutex::new(Vec::new());
    let last_bump = StdMutex::new(0);

    let result: Result<(), Error> =
        occ::retry(&source, &quick().max_attempts(4), async |conn, attempt| {
            let id = connection_id(conn).await;
            let in_use = pool.status().size - pool.status().available;
            seen.lock().unwrap().push((attempt.number(), id, in_use));
            let mut row: Counter = attempt.find(conn, 1).await?;
            // Another writer commits between the read and the save, always.
            *last_bump.lock().unwrap() = bump(&mut *other.lock().await, 1).await;
            row.increment();
            row.save_checked(conn).await
        })
        .await;

    let exhausted = exhausted(result);
    assert_eq!(exhausted.attempts(), 4);
    assert!(!exhausted.deadline_reached());
    let conflict = exhausted.last_conflict().expect("the last conflict");
    assert_eq!(conflict.current::<i32>(), Some(*last_bump.lock().unwrap()));

    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert!(
        seen.iter().all(|s| s.2 == 1),
        "one connection out at a time: {seen:?}"
    );
    let ids: HashSet<i64> = seen.iter().map(|s| s.1).collect();
    assert_eq!(ids.len(), 4, "four distinct server connections: {seen:?}");
    assert!(!ids.contains(&other_id));
    assert_eq!(source.checkouts(), 4, "one checkout per attempt");
    assert_eq!(source.discards(), 0, "clean attempts go back");
    assert_eq!(pool.status().available, 4, "every connection returned");
    load(&mut db.conn().await, 1).await.assert_whole();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_connecting_source_runs_each_attempt_on_a_new_server_connection() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let url = db.url().to_owned();
    let source = || diesel_occ_tests::connect_async::<Conn>(&url);
    let other = Mutex::new(db.conn().await);
    let seen = StdMutex::new(Vec::new());
    let result: Result<(), Error> =
        occ::retry(&source, &quick().max_attempts(4), async |conn, attempt| {
            let id = connection_id(conn).await;
            seen.lock().unwrap().push(id);
            let mut row: Counter = attempt.find(conn, 1).await?;
            bump(&mut *other.lock().await, 1).await;
            row.increment();
            row.save_checked(conn).await
        })
        .await;
    assert_eq!(exhausted(result).attempts(), 4);
    let seen = seen.into_inner().unwrap();
    let ids: HashSet<i64> = seen.iter().copied().collect();
    assert_eq!(ids.len(), 4, "four server connections: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_domain_outcome_ends_the_loop_after_one_attempt() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    let source = Counting::new(&pool);
    let outcome = occ::retry(&source, &quick(), async |conn, attempt| {
        let row: Counter = attempt.find(conn, 1).await?;
        if row.value < 5 {
            return Ok(Err(SoldOut));
        }
        Ok(Ok(row.value))
    })
    .await
    .expect("a domain outcome is not an error");
    assert_eq!(outcome, Err(SoldOut));
    assert_eq!(source.checkouts(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_deadline_stops_a_perpetual_conflict() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    let other = Mutex::new(db.conn().await);
    let budget = Duration::from_millis(300);
    let policy = RetryPolicy::new()
        .max_attempts(10_000)
        .backoff(Duration::from_millis(1), Duration::from_millis(10))
        .deadline(budget);
    let started = Instant::now();
    let starts = StdMutex::new(Vec::new());
    let result: Result<(), Error> = occ::retry(&pool, &policy, async |conn, attempt| {
        starts.lock().unwrap().push(started.elapsed());
        let mut row: Counter = attempt.find(conn, 1).await?;
        bump(&mut *other.lock().await, 1).await;
        row.increment();
        row.save_checked(conn).await
    })
    .await;
    let elapsed = started.elapsed();
    let exhausted = exhausted(result);
    assert!(exhausted.deadline_reached(), "{exhausted:?}");
    assert!(exhausted.attempts() < 10_000);
    assert!(exhausted.last_error().is_conflict());
    let starts = starts.into_inner().unwrap();
    assert_eq!(starts.len() as u32, exhausted.attempts());
    // Generous bounds: no attempt starts long after the budget and the loop
    // does not run on for long.
    assert!(
        starts.iter().all(|s| *s < budget + Duration::from_secs(2)),
        "{starts:?}"
    );
    assert!(elapsed < budget + Duration::from_secs(10), "{elapsed:?}");
    eprintln!(
        "{}: deadline {budget:?}: {} attempts in {elapsed:?}",
        module_path!(),
        exhausted.attempts()
    );
}

// ---- the hot row ----

const WORKERS: usize = 8;
const INCREMENTS: usize = 250;

/// Eight tasks run 250 retried increments each on one row under `policy`; returns the
/// attempts they took. Every increment must land, and no operation may need more than
/// two attempts: its second one holds the lock.
async fn eight_workers_times_250_increments(db: &AsyncTestDb<Conn>, policy: &RetryPolicy) -> u32 {
    let pool = warm_pool(db, WORKERS).await;
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let pool = pool.clone();
            let policy = policy.clone();
            tokio::spawn(async move {
                let (mut attempts, mut escalated) = (0_u32, 0_u32);
                for _ in 0..INCREMENTS {
                    let (number, locked) = occ::retry(&pool, &policy, async |conn, attempt| {
                        let mut row: Counter = attempt.find(conn, 1).await?;
                        row.increment();
                        row.save_checked(conn).await?;
                        Ok((attempt.number(), attempt.is_escalated()))
                    })
                    .await
                    .expect("every increment lands within the policy");
                    attempts += number;
                    escalated += u32::from(locked);
                    assert!(number <= 2, "an attempt that holds the lock cannot lose");
                }
                (attempts, escalated)
            })
        })
        .collect();
    let (mut attempts, mut escalated) = (0, 0);
    for worker in workers {
        let (a, e) = worker.await.expect("worker");
        attempts += a;
        escalated += e;
    }
    let row = load(&mut db.conn().await, 1).await;
    assert_eq!(
        row.value,
        (WORKERS * INCREMENTS) as i32,
        "no increment lost"
    );
    row.assert_whole();
    eprintln!(
        "{}: hot row {WORKERS}x{INCREMENTS} ({policy:?}): {attempts} attempts, {escalated} escalated, {:?}",
        module_path!(),
        started.elapsed()
    );
    attempts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_times_250_retried_increments_end_at_exactly_2000() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let policy = RetryPolicy::new()
        .max_attempts(100)
        .backoff(Duration::ZERO, Duration::from_millis(2))
        .escalate_after(1);
    eight_workers_times_250_increments(&db, &policy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_a_hot_row_each_worker_loses_at_most_one_attempt_in_250_increments() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let policy = RetryPolicy::new()
        .max_attempts(100)
        .backoff(Duration::ZERO, Duration::from_millis(2))
        .escalate_hot_rows(1, Duration::from_secs(3600));
    let attempts = eight_workers_times_250_increments(&db, &policy).await;
    // After the row's first conflict every read of it takes the lock, so only a read
    // that started before that conflict can lose: at most one per worker.
    assert!(
        attempts <= (WORKERS * INCREMENTS + WORKERS) as u32,
        "{attempts} attempts for 2000 increments"
    );
}

/// The control: the same load through plain load-mutate-save. Every round,
/// all eight workers read, meet at a barrier, write `read + 1` and meet
/// again, so each round adds exactly one: 250, not 2000, by construction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_the_same_load_through_plain_load_mutate_save_loses_updates() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let barrier = Arc::new(Barrier::new(WORKERS));
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let mut conn = db.conn().await;
        let barrier = Arc::clone(&barrier);
        workers.push(tokio::spawn(async move {
            for _ in 0..INCREMENTS {
                let row = load(&mut conn, 1).await;
                barrier.wait().await;
                use schema::counters::dsl::*;
                diesel::update(counters.find(1))
                    .set(value.eq(row.value + 1))
                    .execute(&mut conn)
                    .await
                    .expect("plain write");
                barrier.wait().await;
            }
        }));
    }
    for worker in workers {
        worker.await.expect("worker");
    }
    let row = load(&mut db.conn().await, 1).await;
    assert_eq!(row.value, INCREMENTS as i32, "7 of every 8 increments lost");
    assert!(row.value < (WORKERS * INCREMENTS) as i32);
}
