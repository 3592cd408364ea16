//! The faults injected while the workers run: a killed server session on PostgreSQL
//! and MariaDB, the database's write lock held for 50 ms on SQLite.

use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ_examples::db::{AnyConnection, Target};

/// Kills one session of the soak database other than the injector's own.
pub(crate) fn kill_server_session(
    url: &str,
    admin: &mut Option<AnyConnection>,
    rng: &mut fastrand::Rng,
) -> bool {
    if admin.is_none() {
        *admin = Target::parse(url).connect().ok();
    }
    let Some(conn) = admin.as_mut() else {
        return false;
    };
    let sessions = match sessions(conn) {
        Ok(sessions) => sessions,
        Err(_) => {
            *admin = None;
            return false;
        }
    };
    if sessions.is_empty() {
        return false;
    }
    kill(conn, sessions[rng.usize(..sessions.len())])
}

/// The ids of the soak database's other sessions.
fn sessions(conn: &mut AnyConnection) -> QueryResult<Vec<i64>> {
    #[derive(QueryableByName)]
    struct Session {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
    }
    let list = match conn {
        AnyConnection::Postgres(_) => {
            "SELECT CAST(pid AS BIGINT) AS id FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()"
        }
        _ => {
            "SELECT CAST(id AS SIGNED) AS id FROM information_schema.processlist \
             WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        }
    };
    let sessions: Vec<Session> = diesel::sql_query(list).load(conn)?;
    Ok(sessions.into_iter().map(|s| s.id).collect())
}

/// Ends session `victim`. Counted only when the server says it ended a session: one
/// that ended on its own meanwhile is not a fault this run injected.
fn kill(conn: &mut AnyConnection, victim: i64) -> bool {
    match conn {
        AnyConnection::Postgres(c) => {
            #[derive(QueryableByName)]
            struct Killed {
                #[diesel(sql_type = diesel::sql_types::Bool)]
                killed: bool,
            }
            // `false` when no such session was left to signal.
            diesel::sql_query(format!("SELECT pg_terminate_backend({victim}) AS killed"))
                .get_result::<Killed>(c)
                .is_ok_and(|k| k.killed)
        }
        // An error (1094, unknown thread) when the session had already ended.
        #[cfg(feature = "mysql")]
        AnyConnection::Mysql(c) => c
            .batch_execute(&format!("KILL CONNECTION {victim}"))
            .is_ok(),
        AnyConnection::Sqlite(_) => false,
    }
}

/// SQLite: holds the write lock for 50 ms, so writers wait (or meet a busy error).
pub(crate) fn hold_sqlite_lock(
    url: &str,
    admin: &mut Option<AnyConnection>,
    _rng: &mut fastrand::Rng,
) -> bool {
    if admin.is_none() {
        *admin = Target::parse(url).connect().ok();
        // SQLite's busy handler backs off to 100 ms sleeps, so a waiter that polls with
        // it loses the lock to eight busy writers for seconds: poll every millisecond
        // instead, or a short run injects almost nothing.
        if let Some(AnyConnection::Sqlite(conn)) = admin.as_mut() {
            if conn.batch_execute("PRAGMA busy_timeout = 0").is_err() {
                *admin = None;
            }
        }
    }
    let Some(AnyConnection::Sqlite(conn)) = admin.as_mut() else {
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
