//! Cancellation of `asynchronous::retry_in_blocking_task` (SQLite): a blocking task cannot be
//! stopped, so a dropped future lets its attempt finish whole (the wrapper's drop waits for it),
//! discards its connection and starts no other: every write lands whole, at most once. In place,
//! an attempt runs within one poll: its future is dropped only at the checkout or in a backoff.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use diesel::SqliteConnection;
use diesel_async::TransactionManager;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::Error;
use diesel_occ::asynchronous as occ;
use diesel_occ::prelude::{AttemptDsl, CheckedDsl, EntityDsl};
use diesel_occ::retry::{Attempt, RetryPolicy};

use super::AsyncConn as Conn;
use super::counters::{Counter, connection_id, load, quick, seed, try_plain_increment};
use crate::cancellation::cut::{Cut, CutConnection, Stage, assert_after_cut, policies};
use crate::pools::{Counting, impatient, warm_pool};

type TransactionManagerOf<C> = <C as diesel_async::AsyncConnection>::TransactionManager;

/// The counter's increment as a blocking attempt, stopping at `cut`'s stage until the drop.
fn increment(conn: &mut SqliteConnection, attempt: &Attempt, cut: &Cut) -> Result<Counter, Error> {
    let mut row: Counter = attempt.find(conn, 1)?;
    cut.block_at(Stage::AfterRead);
    if cut.stage() == Stage::Backoff && attempt.is_first() {
        // Another write since the read: the save conflicts and the helper backs off.
        let mut other: Counter = EntityDsl::find(conn, 1)?;
        other.increment();
        other.save_checked(conn)?;
    }
    row.increment();
    let saved = row.save_checked(conn);
    if saved.is_err() {
        cut.pass(Stage::Backoff);
    }
    saved?;
    cut.block_at(Stage::AfterSave);
    Ok(row)
}

/// A retry of [`increment`] in a blocking task on `source`, stopping at `cut`'s stage and
/// counting its `attempts`, each checking that it runs in a transaction if `in_transaction`.
fn cut_retry<'s>(
    source: &'s Counting<'_, Pool<Conn>>,
    policy: &'s RetryPolicy,
    cut: &Arc<Cut>,
    attempts: &Arc<AtomicU32>,
    in_transaction: bool,
) -> impl Future<Output = Result<Counter, Error>> + 's {
    let (counted, stopping) = (Arc::clone(attempts), Arc::clone(cut));
    occ::retry_in_blocking_task(source, policy, move |conn, attempt| {
        counted.fetch_add(1, Ordering::SeqCst);
        assert!(!in_transaction || attempt.runs_in_transaction());
        increment(conn, &attempt, &stopping)
    })
}

/// An increment on `pool` that no cut stops (one at the checkout).
async fn uncut_increment(pool: &Pool<Conn>) -> Counter {
    let (uncut, policy) = (Cut::new(Stage::Checkout), quick());
    let retry = occ::retry_in_blocking_task(pool, &policy, move |conn, attempt| {
        increment(conn, &attempt, &uncut)
    });
    retry.await.expect("the pool works after the drop")
}

/// The future is dropped while its escalated attempt, on its blocking thread, has saved inside
/// `BEGIN IMMEDIATE`. The wrapper's drop waits for that task, so once the drop returns the
/// attempt has ended: it committed exactly once, the write lock is free, the connection was
/// discarded, no later attempt ran, and the pool hands out a fresh one outside a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_blocking_task_retry_finishes_its_attempt_whole_and_discards_the_connection() {
    if Conn::IN_PLACE {
        // The attempt runs within one poll: its future cannot be dropped inside it.
        return;
    }
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool: Pool<Conn> = warm_pool(&db, 1).await;
    let mut holder = db.conn().await;
    let before = connection_id(&mut pool.get().await.expect("pooled")).await;
    let source = Counting::new(&pool);
    let (_, policy) = policies()[1].clone();
    let cut = Cut::new(Stage::AfterSave);
    let attempts = Arc::new(AtomicU32::new(0));
    let retry = cut_retry(&source, &policy, &cut, &attempts, true);
    cut.drop_at_stage(&pool, &mut holder, retry).await;
    let ran = || attempts.load(Ordering::SeqCst);
    assert_eq!(ran(), 1, "no attempt after the drop");
    let discards = source.discards();
    assert_eq!(discards, 1, "the attempt's connection is discarded");
    let size = pool.status().size;
    assert_eq!(size, 0, "the discarded connection left the pool");
    let mut other = impatient(&db).await;
    let row = load(&mut other, 1).await;
    let stored = (row.value, row.version);
    assert_eq!(stored, (1, 2), "the dropped write committed whole, once");
    let unlocked = try_plain_increment(&mut other, 1).await;
    unlocked.expect("the write lock is free once the drop returned");
    let fresh = pool.get().await;
    let mut fresh = fresh.expect("the pool still hands out connections");
    assert_ne!(connection_id(&mut fresh).await, before, "a new connection");
    let status = TransactionManagerOf::<Conn>::transaction_manager_status_mut(&mut fresh);
    let outside = matches!(status.transaction_depth(), Ok(None));
    assert!(outside, "a usable manager, outside any transaction");
    drop(fresh);
    let after = uncut_increment(&pool).await;
    assert_eq!((after.value, after.version), (3, 4));
    assert_eq!(ran(), 1, "the dropped retry never ran again");
}

/// Retries (optimistic and escalated) dropped at every reachable [`Stage`]: the row holds
/// exactly the writes that landed, whole and once (an interrupted attempt ran to its end), the
/// attempt's connection was discarded, no other attempt started, and the pool is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_blocking_task_retries_never_leave_a_half_applied_write() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool: Pool<Conn> = warm_pool(&db, 2).await;
    let mut checker = db.conn().await;
    let mut holder = db.conn().await;
    let mut read = async |conn: &mut Conn| load(conn, 1).await;
    let (mut stored, mut cuts) = (0, 0);
    for stage in Stage::all_reachable::<Conn>(true) {
        for (escalated, policy) in policies() {
            if stage == Stage::Backoff && escalated {
                continue;
            }
            let cut = Cut::new(stage);
            let source = Counting::new(&pool);
            let attempts = Arc::new(AtomicU32::new(0));
            let retry = cut_retry(&source, &policy, &cut, &attempts, false);
            cut.drop_at_stage(&pool, &mut holder, retry).await;
            let in_attempt = matches!(stage, Stage::AfterRead | Stage::AfterSave);
            let attempted = stage != Stage::Checkout;
            // The interrupted attempt's own write, or the other one that made it conflict.
            stored += i32::from(attempted);
            cuts += 1;
            let what = format!("a retry (escalated: {escalated}) cut at {stage:?}");
            let ran = attempts.load(Ordering::SeqCst);
            assert_eq!(ran, u32::from(attempted), "{what}: attempts run");
            let (discards, expected) = (source.discards(), u32::from(in_attempt));
            assert_eq!(discards, expected, "{what}: its connection discarded");
            assert_after_cut(&mut checker, &pool, stored, &mut read, &what).await;
        }
    }
    let after = uncut_increment(&pool).await;
    after.assert_whole();
    assert_eq!(after.value, stored + 1);
    eprintln!("{}: {cuts} cuts, {stored} writes landed", module_path!());
}
