//! PostgreSQL primary and standby, in both flavours.

flavour_prelude!();

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::schema::pg as schema;
use diesel_occ_tests::{Access, PgReplicasDb};

use super::common::{
    ATTEMPT_BOUND, Counter, Increment, ROUNDS, WRITERS, bounded_policy, check_increments, seed_row,
};

#[flavour(blocking)]
use {
    diesel::r2d2::{ConnectionManager, Pool},
    diesel_occ::blocking::{retry, retry_with_standby},
    std::{sync::Barrier, thread},
};

#[flavour(asynchronous)]
use {
    diesel_async::pooled_connection::AsyncDieselConnectionManager,
    diesel_async::pooled_connection::deadpool::Pool,
    diesel_occ::asynchronous::{retry, retry_with_standby},
    tokio::sync::Barrier,
};

/// A new connection to `url`, set up as every test connection.
#[flavour(blocking)]
fn connect(url: &str) -> Conn {
    let mut conn = Conn::establish(url).expect("connect");
    conn.configure();
    conn
}

/// A new connection to `url`, set up as every async test connection.
#[flavour(asynchronous)]
async fn connect(url: &str) -> Conn {
    diesel_occ_tests::connect_async(url).await.expect("connect")
}

/// A pool of `WRITERS` connections to `url`.
#[flavour(blocking)]
fn pool(url: &str) -> Pool<ConnectionManager<Conn>> {
    Pool::builder()
        .max_size(u32::try_from(WRITERS).unwrap())
        .build(ConnectionManager::new(url))
        .expect("pool")
}

/// A pool of `WRITERS` connections to `url`.
#[flavour(asynchronous)]
fn pool(url: &str) -> Pool<Conn> {
    Pool::builder(AsyncDieselConnectionManager::<Conn>::new(url))
        .max_size(WRITERS)
        .build()
        .expect("pool")
}

/// Runs `writer` [`WRITERS`] times at once, each on a thread of its own.
#[flavour(blocking)]
fn all_writers<T: Send>(writer: impl Fn() -> T + Sync) -> Vec<T> {
    thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS).map(|_| scope.spawn(&writer)).collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

/// Polls `writer` [`WRITERS`] times together on the test's task.
#[flavour(asynchronous)]
async fn all_writers<T>(writer: impl AsyncFn() -> T) -> Vec<T> {
    const _: () = assert!(WRITERS == 4, "one future per writer below");
    let (a, b, c, d) = tokio::join!(writer(), writer(), writer(), writer());
    vec![a, b, c, d]
}

/// Seeds row 1 on the primary and waits until the standby has replayed it.
#[flavour]
async fn seed(db: &PgReplicasDb) {
    diesel::insert_into(schema::counters::table)
        .values(seed_row())
        .execute(&mut connect(db.primary_url()).await)
        .await
        .expect("seed");
    db.wait_replayed();
}

/// With the standby's replay paused, a change committed on the primary is not seen on
/// the standby: its read is stale (what the retry tests below rely on). Once replay
/// resumes, the standby catches up.
#[flavour]
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

/// With the standby's replay paused and the primary one write ahead, 4 writers
/// increment row 1 through `retry_with_standby` in 5 rounds, all writers of a round
/// reading (from the standby) before any of them saves (a barrier in the first
/// attempt). Every increment's first attempt reads the stale row and conflicts on the
/// primary; every later attempt reads the primary; no increment takes more than
/// `1 + WRITERS` attempts (the policy allows no more); no update is lost: the row ends
/// at exactly one more than the writes. The control: a plain retry that keeps reading
/// the stale standby never gets a save in.
#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_reading_a_stale_standby_lose_no_update_in_a_bounded_number_of_attempts() {
    let db = pg_replicas_db!(Access::Exclusive);
    seed(&db).await;
    let paused = db.pause_replay();
    // The primary moves on: the standby stays at token 1.
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
        let round = all_writers(async || {
            let attempts = AtomicU32::new(0);
            let standby_reads = AtomicU32::new(0);
            let first_read_version = AtomicI32::new(0);
            let first_conflicted = AtomicBool::new(false);
            let (attempts_ref, standby_reads_ref) = (&attempts, &standby_reads);
            let (first_read_ref, first_conflicted_ref) = (&first_read_version, &first_conflicted);
            let everyone_read = &everyone_read;
            retry_with_standby(&primary, &standby, &policy, async |conns, attempt| {
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
        })
        .await;
        increments.lock().unwrap().extend(round);
    }
    check_increments(&increments.into_inner().unwrap(), 1);

    // The control: reading from the stale standby on every attempt never succeeds.
    let standby_ref = &standby;
    let control = retry(
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
