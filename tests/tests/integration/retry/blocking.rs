//! The blocking retry helper through an r2d2 pool: a fresh checkout per attempt,
//! exhaustion after exactly N, deadlines and the hot row.
//!
//! What "fresh" means, and what is asserted: the helper checks a connection out of its
//! source at the start of every attempt and gives it back before the backoff. r2d2
//! keeps idle connections in a stack (last in, first out), so the connection an attempt
//! gives back is the one the next attempt gets: the same server connection, checked
//! out anew. That is asserted as such (one checkout per attempt, exactly one connection
//! out during each attempt, all back between attempts). Distinct server connections per
//! attempt are asserted with a source that connects per attempt, and with deadpool
//! (first in, first out) in `asynchronous.rs`.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool, PooledConnection};
use diesel_occ::blocking;
use diesel_occ::blocking::ConnectionSource;
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, PoolError};
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::{TestConnection, TestDb};

use super::{Conn, schema};

fn seed(db: &TestDb<Conn>) {
    diesel::insert_into(schema::counters::table)
        .values(Counter::whole(1, 0))
        .execute(&mut db.conn())
        .expect("seed");
}

fn bump(conn: &mut Conn) -> i32 {
    let mut row = Counter::find(conn, 1).expect("row");
    row.increment();
    row.save_checked(conn).expect("the other writer");
    row.version
}

/// Test settings and a readable identity on every pooled connection.
#[derive(Debug)]
struct Setup;

impl CustomizeConnection<Conn, diesel::r2d2::Error> for Setup {
    fn on_acquire(&self, conn: &mut Conn) -> Result<(), diesel::r2d2::Error> {
        conn.configure();
        conn.batch_execute(Conn::IDENTITY_SETUP)
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

pub(super) fn pool(db: &TestDb<Conn>, size: u32) -> Pool<ConnectionManager<Conn>> {
    Pool::builder()
        .max_size(size)
        .min_idle(Some(size))
        .connection_customizer(Box::new(Setup))
        .build(ConnectionManager::new(db.url()))
        .expect("r2d2 pool")
}

fn connection_id(conn: &mut Conn) -> i64 {
    diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        Conn::CONNECTION_ID,
    ))
    .get_result(conn)
    .expect("connection id")
}

/// The r2d2 pool as a `ConnectionSource` that counts checkouts.
struct Counting<'p> {
    pool: &'p Pool<ConnectionManager<Conn>>,
    checkouts: AtomicU32,
}

impl ConnectionSource for Counting<'_> {
    type Connection = Conn;
    type Pooled<'a>
        = PooledConnection<ConnectionManager<Conn>>
    where
        Self: 'a;

    fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        self.checkouts.fetch_add(1, Ordering::SeqCst);
        self.pool.checkout()
    }
}

fn perpetual_conflict<S>(source: &S, db: &TestDb<Conn>, attempts: u32) -> (Vec<(u32, i64)>, Error)
where
    S: ConnectionSource<Connection = Conn>,
{
    let mut other = db.conn();
    let seen = Mutex::new(Vec::new());
    let mut last = 0;
    let result: Result<(), Error> = blocking::retry(
        source,
        &RetryPolicy::new()
            .max_attempts(attempts)
            .backoff(Duration::ZERO, Duration::ZERO),
        |conn, attempt| {
            seen.lock()
                .unwrap()
                .push((attempt.number(), connection_id(conn)));
            let mut row: Counter = attempt.find(conn, 1)?;
            last = bump(&mut other);
            row.increment();
            row.save_checked(conn)
        },
    );
    let error = result.unwrap_err();
    match &error {
        Error::RetriesExhausted(exhausted) => {
            assert_eq!(exhausted.attempts(), attempts);
            assert_eq!(
                exhausted.last_conflict().and_then(|c| c.current::<i32>()),
                Some(last)
            );
        }
        other => panic!("expected exhaustion, got {other:?}"),
    }
    (seen.into_inner().unwrap(), error)
}

#[test]
fn r2d2_checks_out_anew_for_each_attempt_until_exactly_n() {
    let db = test_db!();
    seed(&db);
    let pool = pool(&db, 3);
    let source = Counting {
        pool: &pool,
        checkouts: AtomicU32::new(0),
    };
    let in_use = Mutex::new(Vec::new());
    let wrapped = || {
        in_use
            .lock()
            .unwrap()
            .push(pool.state().connections - pool.state().idle_connections);
    };
    // Check the pool state from inside each attempt through the source.
    struct Observed<'s, F: Fn()>(&'s Counting<'s>, F);
    impl<F: Fn()> ConnectionSource for Observed<'_, F> {
        type Connection = Conn;
        type Pooled<'a>
            = PooledConnection<ConnectionManager<Conn>>
        where
            Self: 'a;
        fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
            let pooled = self.0.checkout()?;
            (self.1)();
            Ok(pooled)
        }
    }
    let (seen, _) = perpetual_conflict(&Observed(&source, wrapped), &db, 4);
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(
        source.checkouts.load(Ordering::SeqCst),
        4,
        "one checkout per attempt"
    );
    assert_eq!(
        *in_use.lock().unwrap(),
        [1, 1, 1, 1],
        "one connection out per attempt"
    );
    assert_eq!(
        pool.state().idle_connections,
        pool.state().connections,
        "all back"
    );
    eprintln!(
        "{}: r2d2 server connections per attempt (LIFO): {:?}",
        module_path!(),
        seen.iter().map(|s| s.1).collect::<Vec<_>>()
    );
}

