//! Transient errors the real databases produced, classified through each driver (libpq and
//! tokio-postgres, mysqlclient and mysql_async, SQLite through both APIs), and retried.
//!
//! Deadlocks are forced: two transactions each lock a row, meet at a barrier, then ask for the
//! other's. Serialization failures, lock waits and busy errors are made step by step.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_occ::{Error, TransientKind};
use diesel_occ_tests::{AsyncTestConnection, AsyncTestDb, TestConnection, TestDb};

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
    let barrier = &Barrier::new(2);
    std::thread::scope(|scope| {
        let workers = [(1, 2), (2, 1)].map(|(first, second)| {
            scope.spawn(move || {
                let mut conn = db.conn();
                conn.batch_execute(session).expect("session settings");
                conn.transaction(|conn| {
                    conn.batch_execute(&increment(first))?;
                    barrier.wait();
                    conn.batch_execute(&increment(second))
                })
            })
        });
        let outcomes = workers.into_iter().map(|w| w.join().expect("worker"));
        outcomes.collect()
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

/// [`test_db!`] for a blocking `$conn`.
macro_rules! sync_db {
    ($conn:ty) => {{
        type Conn = $conn;
        test_db!()
    }};
}

/// [`async_test_db!`] for an async `$conn`.
macro_rules! async_db {
    ($conn:ty) => {{
        type Conn = $conn;
        async_test_db!()
    }};
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
    let snapshot = a.build_transaction().repeatable_read().run(|a| {
        a.batch_execute("SELECT value FROM counters WHERE id = 1")?;
        let other_writer = b.batch_execute(&increment(1));
        other_writer.expect("the other writer commits");
        a.batch_execute(&increment(1))
    });
    let error = snapshot.unwrap_err();
    use diesel::result::{DatabaseErrorKind::SerializationFailure, Error::DatabaseError};
    assert!(matches!(error, DatabaseError(SerializationFailure, _)));
    assert_eq!(kind(error), Some(TransientKind::SerializationFailure));
}

/// SERIALIZABLE: write skew, each transaction reads both rows and writes one (40001).
#[test]
fn postgres_libpq_serializable_write_skew_is_a_serialization_failure() {
    let db = sync_db!(diesel::PgConnection);
    let (mut a, mut b) = (db.conn(), db.conn());
    a.batch_execute(SEED).unwrap();
    let read_both = "BEGIN ISOLATION LEVEL SERIALIZABLE; \
        SELECT sum(value) FROM counters WHERE id IN (1, 2)";
    for conn in [&mut a, &mut b] {
        conn.batch_execute(read_both).unwrap();
    }
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
    let snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT value FROM counters WHERE id = 1";
    a.batch_execute(snapshot).await.unwrap();
    let other_writer = b.batch_execute(&increment(1)).await;
    other_writer.expect("the other writer commits");
    let error = a.batch_execute(&increment(1)).await.unwrap_err();
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(kind(error), Some(TransientKind::SerializationFailure));
}

// MariaDB / MySQL: InnoDB detects deadlocks at once; lock waits time out after 1 s here.

#[cfg(feature = "mysql")]
#[test]
fn mysql_mysqlclient_deadlock_is_a_deadlock() {
    let db = sync_db!(diesel::MysqlConnection);
    let session = "SET SESSION innodb_lock_wait_timeout = 50";
    assert_one_deadlock(sync_deadlock(&db, session));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_mysql_async_deadlock_is_a_deadlock() {
    let db = async_db!(diesel_async::AsyncMysqlConnection);
    assert_one_deadlock(async_deadlock(&db, "SET SESSION innodb_lock_wait_timeout = 50").await);
}

/// The kind of error a held lock gives an impatient writer: `a` runs `hold` and keeps its
/// transaction open while `b`, after its `impatient` session setting, updates the same row.
macro_rules! held_lock_kind {
    ($db:expr, hold $hold:expr, impatient $impatient:expr $(, $dot_await:tt)?) => {{
        let (mut a, mut b) = ($db.conn()$(.$dot_await)?, $db.conn()$(.$dot_await)?);
        a.batch_execute(SEED)$(.$dot_await)?.unwrap();
        b.batch_execute($impatient)$(.$dot_await)?.unwrap();
        a.batch_execute($hold)$(.$dot_await)?.unwrap();
        let error = b.batch_execute(&increment(1))$(.$dot_await)?.unwrap_err();
        a.batch_execute("ROLLBACK")$(.$dot_await)?.unwrap();
        kind(error)
    }};
}

const MYSQL_HOLD: &str = "BEGIN; UPDATE counters SET value = value + 1 WHERE id = 1";
const MYSQL_IMPATIENT: &str = "SET SESSION innodb_lock_wait_timeout = 1";

#[cfg(feature = "mysql")]
#[test]
fn mysql_mysqlclient_lock_wait_timeout_is_classified() {
    let db = sync_db!(diesel::MysqlConnection);
    let kind = held_lock_kind!(db, hold MYSQL_HOLD, impatient MYSQL_IMPATIENT);
    assert_eq!(kind, Some(TransientKind::LockWaitTimeout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_mysql_async_lock_wait_timeout_is_classified() {
    let db = async_db!(diesel_async::AsyncMysqlConnection);
    let kind = held_lock_kind!(db, hold MYSQL_HOLD, impatient MYSQL_IMPATIENT, await);
    assert_eq!(kind, Some(TransientKind::LockWaitTimeout));
}

// SQLite: a writer that may not wait meets another connection's write lock.

#[test]
fn sqlite_busy_is_classified() {
    let db = sync_db!(Sqlite);
    let kind = held_lock_kind!(db, hold "BEGIN IMMEDIATE", impatient "PRAGMA busy_timeout = 0");
    assert_eq!(kind, Some(TransientKind::Busy));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_busy_through_the_async_wrapper_is_classified() {
    let db = async_db!(AsyncSqlite);
    let kind =
        held_lock_kind!(db, hold "BEGIN IMMEDIATE", impatient "PRAGMA busy_timeout = 0", await);
    assert_eq!(kind, Some(TransientKind::Busy));
}

mod retried;
