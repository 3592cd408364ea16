//! The retry helpers retry what the databases produced: a deadlock victim, a serialization failure,
//! a lock wait timeout and a busy database, each retried until the attempt succeeds.

use std::sync::Mutex;

use diesel_occ::asynchronous as occ;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::entities::Counter;

use super::*;

/// Each failed attempt's number and the transient kind of its error.
type Failures = Mutex<Vec<(u32, Option<TransientKind>)>>;

/// Notes an error in `failures` as attempt `number`'s.
fn note(failures: &Failures, number: u32) -> impl Fn(&Error) + '_ {
    move |error| {
        let seen = (number, error.transient_kind());
        failures.lock().unwrap().push(seen);
    }
}

/// PostgreSQL, blocking, through r2d2: the escalated attempt locks row 1, another transaction
/// holds row 2 and asks for row 1, the attempt asks for row 2. Its session checks for deadlocks
/// first (100 ms, against 10 s), so it is the victim; the helper retries it, and it succeeds.
#[test]
fn postgres_a_deadlock_victim_is_retried_and_succeeds() {
    use diesel::r2d2::{ConnectionManager, Pool};
    use diesel_occ::blocking;
    use diesel_occ::prelude::*;

    let db = sync_db!(diesel::PgConnection);
    db.conn().batch_execute(SEED).unwrap();
    let manager = ConnectionManager::<diesel::PgConnection>::new(db.url());
    let pool = Pool::builder().max_size(2).build(manager).unwrap();
    let barrier = Barrier::new(2);
    let errors = Failures::default();
    // The second attempt starts once the other transaction committed, or it could deadlock again.
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
        let result = blocking::retry(&pool, &policy, |conn, attempt| {
            conn.batch_execute("SET LOCAL deadlock_timeout = '100ms'")?;
            if attempt.number() == 2 {
                other_done.recv().unwrap();
            }
            let mut first: Counter = attempt.find(conn, 1)?;
            if attempt.is_first() {
                barrier.wait();
            }
            let second = attempt.find::<Counter>(conn, 2);
            let mut second = second.inspect_err(note(&errors, attempt.number()))?;
            first.increment();
            second.increment();
            first.save_checked(conn)?;
            second.save_checked(conn)?;
            Ok(attempt.number())
        });
        let other = other.join().unwrap();
        other.expect("the other transaction commits");
        result
    });
    assert_eq!(result.expect("retried"), 2);
    let deadlocked = [(1, Some(TransientKind::Deadlock))];
    assert_eq!(*errors.lock().unwrap(), deadlocked);
    let mut conn = db.conn();
    let rows = [1, 2].map(|id| Counter::find(&mut conn, id).unwrap());
    let both = rows.iter().all(|r| r.value == 2);
    assert!(both, "both writes, whole: {rows:?}");
}

/// PostgreSQL, async, through a connecting source: the attempt's transaction runs at REPEATABLE
/// READ and takes its snapshot, another writer commits a change to the row, and the attempt's
/// locking read fails with 40001; the helper retries and the second attempt reads the new row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_async_a_serialization_failure_is_retried_and_succeeds() {
    use diesel_occ::asynchronous::prelude::*;

    let db = async_db!(diesel_async::AsyncPgConnection);
    let other = tokio::sync::Mutex::new(db.conn().await);
    other.lock().await.batch_execute(SEED).await.unwrap();
    let url = db.url().to_owned();
    let source = || diesel_occ_tests::connect_async::<diesel_async::AsyncPgConnection>(&url);
    let errors = Failures::default();
    let policy = RetryPolicy::new()
        .backoff(Duration::ZERO, Duration::ZERO)
        .escalate_after(0);
    let value = occ::retry(&source, &policy, async |conn, attempt| {
        conn.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; SELECT 1")
            .await?;
        if attempt.is_first() {
            let mut other = other.lock().await;
            other.batch_execute(&increment(1)).await.unwrap();
        }
        let row = attempt.find::<Counter>(conn, 1).await;
        let mut row = row.inspect_err(note(&errors, attempt.number()))?;
        row.increment();
        row.save_checked(conn).await?;
        Ok(row.value)
    })
    .await
    .expect("retried");
    assert_eq!(value, 2, "the other writer's increment, then ours");
    let failed = [(1, Some(TransientKind::SerializationFailure))];
    assert_eq!(*errors.lock().unwrap(), failed);
}

