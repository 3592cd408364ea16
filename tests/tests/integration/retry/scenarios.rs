//! The retry helper on real servers, in both flavours: one checkout per attempt, one
//! connection out during it, all back before the backoff. The flavours' pools hand out
//! idle connections in different orders (see `check_server_connections`).
//!
//! Races are forced: interference inside an attempt runs at a fixed point of the
//! attempt, and the control's writers meet at a barrier.

flavour_prelude!();

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

#[flavour(blocking)]
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::sql_types::BigInt;
#[flavour(asynchronous)]
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::{Error, PoolError};
use diesel_occ_tests::entities::Counter;

#[flavour(blocking)]
use std::sync::{Barrier, Mutex, MutexGuard};
#[flavour(asynchronous)]
use tokio::sync::{Barrier, Mutex, MutexGuard};

use super::counters::{exhausted, quick};
use crate::pools::Counting;

/// Test settings and a readable identity on every pooled connection.
#[flavour(blocking)]
#[derive(Debug)]
struct Setup;

#[flavour(blocking)]
impl CustomizeConnection<Conn, diesel::r2d2::Error> for Setup {
    fn on_acquire(&self, conn: &mut Conn) -> Result<(), diesel::r2d2::Error> {
        conn.configure();
        conn.batch_execute(Conn::IDENTITY_SETUP)
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// The flavour's pool of test connections.
#[flavour(blocking)]
type TestPool = Pool<ConnectionManager<Conn>>;

#[flavour(asynchronous)]
type TestPool = Pool<Conn>;

/// An r2d2 pool of `size` connections, all opened before the test starts.
#[flavour(blocking)]
fn pool(db: &TestDb<Conn>, size: usize) -> TestPool {
    let size = u32::try_from(size).expect("a pool's size");
    Pool::builder()
        .max_size(size)
        .min_idle(Some(size))
        .connection_customizer(Box::new(Setup))
        .build(ConnectionManager::new(db.url()))
        .expect("r2d2 pool")
}

/// Deadpool's pool of `size` connections, all opened before the test starts.
#[flavour(asynchronous)]
async fn pool(db: &TestDb<Conn>, size: usize) -> TestPool {
    crate::pools::warm_pool(db, size).await
}

/// How many of the pool's connections are checked out.
#[flavour(blocking)]
fn in_use(pool: &TestPool) -> u32 {
    pool.state().connections - pool.state().idle_connections
}

#[flavour(asynchronous)]
fn in_use(pool: &TestPool) -> u32 {
    u32::try_from(pool.status().size - pool.status().available).expect("a count")
}

/// A source that opens a new test connection for every attempt.
#[flavour(blocking)]
fn connecting(url: &str) -> impl Source<Connection = Conn> {
    move || -> Result<Conn, PoolError> {
        let mut conn = Conn::establish(url)?;
        conn.configure();
        conn.batch_execute(Conn::IDENTITY_SETUP).expect("id setup");
        Ok(conn)
    }
}

#[flavour(asynchronous)]
fn connecting(url: &str) -> impl Source<Connection = Conn> {
    || diesel_occ_tests::connect_async::<Conn>(url)
}

/// r2d2 hands the connection an attempt gave back to the next one (last in, first
/// out): the same server connection, checked out anew.
#[flavour(blocking)]
fn check_server_connections(seen: &[(u32, i64, u32)]) {
    let (ids, module): (Vec<i64>, _) = (seen.iter().map(|s| s.1).collect(), module_path!());
    eprintln!("{module}: r2d2 server connections per attempt (LIFO): {ids:?}");
}

/// Deadpool hands idle connections out first in, first out: four attempts from a warm
/// pool of four land on four server connections.
#[flavour(asynchronous)]
fn check_server_connections(seen: &[(u32, i64, u32)]) {
    let ids: HashSet<i64> = seen.iter().map(|s| s.1).collect();
    assert_eq!(ids.len(), 4, "four distinct server connections: {seen:?}");
}

/// The identity of the server connection (`CONNECTION_ID`: PostgreSQL's backend pid,
/// MariaDB's `CONNECTION_ID()`, on SQLite a random id stored when the connection opens).
#[flavour]
async fn connection_id(conn: &mut Conn) -> i64 {
    let query = diesel::select(diesel::dsl::sql::<BigInt>(Conn::CONNECTION_ID));
    query.get_result(conn).await.expect("connection id")
}

/// Rows 1 and 2 of `counters`, at value 0.
#[flavour]
async fn seed_two(db: &TestDb<Conn>) {
    let insert = "INSERT INTO counters (id, value, label, version) \
                  VALUES (1, 0, '0', 1), (2, 0, '0', 1)";
    raw_sql(db, insert).await;
}

/// Rows 1 and 2 at value 0, and a pool of `size` connections.
#[flavour]
async fn seeded(db: &TestDb<Conn>, size: usize) -> TestPool {
    seed_two(db).await;
    pool(db, size).await
}

/// Rows 1 and 2 as they stand.
#[flavour]
async fn rows(db: &TestDb<Conn>) -> (Counter, Counter) {
    let mut conn = db.conn().await;
    let one = Counter::find(&mut conn, 1).await.expect("row 1");
    (one, Counter::find(&mut conn, 2).await.expect("row 2"))
}

/// Another writer's checked increment of row `id`, on a connection of its own.
#[flavour]
async fn bump(db: &TestDb<Conn>, id: i32) {
    let mut conn = db.conn().await;
    let mut row = Counter::find(&mut conn, id).await.expect("row");
    row.increment();
    row.save_checked(&mut conn).await.expect("the other writer");
}

/// An attempt's increment of row `id`, which another writer overtakes between its read
/// and its save.
#[flavour]
async fn overtaken(db: &TestDb<Conn>, conn: &mut Conn, at: &Attempt, id: i32) -> Result<(), Error> {
    let mut row: Counter = at.find(conn, id).await?;
    bump(db, id).await;
    row.increment();
    row.save_checked(conn).await
}

/// An attempt's increment of row 1; returns the value it saved.
#[flavour]
async fn increment(conn: &mut Conn, attempt: &Attempt) -> Result<i32, Error> {
    let mut row: Counter = attempt.find(conn, 1).await?;
    row.increment();
    row.save_checked(conn).await?;
    Ok(row.value)
}

/// Runs attempts through `source` that another writer always overtakes between read
/// and save, until the helper gives up after exactly `attempts` with the last
/// conflict's token; returns each attempt's number, server connection and how many of
/// `pool`'s connections were out during it.
#[flavour]
async fn perpetually_overtaken<S: Source<Connection = Conn>>(
    db: &TestDb<Conn>,
    source: &S,
    pool: &TestPool,
    attempts: u32,
) -> Vec<(u32, i64, u32)> {
    let seen = std::sync::Mutex::new(Vec::new());
    let policy = quick().max_attempts(attempts);
    let result: Result<(), Error> = retry(source, &policy, async |conn, attempt| {
        let at = (attempt.number(), connection_id(conn).await, in_use(pool));
        seen.lock().unwrap().push(at);
        overtaken(db, conn, &attempt, 1).await
    })
    .await;
    let exhausted = exhausted(result);
    assert_eq!(exhausted.attempts(), attempts);
    assert!(!exhausted.deadline_reached());
    // The last conflict names the token the last other writer left in the row.
    let conflict = exhausted.last_conflict().expect("the last conflict");
    assert_eq!(conflict.current::<i32>(), Some(rows(db).await.0.version));
    seen.into_inner().unwrap()
}

/// A backoff no test waits out, for a row's hot mark.
const HOUR: Duration = Duration::from_secs(3600);

/// Makes row `id` hot in `policy`'s memory: one attempt that another writer overtakes.
#[flavour]
async fn make_hot<S: Source<Connection = Conn>>(
    db: &TestDb<Conn>,
    source: &S,
    policy: &RetryPolicy,
    id: i32,
) {
    let once = policy.clone().max_attempts(1);
    let _ = retry(source, &once, async |c, at| overtaken(db, c, &at, id).await).await;
    let memory = policy.hot_row_memory().expect("a memory");
    assert!(memory.is_hot::<Counter>(&id));
}

/// Writes row 2, then fails to write row 1 (a stale token), inside the closure's own
/// transaction when `own` is set.
#[flavour]
async fn two_rows(conn: &mut Conn, attempt: &Attempt, own: bool) -> Result<(), Error> {
    let change = async |conn: &mut Conn| -> Result<(), Error> {
        // The cold row first, then the hot one, whose write fails.
        let mut cold: Counter = attempt.find(conn, 2).await?;
        cold.increment();
        cold.save_checked(conn).await?;
        let mut hot: Counter = attempt.find(conn, 1).await?;
        hot.increment();
        hot.version += 100;
        hot.save_checked(conn).await
    };
    if own {
        conn.transaction(change).await
    } else {
        change(conn).await
    }
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn a_two_row_change_lands_whole_or_not_at_all_as_the_atomicity_rule_says() {
    let db = db!();
    let pool = seeded(&db, 2).await;
    let hot = quick().max_attempts(1).escalate_hot_rows(1, HOUR);
    make_hot(&db, &pool, &hot, 1).await;
    let plain = quick().max_attempts(1);
    let escalated = plain.clone().escalate_after(0);
    let cases = [
        ("optimistic", plain.clone(), false),
        ("optimistic, closure's transaction", plain, true),
        ("escalated", escalated.clone(), false),
        ("escalated, closure's transaction", escalated, true),
        ("hot row", hot.clone(), false),
        ("hot row, closure's transaction", hot, true),
    ];
    for (kind, policy, own) in cases {
        let before = rows(&db).await;
        let result = retry(&pool, &policy, async |c, at| two_rows(c, &at, own).await).await;
        let exhausted = matches!(result, Err(Error::RetriesExhausted(_)));
        assert!(exhausted, "{kind}: {result:?}");
        let after = rows(&db).await;
        if kind == "optimistic" {
            // No transaction encloses the writes: the first one stands.
            assert_eq!(after.0, before.0, "{kind}");
            assert_eq!(after.1.value, before.1.value + 1, "{kind}");
        } else {
            assert_eq!(after, before, "{kind}: neither write");
        }
    }
}

/// A source whose one connection is inside the caller's test transaction.
struct Held(Mutex<Conn>);

#[flavour]
impl Source for Held {
    type Connection = Conn;
    type Pooled<'a>
        = MutexGuard<'a, Conn>
    where
        Self: 'a;
    async fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        Ok(lock(&self.0).await)
    }
}

#[flavour(blocking)]
fn lock(conn: &Mutex<Conn>) -> MutexGuard<'_, Conn> {
    conn.lock().unwrap()
}

#[flavour(asynchronous)]
async fn lock(conn: &Mutex<Conn>) -> MutexGuard<'_, Conn> {
    conn.lock().await
}

