//! Transient errors that the real databases produced, classified through each driver
//! (libpq and tokio-postgres, mysqlclient and mysql_async, SQLite through both APIs),
//! and retried by the helpers.
//!
//! Deadlocks are forced: two transactions each lock one of two rows, meet at a
//! barrier, then each asks for the other's row. Serialization failures, lock wait
//! timeouts and busy errors are produced step by step on two connections.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::{Connection, ExpressionMethods, QueryDsl};
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_occ::{Error, TransientKind};
use diesel_occ_tests::{TestConnection, TestDb};

use diesel_occ_tests::{AsyncTestConnection, AsyncTestDb};

/// The transient kind of a driver's error, as the retry helpers see it.
fn kind(error: diesel::result::Error) -> Option<TransientKind> {
    Error::from(error).transient_kind()
}

const SEED: &str = "INSERT INTO counters (id, value, label, version) VALUES \
    (1, 0, '0', 1), (2, 0, '0', 1), (3, 0, '0', 1), (4, 0, '0', 1), (5, 0, '0', 1)";

fn increment(id: i32) -> String {
    format!("UPDATE counters SET value = value + 1, version = version + 1 WHERE id = {id}")
}

/// Two blocking transactions in opposite lock order; returns each one's outcome.
fn sync_deadlock<C: TestConnection>(db: &TestDb<C>, session: &str) -> Vec<diesel::QueryResult<()>> {
    db.conn().batch_execute(SEED).expect("seed");
    let barrier = Barrier::new(2);
    std::thread::scope(|scope| {
        let workers: Vec<_> = [(1, 2), (2, 1)]
            .into_iter()
            .map(|(first, second)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut conn = db.conn();
                    conn.batch_execute(session).expect("session settings");
                    conn.transaction(|conn| {
                        conn.batch_execute(&increment(first))?;
                        barrier.wait();
                        conn.batch_execute(&increment(second))
                    })
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    })
}

/// The same on async connections, on two tasks.
async fn async_deadlock<C: AsyncTestConnection>(
    db: &AsyncTestDb<C>,
    session: &str,
) -> Vec<diesel::QueryResult<()>> {
    db.conn().await.batch_execute(SEED).await.expect("seed");
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut workers = Vec::new();
    for (first, second) in [(1, 2), (2, 1)] {
        let mut conn = db.conn().await;
        conn.batch_execute(session).await.expect("session settings");
        let barrier = Arc::clone(&barrier);
        workers.push(tokio::spawn(async move {
            conn.transaction(async |conn| {
                conn.batch_execute(&increment(first)).await?;
                barrier.wait().await;
                conn.batch_execute(&increment(second)).await
            })
            .await
        }));
    }
    let mut outcomes = Vec::new();
    for worker in workers {
        outcomes.push(worker.await.expect("worker"));
    }
    outcomes
}

/// Exactly one victim, classified as a deadlock; the other transaction committed.
fn assert_one_deadlock(outcomes: Vec<diesel::QueryResult<()>>) {
    let (ok, failed): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(Result::is_ok);
    assert_eq!((ok.len(), failed.len()), (1, 1), "one victim: {failed:?}");
    let error = failed.into_iter().next().unwrap().unwrap_err();
    let shown = format!("{error:?}");
    assert_eq!(kind(error), Some(TransientKind::Deadlock), "{shown}");
}

macro_rules! sync_db {
    ($conn:ty) => {
        match TestDb::<$conn>::create(concat!("transient_", line!())) {
            Some(db) => db,
            None => return,
        }
    };
}

macro_rules! async_db {
    ($conn:ty) => {
        match AsyncTestDb::<$conn>::create(concat!("transient_a", line!())).await {
            Some(db) => db,
            None => return,
        }
    };
}

type Sqlite = diesel::SqliteConnection;
type AsyncSqlite = diesel_async::sync_connection_wrapper::SyncConnectionWrapper<Sqlite>;

// PostgreSQL: a short deadlock_timeout so that the check runs soon.

#[test]
fn postgres_libpq_deadlock_is_a_deadlock() {
    let db = sync_db!(diesel::PgConnection);
    assert_one_deadlock(sync_deadlock(&db, "SET deadlock_timeout = '100ms'"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_tokio_postgres_deadlock_is_a_deadlock() {
    let db = async_db!(diesel_async::AsyncPgConnection);
    assert_one_deadlock(async_deadlock(&db, "SET deadlock_timeout = '100ms'").await);
}

/// REPEATABLE READ: a row changed after the snapshot cannot be updated (40001).
#[test]
fn postgres_libpq_repeatable_read_update_is_a_serialization_failure() {
    let db = sync_db!(diesel::PgConnection);
    let (mut a, mut b) = (db.conn(), db.conn());
    a.batch_execute(SEED).unwrap();
    let error = a
        .build_transaction()
        .repeatable_read()
        .run(|a| {
            a.batch_execute("SELECT value FROM counters WHERE id = 1")?;
            b.batch_execute(&increment(1))
                .expect("the other writer commits");
            a.batch_execute(&increment(1))
        })
        .unwrap_err();
    assert!(matches!(
        error,
        diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::SerializationFailure,
            _
        )
    ));
    assert_eq!(kind(error), Some(TransientKind::SerializationFailure));
}

/// SERIALIZABLE: write skew, each transaction reads both rows and writes one (40001).
#[test]
fn postgres_libpq_serializable_write_skew_is_a_serialization_failure() {
    let db = sync_db!(diesel::PgConnection);
    let (mut a, mut b) = (db.conn(), db.conn());
    a.batch_execute(SEED).unwrap();
    let sum = "SELECT sum(value) FROM counters WHERE id IN (1, 2)";
    a.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        .unwrap();
    b.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        .unwrap();
    a.batch_execute(sum).unwrap();
    b.batch_execute(sum).unwrap();
    a.batch_execute(&increment(1)).unwrap();
    let b_result = b.batch_execute(&increment(2));
    a.batch_execute("COMMIT").expect("the first to commit wins");
    let error = b_result
        .and_then(|()| b.batch_execute("COMMIT"))
        .expect_err("the second cannot be serialized");
    let _ = b.batch_execute("ROLLBACK");
    assert_eq!(kind(error), Some(TransientKind::SerializationFailure));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_tokio_postgres_repeatable_read_update_is_a_serialization_failure() {
    let db = async_db!(diesel_async::AsyncPgConnection);
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    a.batch_execute(SEED).await.unwrap();
    a.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await
        .unwrap();
    a.batch_execute("SELECT value FROM counters WHERE id = 1")
        .await
        .unwrap();
    b.batch_execute(&increment(1))
        .await
        .expect("the other writer commits");
    let error = a.batch_execute(&increment(1)).await.unwrap_err();
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(kind(error), Some(TransientKind::SerializationFailure));
}

// MariaDB / MySQL: InnoDB detects deadlocks at once; lock waits time out after
// innodb_lock_wait_timeout seconds (1 here).

#[cfg(feature = "mysql")]
#[test]
fn mysql_mysqlclient_deadlock_is_a_deadlock() {
    let db = sync_db!(diesel::MysqlConnection);
    assert_one_deadlock(sync_deadlock(
        &db,
        "SET SESSION innodb_lock_wait_timeout = 50",
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_mysql_async_deadlock_is_a_deadlock() {
    let db = async_db!(diesel_async::AsyncMysqlConnection);
    assert_one_deadlock(async_deadlock(&db, "SET SESSION innodb_lock_wait_timeout = 50").await);
}

#[cfg(feature = "mysql")]
#[test]
fn mysql_mysqlclient_lock_wait_timeout_is_classified() {
    let db = sync_db!(diesel::MysqlConnection);
    let (mut a, mut b) = (db.conn(), db.conn());
    a.batch_execute(SEED).unwrap();
    b.batch_execute("SET SESSION innodb_lock_wait_timeout = 1")
        .unwrap();
    a.batch_execute("BEGIN").unwrap();
    a.batch_execute(&increment(1)).unwrap();
    use diesel_occ_tests::schema::mysql::counters::dsl::*;
    let error = diesel::RunQueryDsl::execute(
        diesel::update(counters.find(1)).set(value.eq(value + 1)),
        &mut b,
    )
    .unwrap_err();
    a.batch_execute("ROLLBACK").unwrap();
    assert_eq!(kind(error), Some(TransientKind::LockWaitTimeout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_mysql_async_lock_wait_timeout_is_classified() {
    let db = async_db!(diesel_async::AsyncMysqlConnection);
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    a.batch_execute(SEED).await.unwrap();
    b.batch_execute("SET SESSION innodb_lock_wait_timeout = 1")
        .await
        .unwrap();
    a.batch_execute("BEGIN").await.unwrap();
    a.batch_execute(&increment(1)).await.unwrap();
    use diesel_occ_tests::schema::mysql::counters::dsl::*;
    let error = diesel_async::RunQueryDsl::execute(
        diesel::update(counters.find(1)).set(value.eq(value + 1)),
        &mut b,
    )
    .await
    .unwrap_err();
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(kind(error), Some(TransientKind::LockWaitTimeout));
}

// SQLite: a writer that may not wait meets another connection's write lock.

#[test]
fn sqlite_busy_is_classified() {
    let db = sync_db!(Sqlite);
    let (mut a, mut b) = (db.conn(), db.conn());
    a.batch_execute(SEED).unwrap();
    b.batch_execute("PRAGMA busy_timeout = 0").unwrap();
    a.batch_execute("BEGIN IMMEDIATE").unwrap();
    use diesel_occ_tests::schema::sqlite::counters::dsl::*;
    let error = diesel::RunQueryDsl::execute(
        diesel::update(counters.find(1)).set(value.eq(value + 1)),
        &mut b,
    )
    .unwrap_err();
    a.batch_execute("ROLLBACK").unwrap();
    assert_eq!(kind(error), Some(TransientKind::Busy));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_busy_through_the_async_wrapper_is_classified() {
    let db = async_db!(AsyncSqlite);
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    a.batch_execute(SEED).await.unwrap();
    b.batch_execute("PRAGMA busy_timeout = 0").await.unwrap();
    a.batch_execute("BEGIN IMMEDIATE").await.unwrap();
    use diesel_occ_tests::schema::sqlite::counters::dsl::*;
    let error = diesel_async::RunQueryDsl::execute(
        diesel::update(counters.find(1)).set(value.eq(value + 1)),
        &mut b,
    )
    .await
    .unwrap_err();
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(kind(error), Some(TransientKind::Busy));
}

/// The retry helpers retry what the databases produced.
mod retried {
    use std::sync::Mutex;

    use diesel::{Insertable, Queryable, Selectable};
    use diesel_occ::Versioned;

    use super::*;

    macro_rules! counter {
        ($name:ident, $schema:path) => {
            mod $name {
                use $schema as schema;

                #[derive(
                    Debug,
                    Clone,
                    PartialEq,
                    super::Queryable,
                    super::Selectable,
                    super::Insertable,
                    super::Versioned,
                )]
                #[diesel(table_name = schema::counters)]
                pub(crate) struct Counter {
                    pub(crate) id: i32,
                    pub(crate) value: i32,
                    pub(crate) label: Option<String>,
                    #[occ(version)]
                    pub(crate) version: i32,
                }

                impl Counter {
                    pub(crate) fn increment(&mut self) {
                        self.value += 1;
                        self.label = Some(self.value.to_string());
                    }
                }
            }
        };
    }
    counter!(pg, diesel_occ_tests::schema::pg);
    counter!(my, diesel_occ_tests::schema::mysql);
    counter!(lite, diesel_occ_tests::schema::sqlite);

    /// PostgreSQL, blocking, through r2d2: the attempt (in its escalated transaction)
    /// locks row 1, another transaction holds row 2 and asks for row 1, the attempt
    /// asks for row 2. The attempt's session checks for deadlocks first (100 ms
    /// against the other's 10 s), so it is the victim; the helper retries it and the
    /// second attempt succeeds.
    #[test]
    fn postgres_a_deadlock_victim_is_retried_and_succeeds() {
        use diesel::r2d2::{ConnectionManager, Pool};
        use diesel_occ::prelude::*;
        use diesel_occ::retry::{self, RetryPolicy};
        use pg::Counter;

        let db = sync_db!(diesel::PgConnection);
        db.conn().batch_execute(SEED).unwrap();
        let pool = Pool::builder()
            .max_size(2)
            .build(ConnectionManager::<diesel::PgConnection>::new(db.url()))
            .unwrap();
        let barrier = Barrier::new(2);
        let errors = Mutex::new(Vec::new());
        // The second attempt starts once the other transaction committed: otherwise
        // it could take row 1 before the other does and deadlock again.
        let (committed, other_done) = std::sync::mpsc::channel();
        let result = std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                let mut conn = db.conn();
                conn.batch_execute("SET deadlock_timeout = '10s'").unwrap();
                let result = conn.transaction(|conn| {
                    conn.batch_execute(&increment(2))?;
                    barrier.wait();
                    conn.batch_execute(&increment(1))
                });
                committed.send(()).unwrap();
                result
            });
            let policy = RetryPolicy::new()
                .backoff(Duration::ZERO, Duration::ZERO)
                .escalate_after(0);
            let result = retry::retry(&pool, &policy, |conn, attempt| {
                conn.batch_execute("SET LOCAL deadlock_timeout = '100ms'")?;
                if attempt.number() == 2 {
                    other_done.recv().unwrap();
                }
                let mut first: Counter = attempt.find(conn, 1)?;
                if attempt.is_first() {
                    barrier.wait();
                }
                let second = attempt.find::<Counter>(conn, 2);
                let mut second = match second {
                    Ok(row) => row,
                    Err(error) => {
                        errors
                            .lock()
                            .unwrap()
                            .push((attempt.number(), error.transient_kind()));
                        return Err(error);
                    }
                };
                first.increment();
                second.increment();
                first.save_checked(conn)?;
                second.save_checked(conn)?;
                Ok(attempt.number())
            });
            other
                .join()
                .unwrap()
                .expect("the other transaction commits");
            result
        });
        assert_eq!(result.expect("retried"), 2);
        assert_eq!(
            *errors.lock().unwrap(),
            [(1, Some(TransientKind::Deadlock))]
        );
        let mut conn = db.conn();
        let rows: Vec<Counter> = [1, 2]
            .map(|id| Counter::find(&mut conn, id).unwrap())
            .into();
        assert!(
            rows.iter().all(|r| r.value == 2),
            "both writes, whole: {rows:?}"
        );
    }

    /// PostgreSQL, async, through a connecting source: the attempt's transaction runs
    /// at REPEATABLE READ and takes its snapshot, another writer commits a change to
    /// the row, and the attempt's locking read fails with 40001; the helper retries
    /// and the second attempt reads the new row.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_async_a_serialization_failure_is_retried_and_succeeds() {
        use diesel_occ::asynchronous::prelude::*;
        use diesel_occ::asynchronous::{self as occ, RetryPolicy};
        use pg::Counter;

        let db = async_db!(diesel_async::AsyncPgConnection);
        let other = tokio::sync::Mutex::new(db.conn().await);
        other.lock().await.batch_execute(SEED).await.unwrap();
        let url = db.url().to_owned();
        let source = || diesel_occ_tests::connect_async::<diesel_async::AsyncPgConnection>(&url);
        let errors = Mutex::new(Vec::new());
        let policy = RetryPolicy::new()
            .backoff(Duration::ZERO, Duration::ZERO)
            .escalate_after(0);
        let value = occ::retry(&source, &policy, async |conn, attempt| {
            conn.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; SELECT 1")
                .await?;
            if attempt.is_first() {
                other
                    .lock()
                    .await
                    .batch_execute(&increment(1))
                    .await
                    .unwrap();
            }
            let mut row: Counter = match attempt.find(conn, 1).await {
                Ok(row) => row,
                Err(error) => {
                    errors.lock().unwrap().push(error.transient_kind());
                    return Err(error);
                }
            };
            row.increment();
            row.save_checked(conn).await?;
            Ok(row.value)
        })
        .await
        .expect("retried");
        assert_eq!(value, 2, "the other writer's increment, then ours");
        assert_eq!(
            *errors.lock().unwrap(),
            [Some(TransientKind::SerializationFailure)]
        );
    }

    /// MariaDB, async, through deadpool: the same deadlock; InnoDB rolls back the
    /// lighter transaction, and the other one has already written four rows, so the
    /// attempt (which has only locked a row) is the victim.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn mysql_async_a_deadlock_victim_is_retried_and_succeeds() {
        use diesel_async::pooled_connection::AsyncDieselConnectionManager;
        use diesel_async::pooled_connection::deadpool::Pool;
        use diesel_occ::asynchronous::prelude::*;
        use diesel_occ::asynchronous::{self as occ, RetryPolicy};
        use my::Counter;

        let db = async_db!(diesel_async::AsyncMysqlConnection);
        db.conn().await.batch_execute(SEED).await.unwrap();
        let pool = Pool::builder(AsyncDieselConnectionManager::<
            diesel_async::AsyncMysqlConnection,
        >::new(db.url()))
        .max_size(2)
        .build()
        .unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let mut other = db.conn().await;
        let other_barrier = Arc::clone(&barrier);
        // The second attempt starts once the other transaction committed.
        let committed = Arc::new(tokio::sync::Notify::new());
        let other_committed = Arc::clone(&committed);
        let other = tokio::spawn(async move {
            let result = other
                .transaction(async |conn| {
                    for id in [2, 3, 4, 5] {
                        conn.batch_execute(&increment(id)).await?;
                    }
                    other_barrier.wait().await;
                    conn.batch_execute(&increment(1)).await
                })
                .await;
            other_committed.notify_one();
            result
        });
        let errors = Mutex::new(Vec::new());
        let policy = RetryPolicy::new()
            .backoff(Duration::ZERO, Duration::ZERO)
            .escalate_after(0);
        let result = occ::retry(&pool, &policy, async |conn, attempt| {
            if attempt.number() == 2 {
                committed.notified().await;
            }
            let mut first: Counter = attempt.find(conn, 1).await?;
            if attempt.is_first() {
                barrier.wait().await;
            }
            let mut second: Counter = match attempt.find(conn, 2).await {
                Ok(row) => row,
                Err(error) => {
                    errors
                        .lock()
                        .unwrap()
                        .push((attempt.number(), error.transient_kind()));
                    return Err(error);
                }
            };
            first.increment();
            second.increment();
            first.save_checked(conn).await?;
            second.save_checked(conn).await?;
            Ok(attempt.number())
        })
        .await;
        other.await.unwrap().expect("the other transaction commits");
        assert_eq!(result.expect("retried"), 2);
        assert_eq!(
            *errors.lock().unwrap(),
            [(1, Some(TransientKind::Deadlock))]
        );
        let mut conn = db.conn().await;
        for id in [1, 2] {
            let row = Counter::find(&mut conn, id).await.unwrap();
            assert_eq!(row.value, 2, "{row:?}");
        }
    }

    /// MariaDB, async: a lock wait timeout in the first attempt is retried.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn mysql_async_a_lock_wait_timeout_is_retried_and_succeeds() {
        use diesel_occ::asynchronous::prelude::*;
        use diesel_occ::asynchronous::{self as occ, RetryPolicy};
        use my::Counter;

        let db = async_db!(diesel_async::AsyncMysqlConnection);
        let holder = tokio::sync::Mutex::new(db.conn().await);
        {
            let mut holder = holder.lock().await;
            holder.batch_execute(SEED).await.unwrap();
            holder.batch_execute("BEGIN").await.unwrap();
            holder.batch_execute(&increment(1)).await.unwrap();
        }
        let url = db.url().to_owned();
        let source = || diesel_occ_tests::connect_async::<diesel_async::AsyncMysqlConnection>(&url);
        let errors = Mutex::new(Vec::new());
        let policy = RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO);
        let value = occ::retry(&source, &policy, async |conn, attempt| {
            conn.batch_execute("SET SESSION innodb_lock_wait_timeout = 1")
                .await?;
            let mut row: Counter = attempt.find(conn, 1).await?;
            row.increment();
            if let Err(error) = row.save_checked(conn).await {
                errors.lock().unwrap().push(error.transient_kind());
                holder.lock().await.batch_execute("ROLLBACK").await.unwrap();
                return Err(error);
            }
            Ok(row.value)
        })
        .await
        .expect("retried");
        assert_eq!(value, 1);
        assert_eq!(
            *errors.lock().unwrap(),
            [Some(TransientKind::LockWaitTimeout)]
        );
    }

    /// SQLite, async: a busy database in the first attempt is retried.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_async_busy_is_retried_and_succeeds() {
        use diesel_occ::asynchronous::prelude::*;
        use diesel_occ::asynchronous::{self as occ, RetryPolicy};
        use lite::Counter;

        let db = async_db!(AsyncSqlite);
        let holder = tokio::sync::Mutex::new(db.conn().await);
        {
            let mut holder = holder.lock().await;
            holder.batch_execute(SEED).await.unwrap();
            holder.batch_execute("BEGIN IMMEDIATE").await.unwrap();
        }
        let url = db.url().to_owned();
        let source = || diesel_occ_tests::connect_async::<AsyncSqlite>(&url);
        let errors = Mutex::new(Vec::new());
        let policy = RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO);
        let value = occ::retry(&source, &policy, async |conn, attempt| {
            conn.batch_execute("PRAGMA busy_timeout = 0").await?;
            let mut row: Counter = attempt.find(conn, 1).await?;
            row.increment();
            if let Err(error) = row.save_checked(conn).await {
                errors.lock().unwrap().push(error.transient_kind());
                holder.lock().await.batch_execute("ROLLBACK").await.unwrap();
                return Err(error);
            }
            Ok(row.value)
        })
        .await
        .expect("retried");
        assert_eq!(value, 1);
        assert_eq!(*errors.lock().unwrap(), [Some(TransientKind::Busy)]);
    }
}