#[test]
fn a_connecting_source_runs_each_attempt_on_a_new_server_connection() {
    let db = test_db!();
    seed(&db);
    let url = db.url().to_owned();
    let source = || -> Result<Conn, PoolError> {
        let mut conn = Conn::establish(&url)?;
        conn.configure();
        conn.batch_execute(Conn::IDENTITY_SETUP).expect("id setup");
        Ok(conn)
    };
    let (seen, _) = perpetual_conflict(&source, &db, 4);
    let ids: HashSet<i64> = seen.iter().map(|s| s.1).collect();
    assert_eq!(ids.len(), 4, "four server connections: {seen:?}");
}

#[test]
fn a_domain_outcome_ends_after_one_attempt_and_the_deadline_stops_a_perpetual_conflict() {
    #[derive(Debug, PartialEq)]
    struct SoldOut;

    let db = test_db!();
    seed(&db);
    let pool = pool(&db, 2);
    let source = Counting {
        pool: &pool,
        checkouts: AtomicU32::new(0),
    };
    let outcome = blocking::retry(&source, &RetryPolicy::new(), |conn, attempt| {
        let row: Counter = attempt.find(conn, 1)?;
        Ok(if row.value < 5 {
            Err(SoldOut)
        } else {
            Ok(row.value)
        })
    })
    .expect("a decision is not an error");
    assert_eq!(outcome, Err(SoldOut));
    assert_eq!(source.checkouts.load(Ordering::SeqCst), 1);

    let mut other = db.conn();
    let budget = Duration::from_millis(300);
    let policy = RetryPolicy::new()
        .max_attempts(10_000)
        .backoff(Duration::from_millis(1), Duration::from_millis(10))
        .deadline(budget);
    let started = Instant::now();
    let mut attempts = 0;
    let result: Result<(), Error> = blocking::retry(&pool, &policy, |conn, attempt| {
        attempts = attempt.number();
        let mut row: Counter = attempt.find(conn, 1)?;
        bump(&mut other);
        row.increment();
        row.save_checked(conn)
    });
    let elapsed = started.elapsed();
    match result {
        Err(Error::RetriesExhausted(exhausted)) => {
            assert!(exhausted.deadline_reached(), "{exhausted:?}");
            assert_eq!(exhausted.attempts(), attempts);
            assert!(attempts < 10_000);
        }
        other => panic!("expected the deadline to end it, got {other:?}"),
    }
    assert!(elapsed < budget + Duration::from_secs(10), "{elapsed:?}");
    eprintln!(
        "{}: r2d2 deadline {budget:?}: {attempts} attempts in {elapsed:?}",
        module_path!()
    );
}

/// 8 threads run 250 retried increments each on one row under `policy`;
/// returns the attempts they took. Every increment must land, and no
/// operation may need more than two attempts: its second one holds the lock.
fn eight_threads_times_250_increments(db: &TestDb<Conn>, policy: &RetryPolicy) -> u32 {
    let pool = pool(db, 8);
    let started = Instant::now();
    let totals: Vec<u32> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    let mut attempts = 0;
                    for _ in 0..250 {
                        let n = blocking::retry(&pool, policy, |conn, attempt| {
                            let mut row: Counter = attempt.find(conn, 1)?;
                            row.increment();
                            row.save_checked(conn)?;
                            Ok(attempt.number())
                        })
                        .expect("every increment lands");
                        assert!(n <= 2, "an attempt that holds the lock cannot lose");
                        attempts += n;
                    }
                    attempts
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    let row = Counter::find(&mut db.conn(), 1).expect("row");
    assert_eq!(row.value, 2000, "no increment lost");
    assert_eq!(row.version, 2001);
    assert_eq!(row.label.as_deref(), Some("2000"));
    let attempts = totals.iter().sum();
    eprintln!(
        "{}: r2d2 hot row 8x250 ({policy:?}): {attempts} attempts, {:?}",
        module_path!(),
        started.elapsed()
    );
    attempts
}

#[test]
fn eight_threads_times_250_retried_increments_end_at_exactly_2000() {
    let db = test_db!();
    seed(&db);
    let policy = RetryPolicy::new()
        .max_attempts(100)
        .backoff(Duration::ZERO, Duration::from_millis(2))
        .escalate_after(1);
    eight_threads_times_250_increments(&db, &policy);
}

#[test]
fn on_a_hot_row_each_thread_loses_at_most_one_attempt_in_250_increments() {
    let db = test_db!();
    seed(&db);
    let policy = RetryPolicy::new()
        .max_attempts(100)
        .backoff(Duration::ZERO, Duration::from_millis(2))
        .escalate_hot_rows(1, Duration::from_secs(3600));
    let attempts = eight_threads_times_250_increments(&db, &policy);
    // After the row's first conflict every read of it takes the lock, so
    // only a read that started before that conflict can lose: at most one
    // per thread.
    assert!(
        attempts <= 2000 + 8,
        "{attempts} attempts for 2000 increments"
    );
}
