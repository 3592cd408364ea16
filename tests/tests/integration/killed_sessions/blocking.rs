//! Sessions killed during a retry attempt, on a blocking connection. A killer thread
//! with its own connection terminates the attempt's server session and waits until
//! the server has removed it before the attempt goes on.

use std::cell::Cell;
use std::sync::mpsc;
use std::thread;

use diesel::r2d2::{ConnectionManager, Pool};
use diesel_occ::Error;
use diesel_occ::prelude::*;
use diesel_occ::retry;
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
        retry::retry(&source, &quick(), |conn, attempt| {
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

    let saved = retry::retry(&source, &quick(), |conn, attempt| {
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
        retry::retry(&source, &policy, |conn, attempt| {
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
        retry::retry(&source, &quick(), |conn, attempt| {
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
        retry::retry(&pool, &quick(), |conn, attempt| {
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
