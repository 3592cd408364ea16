//! The retry helper's rules that do not depend on the flavour, written once: an
//! attempt's atomicity, the caller's own transaction, a batch's conflict and a row
//! deleted under an attempt. The pools differ (r2d2 and deadpool); the rules do not.

flavour_prelude!();

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use diesel::QueryDsl;
#[flavour(blocking)]
use diesel::connection::TransactionManager;
#[flavour(asynchronous)]
use diesel_async::TransactionManager;
#[flavour(asynchronous)]
use diesel_occ::asynchronous::{AsyncConnectionSource as Source, retry};
#[flavour(blocking)]
use diesel_occ::blocking::{ConnectionSource as Source, retry};
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::{Error, PoolError};
use diesel_occ_tests::entities::Counter;

#[flavour(blocking)]
use super::blocking_only::pool;
use super::schema;

/// Deadpool's pool of `size` connections, all opened before the test starts.
#[flavour(asynchronous)]
async fn pool(
    db: &TestDb<Conn>,
    size: usize,
) -> diesel_async::pooled_connection::deadpool::Pool<Conn> {
    crate::pools::warm_pool(db, size).await
}

/// Rows 1 and 2 of `counters`, at value 0.
#[flavour]
async fn seed_two(db: &TestDb<Conn>) {
    for id in [1, 2] {
        diesel::insert_into(schema::counters::table)
            .values(Counter::whole(id, 0))
            .execute(&mut db.conn().await)
            .await
            .expect("seed");
    }
}

/// Rows 1 and 2 as they stand.
#[flavour]
async fn rows(db: &TestDb<Conn>) -> (Counter, Counter) {
    let mut conn = db.conn().await;
    (
        Counter::find(&mut conn, 1).await.expect("row 1"),
        Counter::find(&mut conn, 2).await.expect("row 2"),
    )
}

/// Another writer's checked increment of row `id`, on a connection of its own.
#[flavour]
async fn bump(db: &TestDb<Conn>, id: i32) {
    let mut conn = db.conn().await;
    let mut row = Counter::find(&mut conn, id).await.expect("row");
    row.increment();
    row.save_checked(&mut conn).await.expect("the other writer");
}

/// A short backoff: the scenarios force their conflicts, they do not wait them out.
fn quick() -> RetryPolicy {
    RetryPolicy::new().backoff(Duration::ZERO, Duration::from_millis(2))
}

/// Makes row `id` hot in `policy`'s memory: one attempt that another writer overtakes.
#[flavour]
async fn make_hot<S: Source<Connection = Conn>>(
    db: &TestDb<Conn>,
    source: &S,
    policy: &RetryPolicy,
    id: i32,
) {
    let _ = retry(
        source,
        &policy.clone().max_attempts(1),
        async |conn, attempt| {
            let mut row: Counter = attempt.find(conn, id).await?;
            bump(db, id).await;
            row.increment();
            row.save_checked(conn).await
        },
    )
    .await;
    assert!(
        policy
            .hot_row_memory()
            .expect("a memory")
            .is_hot::<Counter>(&id)
    );
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

#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_two_row_change_lands_whole_or_not_at_all_as_the_atomicity_rule_says() {
    let db = db!();
    seed_two(&db).await;
    let pool = pool(&db, 2).await;
    let hot = quick()
        .max_attempts(1)
        .escalate_hot_rows(1, Duration::from_secs(3600));
    make_hot(&db, &pool, &hot, 1).await;
    let plain = quick().max_attempts(1);
    let cases = [
        ("optimistic", plain.clone(), false),
        ("optimistic, closure's transaction", plain.clone(), true),
        ("escalated", plain.clone().escalate_after(0), false),
        (
            "escalated, closure's transaction",
            plain.clone().escalate_after(0),
            true,
        ),
        ("hot row", hot.clone(), false),
        ("hot row, closure's transaction", hot.clone(), true),
    ];
    for (kind, policy, own) in cases {
        let before = rows(&db).await;
        let result: Result<(), Error> = retry(&pool, &policy, async |conn, attempt| {
            two_rows(conn, &attempt, own).await
        })
        .await;
        assert!(
            matches!(result, Err(Error::RetriesExhausted(_))),
            "{kind}: {result:?}"
        );
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
#[flavour(blocking)]
struct Held(std::sync::Mutex<Conn>);

#[flavour(blocking)]
impl Held {
    fn new(conn: Conn) -> Held {
        Held(std::sync::Mutex::new(conn))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Conn> {
        self.0.lock().unwrap()
    }
}

#[flavour(blocking)]
impl Source for Held {
    type Connection = Conn;
    type Pooled<'a>
        = std::sync::MutexGuard<'a, Conn>
    where
        Self: 'a;
    fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        Ok(self.lock())
    }
}

/// A source whose one connection is inside the caller's test transaction.
#[flavour(asynchronous)]
struct Held(tokio::sync::Mutex<Conn>);

#[flavour(asynchronous)]
impl Held {
    fn new(conn: Conn) -> Held {
        Held(tokio::sync::Mutex::new(conn))
    }

    async fn lock(&self) -> tokio::sync::MutexGuard<'_, Conn> {
        self.0.lock().await
    }
}

#[flavour(asynchronous)]
impl Source for Held {
    type Connection = Conn;
    type Pooled<'a>
        = tokio::sync::MutexGuard<'a, Conn>
    where
        Self: 'a;
    async fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        Ok(self.lock().await)
    }
}

