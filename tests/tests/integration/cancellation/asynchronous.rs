//! Cancellation on an async connection: a save or retry future dropped at any stage leaves
//! no half-applied write, no lock and no out-of-step connection in the pool; a plain
//! diesel-async transaction dropped the same way is the control.

use std::time::Duration;

use diesel_async::AsyncConnection;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_occ::Error;
use diesel_occ::asynchronous as occ;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::{Attempt, RetryPolicy};

use super::AsyncConn as Conn;
use super::counters::{Counter, bump, connection_id, load, quick, seed, try_plain_increment};
use crate::cancellation::cut::{Cut, CutConnection, Stage, assert_after_cut, policies};
use crate::pools::{Counting, impatient, warm_pool};

/// The counter's increment as a retry attempt, stopping at `cut`'s stage.
async fn increment(conn: &mut Conn, attempt: &Attempt, cut: &Cut) -> Result<Counter, Error> {
    if !attempt.is_first() {
        // Only when the hour's backoff drew next to nothing: still between the attempts.
        cut.stop_at(Stage::Backoff).await;
    }
    let mut row: Counter = attempt.find(conn, 1).await?;
    cut.stop_at(Stage::AfterRead).await;
    if cut.stage() == Stage::Backoff {
        // Another write since the read: the save conflicts and the helper backs off.
        bump(conn, 1).await;
    }
    row.increment();
    let saved = row.save_checked(conn).await;
    if saved.is_err() {
        cut.pass(Stage::Backoff);
    }
    saved?;
    cut.stop_at(Stage::AfterSave).await;
    cut.statement(conn).await?;
    Ok(row)
}

/// A retry of [`increment`] on `source`, stopping at `cut`'s stage.
async fn cut_retry(source: &Counting<'_, Pool<Conn>>, policy: &RetryPolicy, cut: &Cut) {
    let retry = occ::retry(source, policy, async |conn, attempt| {
        increment(conn, &attempt, cut).await.map(drop)
    });
    let _: Result<(), Error> = retry.await;
}

/// Drops an escalated retry of [`increment`] on `pool` at `stage`; returns its discards.
async fn drop_escalated_retry(pool: &Pool<Conn>, holder: &mut Conn, stage: Stage) -> u32 {
    let source = Counting::new(pool);
    let cut = Cut::new(stage);
    let policy = quick().escalate_after(0);
    let retry = cut_retry(&source, &policy, &cut);
    cut.drop_at_stage(pool, holder, retry).await;
    source.discards()
}

