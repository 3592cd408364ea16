//! A session killed between retry attempts, or inside a `retry_with_standby` attempt, on
//! an async connection from a deadpool pool. The kill runs on a blocking connection,
//! awaited: the barrier.

use std::sync::Mutex;
use std::time::Duration;

use diesel::dsl::sql;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl as _;
use diesel_occ::Error;
use diesel_occ::asynchronous;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::AsyncTestConnection;

use diesel_async::pooled_connection::deadpool::Pool;

use super::counters::{Counter, fast_pool, pool, quick, row, seed};
use super::{AsyncConn, Conn};
use crate::pools::Counting;
use crate::servers::Server;

/// The attempt meets a conflict, then its session is killed (from a
/// blocking connection, awaited: the barrier). The helper retries the
/// conflict; deadpool's recycle check finds the connection dead and opens a
/// new one; the second attempt re-reads and saves. Both writes are in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_session_killed_between_attempts_is_replaced_and_the_retry_succeeds() {
    let db = test_db!();
    seed(&db);
    killed_between_attempts(&db, &pool(&db, Some(Duration::from_secs(10)))).await;
}

/// The same with the pool set up for speed: no test query at checkout, except for a
/// connection idle for the window of `verify_when_idle` (zero here, so the killed
/// session, idle since its attempt, is tested and replaced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_when_idle_replaces_a_session_killed_while_it_sat_in_the_pool() {
    let db = test_db!();
    seed(&db);
    let pool = fast_pool(&db, Some(Duration::from_secs(10)), Duration::ZERO);
    killed_between_attempts(&db, &pool).await;
}

async fn killed_between_attempts(
    db: &diesel_occ_tests::TestDb<Conn>,
    pool: &Pool<AsyncConn>,
) {
    let sessions = Mutex::new(Vec::new());
    let url = db.url().to_owned();
    let saved = asynchronous::retry(pool, &quick(), async |conn, attempt| {
        let id: i64 = diesel::select(sql::<BigInt>(AsyncConn::CONNECTION_ID))
            .get_result(conn)
            .await?;
        sessions.lock().unwrap().push(id);
        let mut counter: Counter = attempt.find(conn, 1).await?;
        if attempt.is_first() {
            let url = url.clone();
            tokio::task::spawn_blocking(move || {
                use diesel::Connection as _;
                use diesel_occ::CheckedDsl as Sync;
                let mut theirs_conn = Conn::establish(&url).expect("connect");
                let mut theirs: Counter = diesel_occ::EntityDsl::find(&mut theirs_conn, 1).expect("row 1");
                theirs.value += 100;
                Sync::save_checked(&mut theirs, &mut theirs_conn).expect("their save");
            })
            .await
            .expect("their writer");
        }
        counter.value += 1;
        let saved = counter.save_checked(conn).await;
        if attempt.is_first() {
            assert!(saved.as_ref().is_err_and(Error::is_conflict), "{saved:?}");
            let url = url.clone();
            tokio::task::spawn_blocking(move || {
                use diesel::Connection as _;
                let mut admin = Conn::establish(&url).expect("connect");
                admin.kill(id as u64);
            })
            .await
            .expect("killer");
        }
        saved.map(|()| counter.version)
    })
    .await
    .expect("the retry on a new connection");
    let sessions = sessions.into_inner().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_ne!(sessions[0], sessions[1], "the dead session was not reused");
    assert_eq!(saved, 3);
    assert_eq!(row(db), (111, 3), "their write and ours");
}

/// A session killed while it sat in a pool that does not test it (the idle window of
/// `verify_when_idle` is an hour): the next operation gets it and fails with a typed
/// error, writing nothing; the helper finds the connection dead and discards it, so the
/// operation after that runs on a new session instead of failing on the same one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_session_handed_out_by_the_pool_fails_once_and_is_discarded() {
    let db = test_db!();
    seed(&db);
    let pool = fast_pool(&db, Some(Duration::from_secs(10)), Duration::from_secs(3600));
    let policy = quick();
    let increment = || {
        asynchronous::retry(&pool, &policy, async |conn, attempt| {
            let id: i64 = diesel::select(sql::<BigInt>(AsyncConn::CONNECTION_ID))
                .get_result(conn)
                .await?;
            let mut counter: Counter = attempt.find(conn, 1).await?;
            counter.value += 1;
            counter.save_checked(conn).await?;
            Ok(id)
        })
    };
    let first = increment().await.expect("a live session");
    let url = db.url().to_owned();
    tokio::task::spawn_blocking(move || {
        use diesel::Connection as _;
        Conn::establish(&url).expect("connect").kill(first as u64);
    })
    .await
    .expect("killer");
    let failed = increment().await;
    assert!(
        failed.is_err() || failed.as_ref().is_ok_and(|id| *id != first),
        "the killed session cannot have run it: {failed:?}"
    );
    let next = increment().await.expect("a new session");
    assert_ne!(next, first, "the dead session was discarded, not pooled again");
    let expected = 10 + 1 + i32::from(failed.is_ok()) + 1;
    assert_eq!(row(&db).0, expected, "every acknowledged write, nothing else");
}

/// `retry_with_standby`: the primary's session is killed inside an attempt, after the
/// read from the standby and before the save (the kill is awaited: the barrier). The
/// save fails on the dead connection, and the helper discards that connection instead
/// of returning it to a pool that would hand it out again untested (`Fast`, and an idle
/// window of an hour): the next checkout gets a new session, and the row holds every
/// acknowledged write, nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_session_killed_inside_a_standby_attempt_is_discarded() {
    let db = test_db!();
    seed(&db);
    let wait = Some(Duration::from_secs(10));
    let primary_pool = fast_pool(&db, wait, Duration::from_secs(3600));
    let primary = Counting::new(&primary_pool);
    let standby = pool(&db, wait);
    let sessions = Mutex::new(Vec::new());
    let url = db.url().to_owned();
    let outcome = asynchronous::retry_with_standby(
        &primary,
        &standby,
        &quick(),
        async |conns, attempt| {
            let mut counter: Counter = attempt.find(conns.read().await?, 1).await?;
            let conn = conns.write().await?;
            let id: i64 = diesel::select(sql::<BigInt>(AsyncConn::CONNECTION_ID))
                .get_result(&mut *conn)
                .await?;
            sessions.lock().unwrap().push(id);
            if attempt.is_first() {
                let url = url.clone();
                tokio::task::spawn_blocking(move || {
                    use diesel::Connection as _;
                    Conn::establish(&url).expect("connect").kill(id as u64);
                })
                .await
                .expect("killer");
            }
            counter.value += 1;
            counter.save_checked(conn).await?;
            Ok(counter.version)
        },
    )
    .await;
    let sessions = sessions.into_inner().unwrap();
    let killed = sessions[0];
    assert_eq!(
        primary.discards(),
        1,
        "the dead primary connection is discarded ({outcome:?})"
    );
    assert!(
        sessions[1..].iter().all(|id| *id != killed),
        "no later attempt ran on the dead session: {sessions:?}"
    );
    let mut next = primary_pool.get().await.expect("a primary connection");
    let next_id: i64 = diesel::select(sql::<BigInt>(AsyncConn::CONNECTION_ID))
        .get_result(&mut *next)
        .await
        .expect("the next checkout is a live session");
    assert_ne!(next_id, killed, "the dead session was not pooled again");
    drop(next);
    let expected = 10 + i32::from(outcome.is_ok());
    assert_eq!(row(&db).0, expected, "every acknowledged write, nothing else: {outcome:?}");
}