/// The flavour's transaction manager, which knows the caller's transaction depth.
type Manager = <Conn as Connection>::TransactionManager;

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn the_helper_never_ends_the_callers_transaction() {
    let db = db!();
    let pool = seeded(&db, 2).await;
    let policy = quick().escalate_hot_rows(1, HOUR);
    make_hot(&db, &pool, &policy, 1).await;
    let before = rows(&db).await;

    let mut conn = db.conn().await;
    conn.begin_test_transaction().await.expect("begin");
    // The caller's own work, before the helper runs.
    let mut own = Counter::find(&mut conn, 2).await.expect("row 2");
    own.increment();
    own.save_checked(&mut conn).await.expect("caller's write");
    let held = Held(Mutex::new(conn));
    let cases = [
        ("cold attempt", quick().escalate_hot_rows(1, HOUR)),
        ("hot row", policy),
        ("escalated", quick().escalate_after(0)),
    ];
    for (kind, policy) in cases {
        let value = retry(&held, &policy, async |c, at| increment(c, &at).await).await;
        let value = value.unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        let mut conn = lock(&held.0).await;
        let status = Manager::transaction_manager_status_mut(&mut *conn);
        let depth = status.transaction_depth().expect("a sound manager");
        let depth = depth.map(NonZeroU32::get);
        assert_eq!(depth, Some(1), "{kind}: still in the caller's transaction");
        let seen = Counter::find(&mut *conn, 1).await.expect("row 1").value;
        assert_eq!(seen, value, "{kind}: seen inside it");
    }
    // Nothing of it is committed: not the caller's write, not the helper's.
    assert_eq!(rows(&db).await, before);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn a_batch_conflict_escalates_and_a_deleted_row_is_retried_at_once() {
    let db = db!();
    let pool = seeded(&db, 2).await;
    // A batch that another writer overtakes counts as a conflict.
    let policy = quick().max_attempts(3).escalate_after(1);
    let escalated = retry(&pool, &policy, async |conn, attempt| {
        let mut rows = [
            attempt.find::<Counter>(conn, 1).await?,
            attempt.find(conn, 2).await?,
        ];
        if attempt.is_first() {
            bump(&db, 1).await;
        }
        rows.iter_mut().for_each(Counter::increment);
        rows.save_all_checked(conn).await?;
        Ok(attempt.is_escalated())
    })
    .await
    .expect("the second attempt wins");
    assert!(escalated, "the batch's conflict escalated the next attempt");

    // A row deleted under the attempt: no backoff (an hour here), and the re-read ends
    // the loop with NotFound.
    let started = Instant::now();
    let attempts = AtomicU32::new(0);
    let policy = RetryPolicy::new().backoff(HOUR, HOUR).escalate_after(1);
    let result: Result<(), Error> = retry(&pool, &policy, async |conn, attempt| {
        attempts.store(attempt.number(), Ordering::SeqCst);
        assert!(!attempt.is_escalated(), "a deletion does not escalate");
        let mut row: Counter = attempt.find(conn, 2).await?;
        raw_sql(&db, "DELETE FROM counters WHERE id = 2").await;
        row.increment();
        row.save_checked(conn).await
    })
    .await;
    assert!(matches!(result, Err(Error::NotFound(_))), "{result:?}");
    assert_eq!(attempts.into_inner(), 2);
    assert!(started.elapsed() < Duration::from_secs(60), "it slept");
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn each_attempt_checks_out_anew_until_exactly_n() {
    let db = db!();
    let pool = seeded(&db, 4).await;
    let source = Counting::new(&pool);
    let seen = perpetually_overtaken(&db, &source, &pool, 4).await;
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
    let one_out = seen.iter().all(|s| s.2 == 1);
    assert!(one_out, "one connection out at a time: {seen:?}");
    assert_eq!(source.checkouts(), 4, "one checkout per attempt");
    assert_eq!(in_use(&pool), 0, "every connection returned");
    check_server_connections(&seen);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn a_connecting_source_runs_each_attempt_on_a_new_server_connection() {
    let db = db!();
    let pool = seeded(&db, 1).await;
    let seen = perpetually_overtaken(&db, &connecting(db.url()), &pool, 4).await;
    let ids: HashSet<i64> = seen.iter().map(|s| s.1).collect();
    assert_eq!(ids.len(), 4, "four server connections: {seen:?}");
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn a_domain_outcome_ends_the_loop_after_one_attempt() {
    #[derive(Debug, PartialEq)]
    struct SoldOut;

    let db = db!();
    let pool = seeded(&db, 2).await;
    let source = Counting::new(&pool);
    let outcome = retry(&source, &quick(), async |conn, attempt| {
        let row: Counter = attempt.find(conn, 1).await?;
        Ok(Some(row.value).filter(|value| *value >= 5).ok_or(SoldOut))
    })
    .await
    .expect("a domain outcome is not an error");
    assert_eq!(outcome, Err(SoldOut));
    assert_eq!(source.checkouts(), 1);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn the_deadline_stops_a_perpetual_conflict() {
    let db = db!();
    let pool = seeded(&db, 2).await;
    let budget = Duration::from_millis(300);
    let policy = RetryPolicy::new()
        .max_attempts(10_000)
        .backoff(Duration::from_millis(1), Duration::from_millis(10))
        .deadline(budget);
    let started = Instant::now();
    let starts = std::sync::Mutex::new(Vec::new());
    let result: Result<(), Error> = retry(&pool, &policy, async |conn, attempt| {
        starts.lock().unwrap().push(started.elapsed());
        overtaken(&db, conn, &attempt, 1).await
    })
    .await;
    let elapsed = started.elapsed();
    let exhausted = exhausted(result);
    assert!(exhausted.deadline_reached(), "{exhausted:?}");
    assert!(exhausted.attempts() < 10_000);
    assert!(exhausted.last_error().is_conflict());
    let starts = starts.into_inner().unwrap();
    assert_eq!(starts.len() as u32, exhausted.attempts());
    // Generous bounds: no attempt starts long after the budget and the loop does not
    // run on for long.
    let late = budget + Duration::from_secs(2);
    assert!(starts.iter().all(|s| *s < late), "{starts:?}");
    assert!(elapsed < budget + Duration::from_secs(10), "{elapsed:?}");
    let (module, attempts) = (module_path!(), exhausted.attempts());
    eprintln!("{module}: deadline {budget:?}: {attempts} attempts in {elapsed:?}");
}

#[flavour(asynchronous, test(flavor = "multi_thread", worker_threads = 4))]
async fn retry_futures_are_send_and_run_on_spawned_tasks() {
    let db = db!();
    let pool = seeded(&db, 2).await;
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let policy = quick().max_attempts(50).escalate_after(1);
                retry(&pool, &policy, async |c, at| increment(c, &at).await).await
            })
        })
        .collect();
    let mut values = Vec::new();
    for task in tasks {
        values.push(task.await.expect("task").expect("retry"));
    }
    values.sort();
    assert_eq!(values, [1, 2, 3, 4]);
    rows(&db).await.0.assert_whole();
}

// ---- the hot row ----

const WORKERS: usize = 8;
const INCREMENTS: usize = 250;
const TOTAL: i32 = (WORKERS * INCREMENTS) as i32;

/// Eight workers (threads, or tasks) run 250 retried increments each on row 1 (seeded
/// here) under `policy`; returns the attempts they took. Every increment must land, and no
/// operation may need more than two attempts: its second one holds the lock.
#[flavour]
async fn eight_workers_times_250_increments(db: &TestDb<Conn>, policy: &RetryPolicy) -> u32 {
    let pool = seeded(db, WORKERS).await;
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (pool, policy) = (pool.clone(), policy.clone());
            spawn(move || async move {
                let (mut attempts, mut escalated) = (0_u32, 0_u32);
                for _ in 0..INCREMENTS {
                    let (number, locked) = retry(&pool, &policy, async |conn, attempt| {
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
        let (a, e) = joined(worker).await.expect("worker");
        attempts += a;
        escalated += e;
    }
    let row = rows(db).await.0;
    assert_eq!(row.value, TOTAL, "no increment lost");
    row.assert_whole();
    let (module, took) = (module_path!(), started.elapsed());
    let load = format!("{WORKERS}x{INCREMENTS} ({policy:?})");
    eprintln!("{module}: hot row {load}: {attempts} attempts, {escalated} escalated, {took:?}");
    attempts
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn eight_workers_times_250_retried_increments_end_at_exactly_2000() {
    let db = db!();
    let policy = quick().max_attempts(100).escalate_after(1);
    eight_workers_times_250_increments(&db, &policy).await;
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn on_a_hot_row_each_worker_loses_at_most_one_attempt_in_250_increments() {
    let db = db!();
    let policy = quick().max_attempts(100).escalate_hot_rows(1, HOUR);
    let attempts = eight_workers_times_250_increments(&db, &policy).await;
    // After the row's first conflict every read of it takes the lock, so only a read
    // that started before that conflict can lose: at most one per worker.
    let at_most = (WORKERS * INCREMENTS + WORKERS) as u32;
    assert!(attempts <= at_most, "{attempts} attempts for {TOTAL}");
}

/// The control: the same load through plain load-mutate-save. Every round, all eight
/// workers read, meet at a barrier, write `read + 1` and meet again, so each round adds
/// exactly one: 250, not 2000, by construction.
#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn control_the_same_load_through_plain_load_mutate_save_loses_updates() {
    let db = db!();
    seed_two(&db).await;
    let barrier = std::sync::Arc::new(Barrier::new(WORKERS));
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let (mut conn, barrier) = (db.conn().await, std::sync::Arc::clone(&barrier));
        workers.push(spawn(move || async move {
            for _ in 0..INCREMENTS {
                let row = Counter::find(&mut conn, 1).await.expect("row 1");
                barrier.wait().await;
                let write = format!("UPDATE counters SET value = {} WHERE id = 1", row.value + 1);
                run_sql(&mut conn, &write).await;
                barrier.wait().await;
            }
        }));
    }
    for worker in workers {
        joined(worker).await.expect("worker");
    }
    let row = rows(&db).await.0;
    assert_eq!(row.value, INCREMENTS as i32, "7 of every 8 increments lost");
}
