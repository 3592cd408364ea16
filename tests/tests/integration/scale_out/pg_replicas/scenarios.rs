//! PostgreSQL primary and standby, in both flavours.

flavour_prelude!();

use std::sync::Mutex;
use std::time::Duration;

use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::schema::pg as schema;
use diesel_occ_tests::{Access, PgReplicasDb};

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

/// Writers and rounds of the standby run: each writer increments row 1 once a round, at once.
const WRITERS: usize = 4;
const ROUNDS: usize = 5;

/// The most attempts an increment of the standby run may take: the standby costs one (the
/// first, whose stale read conflicts), and on the primary, where each writer commits once a
/// round, an attempt can only lose to another writer's commit: `WRITERS - 1` times.
const ATTEMPT_BOUND: usize = 1 + WRITERS;

/// How one increment of the standby run went.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Increment {
    /// Attempts it took.
    attempts: u32,
    /// Attempts that read from the standby.
    standby_reads: u32,
    /// The token its first attempt read.
    first_read_version: i32,
    /// Whether its first attempt's save conflicted.
    first_conflicted: bool,
}

/// Checks the standby run's increments and prints their attempts; `stale_version` is the
/// token the paused standby shows.
fn check_increments(increments: &[Increment], stale_version: i32) {
    assert_eq!(increments.len(), WRITERS * ROUNDS);
    let mut histogram = [0usize; ATTEMPT_BOUND + 1];
    for increment in increments {
        // Only the first attempt read the standby: the stale row, and its save conflicted.
        let first = (increment.first_read_version, increment.first_conflicted);
        let seen = (increment.standby_reads, first);
        assert_eq!(seen, (1, (stale_version, true)), "{increment:?}");
        let attempts = increment.attempts as usize;
        let ok = (2..=ATTEMPT_BOUND).contains(&attempts);
        assert!(ok, "attempts beyond 2..={ATTEMPT_BOUND}: {increment:?}");
        histogram[attempts] += 1;
    }
    let n = increments.len();
    eprintln!("{n} increments, attempts per increment (index = attempts): {histogram:?}");
}

/// The policy of the standby run: at most [`ATTEMPT_BOUND`] attempts, short backoff.
fn bounded_policy() -> RetryPolicy {
    let policy = RetryPolicy::new().max_attempts(u32::try_from(ATTEMPT_BOUND).expect("small"));
    policy.backoff(Duration::from_millis(1), Duration::from_millis(20))
}

/// A new connection to `url`, set up as every test connection.
#[flavour(blocking)]
fn connect(url: &str) -> Conn {
    let mut conn = Conn::establish(url).expect("connect");
    conn.configure();
    conn
}

#[flavour(asynchronous)]
async fn connect(url: &str) -> Conn {
    diesel_occ_tests::connect_async(url).await.expect("connect")
}

/// A pool of `WRITERS` connections to `url`.
#[flavour(blocking)]
fn pool(url: &str) -> Pool<ConnectionManager<Conn>> {
    let builder = Pool::builder().max_size(u32::try_from(WRITERS).unwrap());
    builder.build(ConnectionManager::new(url)).expect("pool")
}

#[flavour(asynchronous)]
fn pool(url: &str) -> Pool<Conn> {
    let manager = AsyncDieselConnectionManager::<Conn>::new(url);
    let builder = Pool::builder(manager).max_size(WRITERS);
    builder.build().expect("pool")
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

/// Seeds row 1 (value 0 at token 1) on the primary; waits until the standby replayed it.
#[flavour]
async fn seed(db: &PgReplicasDb) {
    let mut primary = connect(db.primary_url()).await;
    insert_rows!(&mut primary, schema::counters::table, Counter::new(1, 0));
    db.wait_replayed();
}

/// Row 1, read on `conn`.
#[flavour]
async fn row1(conn: &mut Conn) -> Counter {
    Counter::find(conn, 1).await.expect("row 1")
}

/// Saves row 1 with `value` on the primary.
#[flavour]
async fn save_on_primary(db: &PgReplicasDb, value: i32) {
    let mut primary = connect(db.primary_url()).await;
    let mut row = row1(&mut primary).await;
    row.value = value;
    let saved = row.save_checked(&mut primary).await;
    saved.expect("the primary saves");
}

/// With the standby's replay paused, its read misses a change committed on the primary (as
/// the retry test below relies on); once replay resumes, the standby catches up.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_standby_read_is_stale_while_its_replay_is_paused() {
    let db = cluster_db!(PgReplicasDb, Access::Exclusive);
    seed(&db).await;
    let mut standby = connect(db.standby_url()).await;
    assert_eq!(row1(&mut standby).await, Counter::new(1, 0));

    let paused = db.pause_replay();
    save_on_primary(&db, 7).await;
    let stale = row1(&mut standby).await;
    assert_eq!((stale.value, stale.version), (0, 1), "the standby is stale");

    paused.resume();
    let caught_up = row1(&mut standby).await;
    assert_eq!((caught_up.value, caught_up.version), (7, 2));
}

