//! Sessions killed during a retry attempt, in both flavours: the attempts run on a pool (r2d2,
//! deadpool) or, blocking only, on a new connection each. The kill runs on a blocking
//! connection of the test's own and returns once the server removed the session: the barrier.

flavour_prelude!();

use std::sync::Mutex;
#[flavour(asynchronous)]
use std::time::Duration;

use super::counters::{Counter, ServerDb, quick, row, seed, their_save};
use crate::pools::Counting;
use crate::servers::Server;
use diesel::dsl::sql;
#[flavour(blocking)]
use diesel::r2d2::ConnectionManager;
use diesel::sql_types::BigInt;
use diesel_occ::Error;
#[flavour(blocking)]
use diesel_occ::retry::{Attempt, RetryPolicy};

#[flavour(blocking)]
type Pool = diesel::r2d2::Pool<ConnectionManager<Conn>>;
#[flavour(asynchronous)]
type Pool = diesel_async::pooled_connection::deadpool::Pool<Conn>;

/// How long a checkout from an async pool may wait.
#[flavour(asynchronous)]
const WAIT: Option<Duration> = Some(Duration::from_secs(10));

/// A pool of one connection, tested at checkout (`tested`: r2d2's test, deadpool's recycle
/// check) or not, the setting for speed (a connection returned to it is the next handed out).
#[flavour(blocking)]
fn pool(db: &ServerDb, tested: bool) -> Pool {
    let builder = Pool::builder().max_size(1).test_on_check_out(tested);
    let manager = ConnectionManager::<Conn>::new(db.url());
    builder.build(manager).expect("pool")
}

/// (deadpool untested: `RecyclingMethod::Fast`, an hour's idle window for `verify_when_idle`.)
#[flavour(asynchronous)]
fn pool(db: &ServerDb, tested: bool) -> Pool {
    match tested {
        true => super::counters::pool(db, WAIT),
        false => super::counters::fast_pool(db, WAIT, Duration::from_secs(3600)),
    }
}

/// Runs `f`, work on the test's own blocking connections, to its end before the test goes on
/// (async: in `block_in_place`, the other tasks going on meanwhile).
#[flavour(blocking)]
fn in_line<T>(f: impl FnOnce() -> T) -> T {
    f()
}

#[flavour(asynchronous)]
fn in_line<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// Kills session `id`; returns once the server has removed it (the barrier).
fn kill(db: &ServerDb, id: u64) {
    in_line(|| db.conn().kill(id));
}

/// The server's id of the session behind `conn`; an error when the session is gone.
#[flavour]
async fn session_id(conn: &mut Conn) -> diesel::QueryResult<u64> {
    let id = diesel::select(sql::<BigInt>(Conn::CONNECTION_ID));
    Ok(id.get_result::<i64>(conn).await? as u64)
}

