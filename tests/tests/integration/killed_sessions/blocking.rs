//! Sessions killed during a retry attempt, on a blocking connection. A killer thread
//! with its own connection terminates the attempt's server session and waits until
//! the server has removed it before the attempt goes on.

use std::cell::Cell;
use std::sync::mpsc;
use std::thread;

use diesel::r2d2::{ConnectionManager, Pool};
use diesel_occ::Error;
use diesel_occ::blocking;
use diesel_occ::prelude::*;
use diesel_occ_tests::TestDb;

use super::Conn;
use super::counters::{Counter, connector, quick, row, seed};
use crate::servers::Server;

/// A thread with its own connection that kills the sessions it is sent and
/// answers once the server has removed each.
struct Killer {
    ids: mpsc::Sender<u64>,
    done: mpsc::Receiver<()>,
}

impl Killer {
    /// Kills session `id`; returns once it is gone (the barrier).
    fn kill(&self, id: u64) {
        self.ids.send(id).expect("killer alive");
        self.done.recv().expect("killer answered");
    }
}

fn with_killer<R>(db: &TestDb<Conn>, body: impl FnOnce(&Killer) -> R) -> R {
    let (ids, ids_rx) = mpsc::channel::<u64>();
    let (done_tx, done) = mpsc::channel();
    let mut admin = db.conn();
    thread::scope(|scope| {
        scope.spawn(move || {
            for id in ids_rx {
                admin.kill(id);
                done_tx.send(()).expect("attempt waiting");
            }
        });
        let killer = Killer { ids, done };
        body(&killer)
    })
}

fn assert_typed_connection_error(error: &Error) {
    let Error::Database(database) = error else {
        panic!("expected Error::Database, got {error:?}");
    };
    assert!(
        !error.is_retryable(),
        "a lost connection is not retried as it is: {error:?}"
    );
    eprintln!(
        "{}: killed session surfaces as Error::Database, kind {:?}",
        module_path!(),
        database.kind()
    );
}

/// The session dies after the attempt read the row and before it writes.
/// The helper does not retry a lost connection (the retry would not know
/// whether a write it cannot see went through); it ends with a typed
/// error and nothing was written. The next call runs on a new connection.
#[test]
fn a_session_killed_before_the_write_is_a_typed_error_and_writes_nothing() {
    let db = test_db!();
    seed(&db);
    let source = connector(&db);
    let runs = Cell::new(0);
    let result: Result<(), Error> = with_killer(&db, |killer| {
        blocking::retry(&source, &quick(), |conn, attempt| {
            runs.set(runs.get() + 1);
            let mut counter: Counter = attempt.find(conn, 1)?;
            killer.kill(conn.session_id());
            counter.value += 1;
            counter.save_checked(conn)
        })
    });
    let error = result.expect_err("the attempt's session was killed");
    assert_typed_connection_error(&error);
    assert_eq!(runs.get(), 1);
    assert_eq!(row(&db), (10, 1), "nothing was written");

    let saved = blocking::retry(&source, &quick(), |conn, attempt| {
        let mut counter: Counter = attempt.find(conn, 1)?;
        counter.value += 1;
        counter.save_checked(conn)?;
        Ok(counter.version)
    })
    .expect("a new connection");
    assert_eq!(saved, 2);
    assert_eq!(row(&db), (11, 2));
}

/// An escalated attempt (a transaction with `SELECT ... FOR UPDATE`) wrote
/// its row; its session dies before the COMMIT. The helper reports the
/// failed commit, never success, and the server rolled the write back.
#[test]
fn a_session_killed_before_the_commit_is_reported_and_rolled_back() {
    let db = test_db!();
    seed(&db);
    let source = connector(&db);
    let policy = quick().escalate_after(0);
    let runs = Cell::new(0);
    let result: Result<(), Error> = with_killer(&db, |killer| {
        blocking::retry(&source, &policy, |conn, attempt| {
            runs.set(runs.get() + 1);
            assert!(attempt.is_escalated());
            let mut counter: Counter = attempt.find(conn, 1)?;
            counter.value += 1;
            counter.save_checked(conn)?;
            killer.kill(conn.session_id());
            Ok(())
        })
    });
    let error = result.expect_err("the commit's session was killed");
    assert_typed_connection_error(&error);
    assert_eq!(runs.get(), 1);
    assert_eq!(row(&db), (10, 1), "the uncommitted write was rolled back");
}

/// A save that committed in autocommit mode, then the session dies before
/// the attempt ends: the helper returns the typed error of the failed
/// read-back, and the row holds the committed write (a re-read tells).
/// The ambiguity is the caller's to resolve; nothing is lost.
#[test]
fn a_session_killed_after_a_committed_save_leaves_the_write_in_place() {
    let db = test_db!();
    seed(&db);
    let source = connector(&db);
    let result: Result<(), Error> = with_killer(&db, |killer| {
        blocking::retry(&source, &quick(), |conn, attempt| {
            let mut counter: Counter = attempt.find(conn, 1)?;
            counter.value += 1;
            counter.save_checked(conn)?;
            killer.kill(conn.session_id());
            let _: Counter = attempt.find(conn, 1)?;
            Ok(())
        })
    });
    let error = result.expect_err("the read-back's session was killed");
    assert_typed_connection_error(&error);
    assert_eq!(row(&db), (11, 2), "the committed save stays");
}

