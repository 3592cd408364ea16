//! PostgreSQL primary and standby on async connections.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::{AsyncPgConnection as Conn, RunQueryDsl};
use diesel_occ::asynchronous as occ;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::schema::pg as schema;
use diesel_occ_tests::{Access, PgReplicasDb, connect_async};
use tokio::sync::Barrier;

use super::common::{
    ATTEMPT_BOUND, Counter, Increment, ROUNDS, WRITERS, bounded_policy, check_increments, seed_row,
};

async fn connect(url: &str) -> Conn {
    connect_async::<Conn>(url).await.expect("connect")
}

/// Seeds row 1 on the primary and waits until the standby has replayed it.
async fn seed(db: &PgReplicasDb) {
    diesel::insert_into(schema::counters::table)
        .values(seed_row())
        .execute(&mut connect(db.primary_url()).await)
        .await
        .expect("seed");
    db.wait_replayed();
}

/// Async twin: a standby read is stale while its replay is paused, current once it
/// resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_read_is_stale_while_its_replay_is_paused() {
    let db = pg_replicas_db!(Access::Exclusive);
    seed(&db).await;
    let mut standby = connect(db.standby_url()).await;
    assert_eq!(
        Counter::find(&mut standby, 1).await.expect("row 1"),
        seed_row()
    );

    let paused = db.pause_replay();
    let mut primary = connect(db.primary_url()).await;
    let mut row = Counter::find(&mut primary, 1).await.expect("row 1");
    row.value = 7;
    row.save_checked(&mut primary)
        .await
        .expect("the primary saves");
    let stale = Counter::find(&mut standby, 1).await.expect("row 1");
    assert_eq!((stale.value, stale.version), (0, 1), "the standby is stale");

    paused.resume();
    let caught_up = Counter::find(&mut standby, 1).await.expect("row 1");
    assert_eq!((caught_up.value, caught_up.version), (7, 2));
}

fn pool(url: &str) -> Pool<Conn> {
    Pool::builder(AsyncDieselConnectionManager::<Conn>::new(url))
        .max_size(WRITERS)
        .build()
        .expect("pool")
}

/// Async twin of the stale standby run: 4 writers in 5 rounds through the async
/// `retry_with_standby`, reads from the paused standby, saves on the primary. Only
/// each increment's first attempt reads the standby (stale, and conflicts); none takes
/// more than `1 + WRITERS` attempts; the row ends exact. The control retry that keeps
/// reading the standby never saves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_reading_a_stale_standby_lose_no_update_in_a_bounded_number_of_attempts() {
    let db = pg_replicas_db!(Access::Exclusive);
    seed(&db).await;
    let paused = db.pause_replay();
    let mut primary_conn = connect(db.primary_url()).await;
    let mut ahead = Counter::find(&mut primary_conn, 1).await.expect("row 1");
    ahead.value += 1;
    ahead
        .save_checked(&mut primary_conn)
        .await
        .expect("the primary saves");
    let (primary, standby) = (pool(db.primary_url()), pool(db.standby_url()));
    let policy = bounded_policy();
    let increments = Mutex::new(Vec::new());
    for _ in 0..ROUNDS {
        let everyone_read = Barrier::new(WRITERS);
        let writer = async || {
            let attempts = AtomicU32::new(0);
            let standby_reads = AtomicU32::new(0);
            let first_read_version = AtomicI32::new(0);
            let first_conflicted = AtomicBool::new(false);
            let (attempts_ref, standby_reads_ref) = (&attempts, &standby_reads);
            let (first_read_ref, first_conflicted_ref) = (&first_read_version, &first_conflicted);
            let everyone_read = &everyone_read;
            occ::retry_with_standby(&primary, &standby, &policy, async |conns, attempt| {
                attempts_ref.store(attempt.number(), Ordering::SeqCst);
                let from_standby = !conns.reads_from_primary();
                let read = match conns.read().await {
                    Ok(conn) => attempt.find::<Counter>(conn, 1).await,
                    Err(error) => Err(error),
                };
                standby_reads_ref.fetch_add(u32::from(from_standby), Ordering::SeqCst);
                if attempt.is_first() {
                    everyone_read.wait().await;
                }
                let mut row = read?;
                if attempt.is_first() {
                    first_read_ref.store(row.version, Ordering::SeqCst);
                }
                row.value += 1;
                let saved = row.save_checked(conns.write().await?).await;
                if attempt.is_first() {
                    first_conflicted_ref.store(
                        saved.as_ref().is_err_and(|e| e.is_conflict()),
                        Ordering::SeqCst,
                    );
                }
                saved
            })
            .await
            .unwrap_or_else(|e| panic!("saved within {ATTEMPT_BOUND} attempts: {e:?}"));
            Increment {
                attempts: AtomicU32::load(&attempts, Ordering::SeqCst),
                standby_reads: AtomicU32::load(&standby_reads, Ordering::SeqCst),
                first_read_version: AtomicI32::load(&first_read_version, Ordering::SeqCst),
                first_conflicted: AtomicBool::load(&first_conflicted, Ordering::SeqCst),
            }
        };
        const _: () = assert!(WRITERS == 4, "one future per writer below");
        let round = tokio::join!(writer(), writer(), writer(), writer());
        increments
            .lock()
            .unwrap()
            .extend([round.0, round.1, round.2, round.3]);
    }
    check_increments(&increments.into_inner().unwrap(), 1);

    let standby_ref = &standby;
    let control = occ::retry(
        &primary,
        &RetryPolicy::new().max_attempts(5),
        async |conn, _| {
            let mut standby_conn = standby_ref.get().await.expect("standby");
            let mut stale: Counter = Counter::find(&mut *standby_conn, 1).await?;
            stale.value += 1;
            stale.save_checked(conn).await
        },
    )
    .await;
    let exhausted = control.expect_err("a stale standby read never saves");
    assert!(
        matches!(&exhausted, diesel_occ::Error::RetriesExhausted(e) if e.attempts() == 5 && e.last_error().is_conflict()),
        "{exhausted:?}"
    );

    paused.resume();
    let total = i32::try_from(1 + WRITERS * ROUNDS).unwrap();
    for url in [db.primary_url(), db.standby_url()] {
        let row = Counter::find(&mut connect(url).await, 1)
            .await
            .expect("row 1");
        assert_eq!((row.value, row.version), (total, total + 1));
    }
}