/// With the standby's replay paused and the primary a write ahead, 4 writers increment row 1
/// through `retry_with_standby` in 5 rounds, all reading before any saves (a barrier). Each
/// first attempt reads the stale standby and conflicts, later ones the primary, within
/// `ATTEMPT_BOUND`; no update is lost. Control: a plain retry reading the standby never saves.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn writers_reading_a_stale_standby_lose_no_update_in_a_bounded_number_of_attempts() {
    let db = cluster_db!(PgReplicasDb, Access::Exclusive);
    seed(&db).await;
    let paused = db.pause_replay();
    // The primary moves on: the standby stays at token 1.
    save_on_primary(&db, 1).await;
    let (primary, standby) = (pool(db.primary_url()), pool(db.standby_url()));
    let policy = bounded_policy();
    let increments = Mutex::new(Vec::new());
    for _ in 0..ROUNDS {
        let everyone_read = Barrier::new(WRITERS);
        let round = all_writers(async || {
            // What the attempts saw, each updating it between its awaits.
            let seen = Mutex::new(Increment::default());
            let everyone_read = &everyone_read;
            let saved = retry_with_standby(&primary, &standby, &policy, async |conns, attempt| {
                let first = attempt.is_first();
                seen.lock().unwrap().attempts = attempt.number();
                let from_standby = !conns.reads_from_primary();
                let read = match conns.read().await {
                    Ok(conn) => attempt.find::<Counter>(conn, 1).await,
                    Err(error) => Err(error),
                };
                seen.lock().unwrap().standby_reads += u32::from(from_standby);
                if first {
                    let version = read.as_ref().map_or(0, |row| row.version);
                    seen.lock().unwrap().first_read_version = version;
                    everyone_read.wait().await;
                }
                let mut row = read?;
                row.value += 1;
                let saved = row.save_checked(conns.write().await?).await;
                if first {
                    seen.lock().unwrap().first_conflicted =
                        saved.as_ref().is_err_and(|e| e.is_conflict());
                }
                saved
            });
            saved
                .await
                .unwrap_or_else(|e| panic!("saved within {ATTEMPT_BOUND} attempts: {e:?}"));
            seen.into_inner().unwrap()
        })
        .await;
        increments.lock().unwrap().extend(round);
    }
    check_increments(&increments.into_inner().unwrap(), 1);

    // The control: reading from the stale standby on every attempt never succeeds.
    let (standby_ref, policy) = (&standby, RetryPolicy::new().max_attempts(5));
    let control = retry(&primary, &policy, async |conn, _| {
        let mut standby_conn = standby_ref.get().await.expect("standby");
        let mut stale: Counter = Counter::find(&mut *standby_conn, 1).await?;
        stale.value += 1;
        stale.save_checked(conn).await
    })
    .await;
    let Err(diesel_occ::Error::RetriesExhausted(exhausted)) = &control else {
        panic!("a stale standby read never saves: {control:?}");
    };
    let gave_up = exhausted.attempts() == 5 && exhausted.last_error().is_conflict();
    assert!(gave_up, "{exhausted:?}");

    paused.resume();
    let total = i32::try_from(1 + WRITERS * ROUNDS).unwrap();
    for url in [db.primary_url(), db.standby_url()] {
        let row = row1(&mut connect(url).await).await;
        assert_eq!((row.value, row.version), (total, total + 1));
    }
}
