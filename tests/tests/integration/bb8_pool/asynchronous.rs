//! The async retry helper on a bb8 pool, built from what `diesel_occ::asynchronous::pool::bb8`
//! re-exports. Conflicts are forced by another writer that commits between the
//! attempt's read and its save; a cancellation waits until the attempt has read (a
//! oneshot), a kill is awaited inside the attempt.

use std::sync::Mutex as StdMutex;

use diesel_occ::Error;
use diesel_occ::asynchronous::pool::bb8::{
    AsyncDieselConnectionManager, ManagerConfig, Pool, QueueStrategy,
};
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::asynchronous::{self as occ};
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::{AsyncTestConnection, AsyncTestDb, Backend, connect_async};
use tokio::sync::{Mutex, oneshot};

use super::AsyncConn as Conn;
use super::counters::{
    Counter, bump, connection_id, exhausted, load, quick, seed, try_plain_increment,
};

/// A bb8 pool of `size` test connections (see `AsyncTestConnection::SETUP`), all open
/// and idle, handed out first in, first out, so that consecutive checkouts from the
/// warm pool are distinct connections.
async fn warm_pool(db: &AsyncTestDb<Conn>, size: u32) -> Pool<Conn> {
    let mut config = ManagerConfig::default();
    config.custom_setup = Box::new(|url| Box::pin(connect_async::<Conn>(url)));
    let manager = AsyncDieselConnectionManager::<Conn>::new_with_config(db.url(), config);
    let pool = Pool::builder()
        .max_size(size)
        .min_idle(size)
        .queue_strategy(QueueStrategy::Fifo)
        .build(manager)
        .await
        .expect("bb8 pool");
    assert_eq!(pool.state().idle_connections, size);
    pool
}

/// How many connections the pool handed out so far.
fn checkouts(pool: &Pool<Conn>) -> u64 {
    let statistics = pool.state().statistics;
    statistics.get_direct + statistics.get_waited
}

/// The first attempt meets a conflict; the helper gives its connection back, checks
/// another one out and the second attempt saves on top of the other writer's value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_attempt_checks_a_bb8_connection_out_and_a_forced_conflict_is_retried() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 2).await;
    let other = Mutex::new(db.conn().await);
    let used = StdMutex::new(Vec::new());
    let before = checkouts(&pool);
    let value = occ::retry(&pool, &quick(), async |conn, attempt| {
        let id = connection_id(conn).await;
        used.lock().unwrap().push(id);
        let mut row: Counter = attempt.find(conn, 1).await?;
        if attempt.is_first() {
            bump(&mut *other.lock().await, 1).await;
        }
        row.increment();
        row.save_checked(conn).await?;
        Ok(row.value)
    })
    .await
    .expect("the second attempt saves");
    assert_eq!(value, 2, "on top of the other writer's 1");
    assert_eq!(checkouts(&pool) - before, 2, "one checkout per attempt");
    let used = used.into_inner().unwrap();
    assert_ne!(used[0], used[1], "first in, first out: {used:?}");
    let state = pool.state();
    assert_eq!(state.idle_connections, 2, "both went back: {state:?}");
    assert_eq!(state.statistics.connections_closed_broken, 0, "{state:?}");
    load(&mut db.conn().await, 1).await.assert_whole();

    // A conflict on every attempt: exhausted after exactly three, every connection back.
    let result: Result<(), Error> =
        occ::retry(&pool, &quick().max_attempts(3), async |conn, attempt| {
            let mut row: Counter = attempt.find(conn, 1).await?;
            bump(&mut *other.lock().await, 1).await;
            row.increment();
            row.save_checked(conn).await
        })
        .await;
    assert_eq!(exhausted(result).attempts(), 3);
    assert_eq!(pool.state().idle_connections, 2);
}