/// MariaDB, async, through deadpool: the same deadlock; InnoDB rolls back the lighter
/// transaction, and the other one wrote four rows, so the attempt (one row) is the victim.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_async_a_deadlock_victim_is_retried_and_succeeds() {
    use diesel_async::pooled_connection::AsyncDieselConnectionManager;
    use diesel_async::pooled_connection::deadpool::Pool;
    use diesel_occ::asynchronous::prelude::*;

    let db = async_db!(diesel_async::AsyncMysqlConnection);
    db.conn().await.batch_execute(SEED).await.unwrap();
    let manager = AsyncDieselConnectionManager::<diesel_async::AsyncMysqlConnection>::new(db.url());
    let pool = Pool::builder(manager).max_size(2).build().unwrap();
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
    let errors = Failures::default();
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
        let second = attempt.find::<Counter>(conn, 2).await;
        let mut second = second.inspect_err(note(&errors, attempt.number()))?;
        first.increment();
        second.increment();
        first.save_checked(conn).await?;
        second.save_checked(conn).await?;
        Ok(attempt.number())
    })
    .await;
    other.await.unwrap().expect("the other transaction commits");
    assert_eq!(result.expect("retried"), 2);
    let deadlocked = [(1, Some(TransientKind::Deadlock))];
    assert_eq!(*errors.lock().unwrap(), deadlocked);
    let mut conn = db.conn().await;
    for id in [1, 2] {
        let row = Counter::find(&mut conn, id).await.unwrap();
        assert_eq!(row.value, 2, "{row:?}");
    }
}

/// An attempt meeting a lock `hold` keeps (its session `impatient`) fails, the holder lets go,
/// and the second attempt saves; returns the failed attempt's transient kind.
macro_rules! held_lock_is_retried {
    ($conn:ty, hold $hold:expr, impatient $impatient:expr) => {{
        use diesel_occ::asynchronous::prelude::*;

        let db = async_db!($conn);
        let holder = tokio::sync::Mutex::new(db.conn().await);
        let seeded = holder.lock().await.batch_execute(SEED).await;
        seeded.unwrap();
        holder.lock().await.batch_execute($hold).await.unwrap();
        let url = db.url().to_owned();
        let source = || diesel_occ_tests::connect_async::<$conn>(&url);
        let errors = Mutex::new(Vec::new());
        let policy = RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO);
        let value = occ::retry(&source, &policy, async |conn, attempt| {
            conn.batch_execute($impatient).await?;
            let mut row: Counter = attempt.find(conn, 1).await?;
            row.increment();
            if let Err(error) = row.save_checked(conn).await {
                errors.lock().unwrap().push(error.transient_kind());
                holder.lock().await.batch_execute("ROLLBACK").await.unwrap();
                return Err(error);
            }
            Ok(row.value)
        })
        .await;
        assert_eq!(value.expect("retried"), 1);
        errors.into_inner().unwrap()
    }};
}

/// MariaDB, async: a lock wait timeout in the first attempt is retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_async_a_lock_wait_timeout_is_retried_and_succeeds() {
    let errors = held_lock_is_retried!(diesel_async::AsyncMysqlConnection,
        hold MYSQL_HOLD, impatient MYSQL_IMPATIENT);
    assert_eq!(errors, [Some(TransientKind::LockWaitTimeout)]);
}

/// SQLite, async: a busy database in the first attempt is retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_async_busy_is_retried_and_succeeds() {
    let errors = held_lock_is_retried!(AsyncSqlite,
        hold "BEGIN IMMEDIATE", impatient "PRAGMA busy_timeout = 0");
    assert_eq!(errors, [Some(TransientKind::Busy)]);
}