/// The attempt meets a conflict (a second writer saved first), then its session is killed:
/// the helper retries, `pool` opens a new connection, and the row holds both writes.
#[flavour]
async fn killed_between_attempts(db: &ServerDb, pool: &Pool) {
    seed(db);
    let sessions = Mutex::new(Vec::new());
    let saved = retry(pool, &quick(), async |conn, attempt| {
        let id = session_id(conn).await?;
        sessions.lock().unwrap().push(id);
        let mut counter: Counter = attempt.find(conn, 1).await?;
        if attempt.is_first() {
            in_line(|| their_save(db, 100));
        }
        counter.value += 1;
        let saved = counter.save_checked(conn).await;
        if attempt.is_first() {
            assert!(saved.as_ref().is_err_and(Error::is_conflict), "{saved:?}");
            kill(db, id);
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

/// With a pool of one connection that tests it, the killed session is replaced.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_pooled_session_killed_between_attempts_is_replaced_and_the_retry_succeeds() {
    let db = server_db!();
    killed_between_attempts(&db, &pool(&db, true)).await;
}

/// The same with the pool set up for speed: a connection is tested at checkout only when idle
/// for `verify_when_idle`'s window (zero here, so the killed session is tested and replaced).
#[flavour(asynchronous, test(flavor = "multi_thread", worker_threads = 2))]
async fn verify_when_idle_replaces_a_session_killed_while_it_sat_in_the_pool() {
    let db = server_db!();
    let pool = super::counters::fast_pool(&db, WAIT, Duration::ZERO);
    killed_between_attempts(&db, &pool).await;
}

/// A session killed while in a pool that does not test it: the next operation fails with a
/// typed error, writing nothing, and the helper discards it, so the one after gets a new one.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_dead_session_handed_out_by_the_pool_fails_once_and_is_discarded() {
    let db = server_db!();
    seed(&db);
    let pool = pool(&db, false);
    let policy = quick();
    let increment = || {
        retry(&pool, &policy, async |conn, attempt| {
            let id = session_id(conn).await?;
            let mut counter: Counter = attempt.find(conn, 1).await?;
            counter.value += 1;
            counter.save_checked(conn).await?;
            Ok(id)
        })
    };
    let first = increment().await.expect("a live session");
    kill(&db, first);
    let failed = increment().await;
    let not_run = failed.is_err() || failed.as_ref().is_ok_and(|id| *id != first);
    assert!(not_run, "the killed session ran it: {failed:?}");
    let next = increment().await.expect("a new session");
    assert_ne!(next, first, "a new session, not the dead one");
    let (value, expected) = (row(&db).0, 10 + 1 + i32::from(failed.is_ok()) + 1);
    assert_eq!(value, expected, "every acknowledged write, nothing else");
}

/// `retry_with_standby`: the primary's session is killed after the attempt's read from the
/// standby. The save fails, and the helper discards the connection rather than return it to a
/// pool that would hand it out untested; the row holds every acknowledged write, nothing else.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_primary_session_killed_inside_a_standby_attempt_is_discarded() {
    let db = server_db!();
    seed(&db);
    let primary_pool = pool(&db, false);
    let primary = Counting::new(&primary_pool);
    let standby = pool(&db, true);
    let sessions = Mutex::new(Vec::new());
    let outcome = retry_with_standby(&primary, &standby, &quick(), async |conns, attempt| {
        let mut counter: Counter = attempt.find(conns.read().await?, 1).await?;
        let conn = conns.write().await?;
        let id = session_id(conn).await?;
        sessions.lock().unwrap().push(id);
        if attempt.is_first() {
            kill(&db, id);
        }
        counter.value += 1;
        counter.save_checked(conn).await?;
        Ok(counter.version)
    })
    .await;
    let sessions = sessions.into_inner().unwrap();
    let killed = sessions[0];
    let discards = primary.discards();
    assert_eq!(discards, 1, "primary connection discarded: {outcome:?}");
    let fresh = sessions[1..].iter().all(|id| *id != killed);
    assert!(fresh, "a later attempt on the dead session: {sessions:?}");
    let mut next = primary_pool.get().await.expect("a primary connection");
    let next = session_id(&mut next).await.expect("a live session");
    assert_ne!(next, killed, "the dead session was not pooled again");
    let (value, expected) = (row(&db).0, 10 + i32::from(outcome.is_ok()));
    assert_eq!(value, expected, "the acknowledged writes: {outcome:?}");
}

/// Seeds row 1 and runs `attempt`, which kills its own session, through the retry helper on a
/// new connection per attempt: it ends after that attempt with a non-retryable `Error::Database`.
#[flavour(blocking)]
fn killed_in_attempt(
    db: &ServerDb,
    policy: &RetryPolicy,
    attempt: impl Fn(&mut Conn, &Attempt) -> Result<(), Error>,
) {
    seed(db);
    let runs = std::cell::Cell::new(0);
    let result = retry(&super::counters::connector(db), policy, |conn, a| {
        runs.set(runs.get() + 1);
        attempt(conn, &a)
    });
    let error = result.expect_err("the attempt's session was killed");
    let Error::Database(database) = &error else {
        panic!("expected Error::Database, got {error:?}");
    };
    let retryable = error.is_retryable();
    assert!(!retryable, "a lost connection is not retryable: {error:?}");
    assert_eq!(runs.get(), 1);
    let (test, kind) = (module_path!(), database.kind());
    eprintln!("{test}: killed session surfaces as Error::Database, kind {kind:?}");
}

/// The session dies between the attempt's read and write. The helper does not retry a lost
/// connection (did a write go through?): a typed error, nothing written; the next call works.
#[flavour(blocking, test)]
fn a_session_killed_before_the_write_is_a_typed_error_and_writes_nothing() {
    let db = server_db!();
    killed_in_attempt(&db, &quick(), |conn, attempt| {
        let mut counter: Counter = attempt.find(conn, 1)?;
        kill(&db, conn.session_id());
        counter.value += 1;
        counter.save_checked(conn)
    });
    assert_eq!(row(&db), (10, 1), "nothing was written");

    let source = super::counters::connector(&db);
    let saved = retry(&source, &quick(), |conn, attempt| {
        let mut counter: Counter = attempt.find(conn, 1)?;
        counter.value += 1;
        counter.save_checked(conn)?;
        Ok(counter.version)
    });
    assert_eq!(saved.expect("a new connection"), 2);
    assert_eq!(row(&db), (11, 2));
}

/// An escalated attempt wrote its row and its session dies before the COMMIT: the helper
/// reports the failed commit, never success, and the server rolled the write back.
#[flavour(blocking, test)]
fn a_session_killed_before_the_commit_is_reported_and_rolled_back() {
    let db = server_db!();
    killed_in_attempt(&db, &quick().escalate_after(0), |conn, attempt| {
        assert!(attempt.is_escalated());
        let mut counter: Counter = attempt.find(conn, 1)?;
        counter.value += 1;
        counter.save_checked(conn)?;
        kill(&db, conn.session_id());
        Ok(())
    });
    assert_eq!(row(&db), (10, 1), "the uncommitted write was rolled back");
}

/// A save committed in autocommit mode, then the session dies: the helper returns the failed
/// read-back's typed error, and the row keeps the write (for the caller to re-read).
#[flavour(blocking, test)]
fn a_session_killed_after_a_committed_save_leaves_the_write_in_place() {
    let db = server_db!();
    killed_in_attempt(&db, &quick(), |conn, attempt| {
        let mut counter: Counter = attempt.find(conn, 1)?;
        counter.value += 1;
        counter.save_checked(conn)?;
        kill(&db, conn.session_id());
        let _: Counter = attempt.find(conn, 1)?;
        Ok(())
    });
    assert_eq!(row(&db), (11, 2), "the committed save stays");
}