/// Runs an attempt under `policy` that reads row 1 and then waits forever, and drops
/// the helper's future once the attempt has read: the attempt is cancelled. Returns
/// the cancelled attempt's connection id.
async fn cancel_after_the_read(pool: &Pool<Conn>, policy: &RetryPolicy) -> i64 {
    let (read, has_read) = oneshot::channel();
    let read = StdMutex::new(Some(read));
    let retry = occ::retry(pool, policy, async |conn, attempt| {
        let id = connection_id(conn).await;
        let _row: Counter = attempt.find(conn, 1).await?;
        if let Some(read) = read.lock().unwrap().take() {
            read.send(id).expect("the test waits");
        }
        std::future::pending::<Result<(), Error>>().await
    });
    tokio::pin!(retry);
    let id = tokio::select! {
        result = &mut retry => panic!("the attempt never ends: {result:?}"),
        id = has_read => id.expect("the attempt read"),
    };
    id
}

/// bb8 cannot take a connection out of its pool, so the source marks a discarded one
/// broken: a cancelled attempt's connection (its state unknown) is closed by the pool
/// instead of being handed out again, here with nothing else telling bb8 it is broken
/// (no transaction was open). The pool then opens a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_attempts_connection_is_closed_not_handed_out_again() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 1).await;
    let cancelled = cancel_after_the_read(&pool, &quick()).await;
    assert_eq!(pool.state().statistics.connections_closed_broken, 1);
    let mut next = pool.get().await.expect("a new connection");
    assert_ne!(connection_id(&mut next).await, cancelled);
}

/// The same while the attempt holds a row lock (escalated from the first attempt: a
/// locking read in a transaction): closing the connection makes the server roll back,
/// so a plain write on another connection gets the row (it waits for the lock until
/// then, it does not race it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_locking_attempt_releases_its_lock_when_bb8_closes_its_connection() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let pool = warm_pool(&db, 1).await;
    let cancelled = cancel_after_the_read(&pool, &quick().escalate_after(0)).await;
    assert_eq!(pool.state().statistics.connections_closed_broken, 1);
    let written = try_plain_increment(&mut db.conn().await, 1).await;
    assert_eq!(written.expect("the lock was released"), 1);
    let mut next = pool.get().await.expect("a new connection");
    assert_ne!(connection_id(&mut next).await, cancelled);
}

/// A server session killed in the middle of an attempt (after its read, before its
/// save; the kill is awaited): the save fails, and the dead connection is closed
/// rather than given back, so the pool's next checkout is a new, working session.
/// SQLite has no session to kill: the cancellation tests above cover it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_lost_mid_attempt_is_not_handed_out_again() {
    let db = async_test_db!();
    let kill: fn(i64) -> String = match Conn::BACKEND {
        Backend::Postgres => |id: i64| format!("SELECT pg_terminate_backend({id})"),
        Backend::Mysql => |id: i64| format!("KILL {id}"),
        Backend::Sqlite => return,
    };
    seed(&db, 1).await;
    let pool = warm_pool(&db, 1).await;
    let admin = Mutex::new(db.conn().await);
    let killed = StdMutex::new(None);
    let result: Result<(), Error> = occ::retry(&pool, &quick(), async |conn, attempt| {
        let id = connection_id(conn).await;
        let mut row: Counter = attempt.find(conn, 1).await?;
        if attempt.is_first() {
            diesel_async::SimpleAsyncConnection::batch_execute(&mut *admin.lock().await, &kill(id))
                .await
                .expect("kill the attempt's session");
            *killed.lock().unwrap() = Some(id);
        }
        row.increment();
        row.save_checked(conn).await
    })
    .await;
    let lost = matches!(&result, Err(Error::Database(_)));
    assert!(lost, "a lost session is not retried: {result:?}");
    let killed = killed.into_inner().unwrap().expect("the first attempt ran");
    assert_eq!(pool.state().statistics.connections_closed_broken, 1);
    let mut next = pool.get().await.expect("a new connection");
    assert_ne!(connection_id(&mut next).await, killed);
    assert_eq!(load(&mut next, 1).await.value, 0, "the save never happened");
    diesel_async::SimpleAsyncConnection::batch_execute(&mut *next, "SELECT 1")
        .await
        .expect("the new session works");
}
