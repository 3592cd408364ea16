//! A retry policy's deadline bounds every wait, with the pools' default settings: an
//! exhausted pool (r2d2 waits 30 s by default, deadpool without end) and a row lock
//! that another session holds (for 10 s here) each end in a typed error within about
//! the deadline, and nothing is written.
//!
//! The lock holder and the pool's only connection are released after 10 s whatever
//! happens, so that a helper that does not bound its wait still returns, and fails the
//! test on its elapsed time rather than hanging it.

use std::time::Duration;

/// The policy's deadline.
const DEADLINE: Duration = Duration::from_millis(300);
/// How long the wait may take in the test: generous, but far below the 10 s the
/// holders keep what they hold and r2d2's 30 s.
const BOUND: Duration = Duration::from_secs(5);
/// How long a holder keeps the lock or the connection when nobody releases it.
const HELD_FOR: Duration = Duration::from_secs(10);

/// Faults on a blocking connection.
macro_rules! blocking_deadlines {
    ($backend:ident, $conn:ty, $schema:path, $dialect:path) => {
        mod $backend {
            use std::sync::mpsc;
            use std::thread;
            use std::time::Instant;

            use diesel::connection::SimpleConnection;
            use diesel::prelude::*;
            use diesel::r2d2::{ConnectionManager, Pool};
            use diesel_occ::prelude::*;
            use diesel_occ::retry::{self, RetryPolicy};
            use diesel_occ::{Error, PoolErrorKind, TransientKind};
            use diesel_occ_tests::TestDb;

            use super::{BOUND, DEADLINE, HELD_FOR};
            use $dialect as dialect;
            use $schema as schema;

            type Conn = $conn;

            macro_rules! test_db {
                () => {
                    match TestDb::<Conn>::create(concat!(
                        "deadlines_",
                        stringify!($backend),
                        "_",
                        line!()
                    )) {
                        Some(db) => db,
                        None => return,
                    }
                };
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::counters)]
            struct Counter {
                id: i32,
                value: i32,
                label: Option<String>,
                #[occ(version)]
                version: i32,
            }

            /// Row 1 holds value 10 at token 1.
            fn seed(db: &TestDb<Conn>) {
                diesel::insert_into(schema::counters::table)
                    .values(Counter {
                        id: 1,
                        value: 10,
                        label: None,
                        version: 1,
                    })
                    .execute(&mut db.conn())
                    .expect("seed");
            }

            /// `(value, token)` of row 1, read on a new connection.
            fn row(db: &TestDb<Conn>) -> (i32, i32) {
                let c: Counter = Counter::find(&mut db.conn(), 1).expect("row 1");
                (c.value, c.version)
            }

            /// An r2d2 pool of one connection, every other setting r2d2's default
            /// (`connection_timeout` 30 s).
            fn default_pool(db: &TestDb<Conn>) -> Pool<ConnectionManager<Conn>> {
                Pool::builder()
                    .max_size(1)
                    .build(ConnectionManager::<Conn>::new(db.url()))
                    .expect("pool")
            }

            /// Adds one to row 1, reading it with `AttemptDsl::find`.
            fn increment(conn: &mut Conn, attempt: retry::Attempt) -> Result<i32, Error> {
                let mut counter: Counter = attempt.find(conn, 1)?;
                counter.value += 1;
                counter.save_checked(conn)?;
                Ok(counter.version)
            }

            /// Runs `body` while another thread holds what `hold` returned, until
            /// `body` is done or `HELD_FOR` has passed; `hold` runs on that thread and
            /// `release` ends what it holds.
            fn while_held<H, R>(
                hold: impl FnOnce() -> H + Send,
                release: impl FnOnce(H) + Send,
                body: impl FnOnce() -> R,
            ) -> R {
                let (held_tx, held_rx) = mpsc::channel();
                let (release_tx, release_rx) = mpsc::channel::<()>();
                thread::scope(|scope| {
                    scope.spawn(move || {
                        let held = hold();
                        held_tx.send(()).expect("the test waits");
                        let _ = release_rx.recv_timeout(HELD_FOR);
                        release(held);
                    });
                    held_rx.recv().expect("the holder holds");
                    let result = body();
                    let _ = release_tx.send(());
                    result
                })
            }

            /// The pool's only connection is checked out elsewhere: the checkout waits
            /// for the time left, not r2d2's 30 s, and fails with a pool timeout; the
            /// closure never runs.
            #[test]
            fn an_exhausted_default_pool_is_a_pool_timeout_within_the_deadline() {
                let db = test_db!();
                seed(&db);
                let pool = default_pool(&db);
                let policy = RetryPolicy::new().deadline(DEADLINE);
                let (result, elapsed) = while_held(
                    || pool.get().expect("the only connection"),
                    drop,
                    || {
                        let started = Instant::now();
                        let result = retry::retry(&pool, &policy, increment);
                        (result, started.elapsed())
                    },
                );
                eprintln!("{}: {result:?} after {elapsed:?}", stringify!($backend));
                let Err(Error::Pool(error)) = &result else {
                    panic!("expected Error::Pool, got {result:?} after {elapsed:?}");
                };
                assert_eq!(error.kind(), PoolErrorKind::Timeout);
                assert!(elapsed < BOUND, "took {elapsed:?}");
                assert_eq!(row(&db), (10, 1), "nothing was written");
            }

            /// Another session holds row 1's lock: the escalated attempt's locking read
            /// waits for the time left, not until the lock is released, and the helper
            /// gives up with the deadline reached and a lock wait timeout as the last
            /// error. The pool's connection stays usable: the next call saves.
            #[test]
            fn a_held_row_lock_ends_the_escalated_read_within_the_deadline() {
                let db = test_db!();
                seed(&db);
                let pool = default_pool(&db);
                let policy = RetryPolicy::new().escalate_after(0).deadline(DEADLINE);
                let (result, elapsed) = while_held(
                    || {
                        let mut holder = db.conn();
                        dialect::lock_counter(&mut holder, 1);
                        holder
                    },
                    |mut holder| holder.batch_execute("ROLLBACK").expect("release the lock"),
                    || {
                        let started = Instant::now();
                        let result = retry::retry(&pool, &policy, increment);
                        (result, started.elapsed())
                    },
                );
                eprintln!("{}: {result:?} after {elapsed:?}", stringify!($backend));
                let Err(Error::RetriesExhausted(exhausted)) = &result else {
                    panic!("expected RetriesExhausted, got {result:?} after {elapsed:?}");
                };
                assert!(exhausted.deadline_reached(), "{exhausted:?}");
                assert_eq!(
                    exhausted.last_error().transient_kind(),
                    Some(TransientKind::LockWaitTimeout),
                    "{exhausted:?}"
                );
                assert!(elapsed < BOUND, "took {elapsed:?}");
                assert_eq!(row(&db), (10, 1), "nothing was written");

                let saved = retry::retry(&pool, &policy, increment).expect("the lock is free");
                assert_eq!(saved, 2);
                assert_eq!(row(&db), (11, 2));
            }
        }
    };
}