/// Until a plain increment from `other` (impatient) gets in: the blocking-pool SQLite wrapper
/// closes a dropped connection once its blocking task ends, so its lock may outlive the drop.
async fn wait_until_unlocked(other: &mut Conn) {
    let mut tries = 0;
    while let Err(error) = try_plain_increment(other, 1).await {
        tries += 1;
        assert!(tries < 100, "the lock outlived the dropped future: {error}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Saves and retries (optimistic and escalated) dropped at every [`Stage`] they pass: the row
/// holds exactly the writes that landed, whole (a save that ran commits unless its escalated
/// transaction was open), the attempt's connection was discarded, the pool is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_saves_and_retries_never_leave_a_half_applied_write() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool: Pool<Conn> = warm_pool(&db, 2).await;
    let mut checker = db.conn().await;
    let mut holder = db.conn().await;
    let mut read = async |conn: &mut Conn| load(conn, 1).await;
    let (mut stored, mut cuts) = (0, 0);
    use Stage::*;
    for stage in Stage::all_reachable::<Conn>(false) {
        if !matches!(stage, Checkout | Backoff) {
            let cut = Cut::new(stage);
            let save = async {
                // A connection whose query future was dropped must not go back to the pool
                // (an AsyncMysqlConnection can be left out of step with its server): this one
                // leaves it and closes with the future, as the helper discards an attempt's.
                let pooled = pool.get().await.expect("pooled connection");
                let mut conn = Object::take(pooled);
                let mut row = load(&mut conn, 1).await;
                cut.stop_at(Stage::AfterRead).await;
                row.increment();
                row.save_checked(&mut conn).await.expect("uncontended save");
                cut.stop_at(Stage::AfterSave).await;
                cut.statement(&mut conn).await.expect("gate statement");
            };
            cut.drop_at_stage(&pool, &mut holder, save).await;
            stored += i32::from(stage != AfterRead);
            cuts += 1;
            let what = format!("a plain save cut at {stage:?}");
            assert_after_cut(&mut checker, &pool, stored, &mut read, &what).await;
        }
        for (escalated, policy) in policies() {
            if stage == Backoff && escalated {
                continue;
            }
            let cut = Cut::new(stage);
            let source = Counting::new(&pool);
            let retry = cut_retry(&source, &policy, &cut);
            cut.drop_at_stage(&pool, &mut holder, retry).await;
            let in_attempt = matches!(stage, AfterRead | AfterSave | MidStatement);
            let landed = match stage {
                AfterSave | MidStatement => !escalated,
                // The other write that made the attempt conflict.
                Backoff => true,
                Checkout | AfterRead => false,
            };
            stored += i32::from(landed);
            cuts += 1;
            let what = format!("a retry (escalated: {escalated}) cut at {stage:?}");
            let (discards, expected) = (source.discards(), u32::from(in_attempt));
            assert_eq!(discards, expected, "{what}: its connection discarded");
            assert_after_cut(&mut checker, &pool, stored, &mut read, &what).await;
        }
    }
    let (uncut, policy) = (Cut::new(Stage::Checkout), quick());
    let after = occ::retry(&pool, &policy, async |conn, attempt| {
        increment(conn, &attempt, &uncut).await
    });
    let after = after.await.expect("the pool is usable after all that");
    after.assert_whole();
    assert_eq!(after.value, stored + 1);
    eprintln!("{}: {cuts} cuts, {stored} writes landed", module_path!());
}

/// A retry dropped while its escalated attempt has saved and holds the lock: the connection
/// is discarded (closed), so the server rolls back and the lock is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropping_a_retry_inside_an_escalated_attempt_rolls_back_and_frees_the_lock() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    let discards = drop_escalated_retry(&pool, &mut db.conn().await, Stage::AfterSave).await;
    assert_eq!(discards, 1, "the attempt's connection is discarded");
    let mut other = impatient(&db).await;
    let row = load(&mut other, 1).await;
    assert_eq!((row.value, row.version), (0, 1), "nothing committed");
    wait_until_unlocked(&mut other).await;
    let size = pool.status().size;
    assert_eq!(size, 1, "the discarded connection left the pool");
    let pooled = pool.get().await;
    drop(pooled.expect("the pool still hands out connections"));
}

/// A retry dropped while the server runs its attempt's statement: the connection is
/// discarded, so the pool never hands out one whose last response is unread (an
/// `AsyncMysqlConnection` in that state answers the next query with the previous one's rows).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_dropped_mid_statement_leaves_no_out_of_step_connection_in_the_pool() {
    if Conn::IN_PLACE {
        // Its statements run within one poll: no future is ever dropped inside one.
        return;
    }
    let db = async_test_db!();
    seed(&db, 1).await;
    // One connection: whatever the next checkout gets, it is not the old one.
    let pool = warm_pool(&db, 1).await;
    let mut holder = db.conn().await;
    let before = connection_id(&mut pool.get().await.unwrap()).await;
    let discards = drop_escalated_retry(&pool, &mut holder, Stage::MidStatement).await;
    assert_eq!(discards, 1);
    let mut conn = pool.get().await.expect("a new connection");
    let id = connection_id(&mut conn).await;
    assert_ne!(id, before, "not the discarded one");
    for _ in 0..5 {
        let row = load(&mut conn, 1).await;
        let stored = (row.value, row.version);
        assert_eq!(stored, (0, 1), "the escalated save was rolled back");
    }
}

/// The control: a plain diesel-async transaction dropped the same way keeps its lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_a_dropped_plain_transaction_keeps_its_lock() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let mut conn = db.conn().await;
    let cut = Cut::new(Stage::AfterSave);
    let transaction = conn.transaction::<(), Error, _>(async |conn| {
        let mut row: Counter = Counter::find(conn, 1).await?;
        row.increment();
        row.save_checked(conn).await?;
        cut.stop_at(Stage::AfterSave).await;
        Ok(())
    });
    cut.drop_when_stopped(transaction).await;
    let mut other = impatient(&db).await;
    let blocked = try_plain_increment(&mut other, 1).await.is_err();
    assert!(blocked, "the dropped transaction still holds the lock");
    drop(conn);
    wait_until_unlocked(&mut other).await;
    let row = load(&mut other, 1).await;
    let stored = (row.value, row.version);
    assert_eq!(stored, (1, 2), "only the other writer's increment");
}
