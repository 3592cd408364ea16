//! The workload on SQLite (a file per run), through `diesel_occ_examples::sqlite`. The
//! fault is the database's write lock held for 50 ms: writers wait, or meet a busy
//! error.

use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ_examples::sqlite as examples;

/// The test tables the paths write (`counters`).
use diesel_occ_tests::schema::sqlite as schema;

/// The connection the workload runs on.
type Conn = diesel::sqlite::SqliteConnection;

/// The connection the async paths run on.
type AsyncConn = diesel_async::sync_connection_wrapper::SyncConnectionWrapper<Conn>;

/// A new connection that waits for the file lock instead of failing at once.
fn connect(url: &str) -> ConnectionResult<Conn> {
    let mut conn = Conn::establish(url)?;
    conn.batch_execute("PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;")
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// Holds the write lock for 50 ms.
fn fault(url: &str, admin: &mut Option<Conn>, _rng: &mut fastrand::Rng) -> bool {
    if admin.is_none() {
        *admin = connect(url).ok();
        // SQLite's busy handler backs off to 100 ms sleeps, so a waiter that polls with
        // it loses the lock to eight busy writers for seconds: poll every millisecond
        // instead, or a short run injects almost nothing.
        if let Some(conn) = admin.as_mut()
            && conn.batch_execute("PRAGMA busy_timeout = 0").is_err()
        {
            *admin = None;
        }
    }
    let Some(conn) = admin.as_mut() else {
        return false;
    };
    let give_up = Instant::now() + Duration::from_secs(2);
    while conn.batch_execute("BEGIN IMMEDIATE").is_err() {
        if Instant::now() > give_up {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    thread::sleep(Duration::from_millis(50));
    if conn.batch_execute("ROLLBACK").is_err() {
        *admin = None;
    }
    true
}

/// The fault, as the figures line names it.
const FAULT_KIND: &str = "write lock held 50 ms";

/// The connection the check reads the database with: a plain one.
use self::connect as connect_for_check;

// The same files for every backend, each time for this module's connection type.
#[allow(clippy::duplicate_mod)]
#[path = "workload/mod.rs"]
mod workload;

pub(crate) use workload::run;