#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_helper_never_ends_the_callers_transaction() {
    let db = db!();
    seed_two(&db).await;
    let pool = pool(&db, 2).await;
    let policy = quick().escalate_hot_rows(1, Duration::from_secs(3600));
    make_hot(&db, &pool, &policy, 1).await;
    let before = rows(&db).await;

    let mut conn = db.conn().await;
    conn.begin_test_transaction()
        .await
        .expect("test transaction");
    // The caller's own work, before the helper runs.
    let mut own = Counter::find(&mut conn, 2).await.expect("row 2");
    own.increment();
    own.save_checked(&mut conn)
        .await
        .expect("the caller's write");
    let held = Held::new(conn);
    let cases = [
        (
            "cold attempt",
            quick().escalate_hot_rows(1, Duration::from_secs(3600)),
        ),
        ("hot row", policy.clone()),
        ("escalated", quick().escalate_after(0)),
    ];
    for (kind, policy) in cases {
        let value = retry(&held, &policy, async |conn, attempt| {
            let mut row: Counter = attempt.find(conn, 1).await?;
            row.increment();
            row.save_checked(conn).await?;
            Ok(row.value)
        })
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        let mut conn = held.lock().await;
        let depth =
            <<Conn as Connection>::TransactionManager as TransactionManager<Conn>>::transaction_manager_status_mut(&mut conn)
                .transaction_depth()
                .expect("a sound transaction manager");
        assert_eq!(
            depth.map(|d| d.get()),
            Some(1),
            "{kind}: the caller's transaction is still open"
        );
        assert_eq!(
            Counter::find(&mut *conn, 1).await.expect("row 1").value,
            value,
            "{kind}: seen inside it"
        );
    }
    // Nothing of it is committed: not the caller's write, not the helper's.
    assert_eq!(rows(&db).await, before);
}

#[flavour]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_conflict_escalates_and_a_deleted_row_is_retried_at_once() {
    let db = db!();
    seed_two(&db).await;
    let pool = pool(&db, 2).await;
    // A batch that another writer overtakes counts as a conflict.
    let escalated = retry(
        &pool,
        &quick().max_attempts(3).escalate_after(1),
        async |conn, attempt| {
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
        },
    )
    .await
    .expect("the second attempt wins");
    assert!(escalated, "the batch's conflict escalated the next attempt");

    // A row deleted under the attempt: no backoff (an hour here), and the re-read ends
    // the loop with NotFound.
    let hour = Duration::from_secs(3600);
    let started = Instant::now();
    let attempts = AtomicU32::new(0);
    let result: Result<(), Error> = retry(
        &pool,
        &RetryPolicy::new().backoff(hour, hour).escalate_after(1),
        async |conn, attempt| {
            attempts.store(attempt.number(), Ordering::SeqCst);
            assert!(!attempt.is_escalated(), "a deletion does not escalate");
            let mut row: Counter = attempt.find(conn, 2).await?;
            diesel::delete(schema::counters::table.find(2))
                .execute(&mut db.conn().await)
                .await
                .expect("the other writer deletes");
            row.increment();
            row.save_checked(conn).await
        },
    )
    .await;
    assert!(matches!(result, Err(Error::NotFound(_))), "{result:?}");
    assert_eq!(attempts.into_inner(), 2);
    assert!(started.elapsed() < Duration::from_secs(60), "it slept");
}