/// Faults on an async connection from a deadpool pool.
macro_rules! async_deadlines {
    ($backend:ident, $conn:ty, $sync_conn:ty, $schema:path, $dialect:path) => {
        mod $backend {
            use std::sync::mpsc;
            use std::time::Instant;

            use diesel::connection::SimpleConnection;
            use diesel::{Insertable, QueryDsl, Queryable, Selectable};
            use diesel_async::pooled_connection::AsyncDieselConnectionManager;
            use diesel_async::pooled_connection::deadpool::Pool;
            use diesel_occ::asynchronous::prelude::*;
            use diesel_occ::asynchronous::{self, RetryPolicy};
            use diesel_occ::{Error, PoolErrorKind, TransientKind};
            use diesel_occ_tests::TestDb;

            use super::{BOUND, DEADLINE, HELD_FOR};
            use $dialect as dialect;
            use $schema as schema;

            type Conn = $conn;
            type SyncConn = $sync_conn;

            macro_rules! test_db {
                () => {
                    match TestDb::<SyncConn>::create(concat!(
                        "deadlines_",
                        stringify!($backend),
                        "_",
                        line!()
                    )) {
                        Some(db) => db,
                        None => return,
                    }
                };
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::counters)]
            struct Counter {
                id: i32,
                value: i32,
                label: Option<String>,
                #[occ(version)]
                version: i32,
            }

            fn seed(db: &TestDb<SyncConn>) {
                diesel::RunQueryDsl::execute(
                    diesel::insert_into(schema::counters::table).values(Counter {
                        id: 1,
                        value: 10,
                        label: None,
                        version: 1,
                    }),
                    &mut db.conn(),
                )
                .expect("seed");
            }

            /// `(value, token)` of row 1, read on a new blocking connection.
            fn row(db: &TestDb<SyncConn>) -> (i32, i32) {
                diesel::RunQueryDsl::get_result(
                    schema::counters::table
                        .find(1)
                        .select((schema::counters::value, schema::counters::version)),
                    &mut db.conn(),
                )
                .expect("row 1")
            }

            /// A deadpool pool of one connection, every other setting deadpool's
            /// default: no runtime, no wait timeout (a checkout waits forever).
            fn default_pool(db: &TestDb<SyncConn>) -> Pool<Conn> {
                Pool::builder(AsyncDieselConnectionManager::<Conn>::new(db.url()))
                    .max_size(1)
                    .build()
                    .expect("pool")
            }

            /// Adds one to row 1, reading it with `AttemptDsl::find`.
            async fn increment(pool: &Pool<Conn>, policy: &RetryPolicy) -> Result<i32, Error> {
                asynchronous::retry(pool, policy, async |conn, attempt| {
                    let mut counter: Counter = attempt.find(conn, 1).await?;
                    counter.value += 1;
                    counter.save_checked(conn).await?;
                    Ok(counter.version)
                })
                .await
            }

            /// The pool's only connection is checked out elsewhere: the checkout waits
            /// for the time left, not forever, and fails with a pool timeout.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_exhausted_default_pool_is_a_pool_timeout_within_the_deadline() {
                let db = test_db!();
                seed(&db);
                let pool = default_pool(&db);
                let held = pool.get().await.expect("the only connection");
                let (release, released) = tokio::sync::oneshot::channel::<()>();
                let holder = tokio::spawn(async move {
                    let _ = tokio::time::timeout(HELD_FOR, released).await;
                    drop(held);
                });
                let policy = RetryPolicy::new().deadline(DEADLINE);
                let started = Instant::now();
                let result = increment(&pool, &policy).await;
                let elapsed = started.elapsed();
                let _ = release.send(());
                holder.await.expect("holder");
                eprintln!("{}: {result:?} after {elapsed:?}", stringify!($backend));
                let Err(Error::Pool(error)) = &result else {
                    panic!("expected Error::Pool, got {result:?} after {elapsed:?}");
                };
                assert_eq!(error.kind(), PoolErrorKind::Timeout);
                assert!(elapsed < BOUND, "took {elapsed:?}");
                assert_eq!(row(&db), (10, 1), "nothing was written");
            }

            /// Another session holds row 1's lock: the escalated attempt's locking read
            /// waits for the time left, and the helper gives up with the deadline
            /// reached and a lock wait timeout. The connection went back to the pool
            /// in step: the next call saves on it.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_held_row_lock_ends_the_escalated_read_within_the_deadline() {
                let db = test_db!();
                seed(&db);
                let pool = default_pool(&db);
                let (locked_tx, locked) = tokio::sync::oneshot::channel();
                let (release, released) = mpsc::channel::<()>();
                let mut holder = db.conn();
                let holder = std::thread::spawn(move || {
                    dialect::lock_counter(&mut holder, 1);
                    locked_tx.send(()).expect("the test waits");
                    let _ = released.recv_timeout(HELD_FOR);
                    holder.batch_execute("ROLLBACK").expect("release the lock");
                });
                locked.await.expect("the holder holds the lock");
                let policy = RetryPolicy::new().escalate_after(0).deadline(DEADLINE);
                let started = Instant::now();
                let result = increment(&pool, &policy).await;
                let elapsed = started.elapsed();
                let _ = release.send(());
                tokio::task::spawn_blocking(move || holder.join().expect("holder"))
                    .await
                    .expect("join");
                eprintln!("{}: {result:?} after {elapsed:?}", stringify!($backend));
                let Err(Error::RetriesExhausted(exhausted)) = &result else {
                    panic!("expected RetriesExhausted, got {result:?} after {elapsed:?}");
                };
                assert!(exhausted.deadline_reached(), "{exhausted:?}");
                assert_eq!(
                    exhausted.last_error().transient_kind(),
                    Some(TransientKind::LockWaitTimeout),
                    "{exhausted:?}"
                );
                assert!(elapsed < BOUND, "took {elapsed:?}");
                assert_eq!(row(&db), (10, 1), "nothing was written");

                let saved = increment(&pool, &policy).await.expect("the lock is free");
                assert_eq!(saved, 2);
                assert_eq!(row(&db), (11, 2));
            }
        }
    };
}

blocking_deadlines!(
    postgres,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg,
    crate::dialect::pg
);
#[cfg(feature = "mysql")]
blocking_deadlines!(
    mysql,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql,
    crate::dialect::mysql
);

async_deadlines!(
    postgres_async,
    diesel_async::AsyncPgConnection,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg,
    crate::dialect::pg
);
#[cfg(feature = "mysql")]
async_deadlines!(
    mysql_async,
    diesel_async::AsyncMysqlConnection,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql,
    crate::dialect::mysql
);