/// With an r2d2 pool of one connection: the attempt meets a conflict (a
/// second writer saved first), then its session is killed. The helper
/// retries the conflict; r2d2 finds the pooled connection dead at checkout
/// and opens a new one; the second attempt re-reads and saves. Both writes
/// are in the row.
#[test]
fn a_pooled_session_killed_between_attempts_is_replaced_and_the_retry_succeeds() {
    let db = test_db!();
    seed(&db);
    let pool = Pool::builder()
        .max_size(1)
        .build(ConnectionManager::<Conn>::new(db.url()))
        .expect("pool");
    let sessions = std::cell::RefCell::new(Vec::new());
    let saved = with_killer(&db, |killer| {
        blocking::retry(&pool, &quick(), |conn, attempt| {
            let id = conn.session_id();
            sessions.borrow_mut().push(id);
            let mut counter: Counter = attempt.find(conn, 1)?;
            if attempt.is_first() {
                let mut theirs: Counter = Counter::find(&mut db.conn(), 1).expect("row 1");
                theirs.value += 100;
                theirs.save_checked(&mut db.conn()).expect("their save");
            }
            counter.value += 1;
            let saved = counter.save_checked(conn);
            if attempt.is_first() {
                assert!(saved.as_ref().is_err_and(Error::is_conflict), "{saved:?}");
                killer.kill(id);
            }
            saved.map(|()| counter.version)
        })
    })
    .expect("the retry on a new connection");
    let sessions = sessions.into_inner();
    assert_eq!(sessions.len(), 2);
    assert_ne!(sessions[0], sessions[1], "the dead session was not reused");
    assert_eq!(saved, 3);
    assert_eq!(row(&db), (111, 3), "their write and ours");
}

/// An r2d2 pool that hands connections out untested (`test_on_check_out(false)`, the
/// setting for speed) and holds one connection, so a connection returned to it is the
/// next one handed out.
fn untested_pool(db: &TestDb<Conn>) -> Pool<ConnectionManager<Conn>> {
    Pool::builder()
        .max_size(1)
        .test_on_check_out(false)
        .build(ConnectionManager::<Conn>::new(db.url()))
        .expect("pool")
}

/// A session killed while it sat in a pool that does not test connections at
/// checkout: the next operation gets it and fails with a typed error, writing nothing;
/// the helper finds the connection dead and keeps it out of the pool, so the operation
/// after that runs on a new session instead of failing on the same one.
#[test]
fn a_dead_session_handed_out_by_the_pool_fails_once_and_is_discarded() {
    let db = test_db!();
    seed(&db);
    let pool = untested_pool(&db);
    let increment = || {
        blocking::retry(&pool, &quick(), |conn, attempt| {
            let id = conn.try_session_id()?;
            let mut counter: Counter = attempt.find(conn, 1)?;
            counter.value += 1;
            counter.save_checked(conn)?;
            Ok(id)
        })
    };
    let first = increment().expect("a live session");
    with_killer(&db, |killer| killer.kill(first));
    let failed = increment();
    assert!(
        failed.is_err() || failed.as_ref().is_ok_and(|id| *id != first),
        "the killed session cannot have run it: {failed:?}"
    );
    let next = increment().expect("a new session");
    assert_ne!(next, first, "the dead session was discarded, not pooled again");
    let expected = 10 + 1 + i32::from(failed.is_ok()) + 1;
    assert_eq!(row(&db).0, expected, "every acknowledged write, nothing else");
}

/// `retry_with_standby`: the primary's session is killed inside an attempt, after the
/// read from the standby and before the save (the kill returns once the session is
/// gone: the barrier). The save fails on the dead connection, and the helper keeps
/// that connection out of a pool that would hand it out again untested: the next
/// checkout gets a new session, and the row holds every acknowledged write.
#[test]
fn a_primary_session_killed_inside_a_standby_attempt_is_discarded() {
    let db = test_db!();
    seed(&db);
    let primary = untested_pool(&db);
    let standby = untested_pool(&db);
    let sessions = std::cell::RefCell::new(Vec::new());
    let outcome = with_killer(&db, |killer| {
        blocking::retry_with_standby(&primary, &standby, &quick(), |conns, attempt| {
            let mut counter: Counter = attempt.find(conns.read()?, 1)?;
            let conn = conns.write()?;
            let id = conn.try_session_id()?;
            sessions.borrow_mut().push(id);
            if attempt.is_first() {
                killer.kill(id);
            }
            counter.value += 1;
            counter.save_checked(conn)?;
            Ok(counter.version)
        })
    });
    let sessions = sessions.into_inner();
    let killed = sessions[0];
    assert!(
        sessions[1..].iter().all(|id| *id != killed),
        "no later attempt ran on the dead session: {sessions:?}"
    );
    let next = primary.get().expect("a primary connection").session_id();
    assert_ne!(next, killed, "the dead session was not pooled again ({outcome:?})");
    let expected = 10 + i32::from(outcome.is_ok());
    assert_eq!(row(&db).0, expected, "every acknowledged write, nothing else: {outcome:?}");
}
