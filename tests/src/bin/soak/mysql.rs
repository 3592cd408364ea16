//! The workload on MariaDB/MySQL, through `diesel_occ_examples::mysql`. The fault is a
//! killed session (`KILL CONNECTION`).

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ_examples::mysql as examples;

use crate::faults;

/// The test tables the paths write (`counters`).
use diesel_occ_tests::schema::mysql as schema;

/// The connection the workload runs on.
type Conn = diesel::mysql::MysqlConnection;

/// The connection the async paths run on.
type AsyncConn = diesel_async::AsyncMysqlConnection;

/// A new connection. A session killed right after connecting fails here: an error for
/// the caller, not a panic.
fn connect(url: &str) -> ConnectionResult<Conn> {
    let mut conn = Conn::establish(url)?;
    conn.batch_execute("SET SESSION sql_mode = DEFAULT")
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// Kills one other session of the soak database.
fn fault(url: &str, admin: &mut Option<Conn>, rng: &mut fastrand::Rng) -> bool {
    const SESSIONS: &str = "SELECT CAST(id AS SIGNED) AS id FROM information_schema.processlist \
                            WHERE db = DATABASE() AND id <> CONNECTION_ID()";
    faults::kill_server_session(admin, || connect(url).ok(), SESSIONS, kill, rng)
}

/// An error (1094, unknown thread) when the session had already ended.
fn kill(conn: &mut Conn, victim: i64) -> bool {
    conn.batch_execute(&format!("KILL CONNECTION {victim}"))
        .is_ok()
}

/// The fault, as the figures line names it.
const FAULT_KIND: &str = "sessions killed";

/// The connection the check reads the database with: a plain one.
use self::connect as connect_for_check;

// The same files for every backend, each time for this module's connection type.
#[allow(clippy::duplicate_mod)]
#[path = "workload/mod.rs"]
mod workload;

pub(crate) use workload::run;
