//! What differs per server: session ids, killing a session, timeouts and how the
//! library classifies them.

use std::time::{Duration, Instant};

/// Polls `condition` until it holds; panics after 20 s. Used to wait for the server
/// to finish what it was asked (a session to go away), not to wait for luck.
pub(crate) fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub(crate) mod pg {
    use diesel::connection::SimpleConnection;
    use diesel::dsl::sql;
    use diesel::pg::PgConnection;
    use diesel::prelude::*;
    use diesel::sql_types::{BigInt, Bool, Integer};
    use diesel_occ::TransientKind;

    /// Sets a statement timeout of 200 ms on the session.
    pub(crate) const STATEMENT_TIMEOUT: &str = "SET statement_timeout = '200ms'";
    /// SQLSTATE 57014, `canceling statement due to statement timeout`: not transient.
    pub(crate) const STATEMENT_TIMEOUT_KIND: Option<TransientKind> = None;
    /// Sets a lock timeout of 200 ms on the session.
    pub(crate) const LOCK_TIMEOUT: &str = "SET lock_timeout = '200ms'";
    /// SQLSTATE 55P03, `canceling statement due to lock timeout`: PostgreSQL's
    /// counterpart of MySQL's 1205, a lock wait timeout.
    pub(crate) const LOCK_TIMEOUT_KIND: Option<TransientKind> =
        Some(TransientKind::LockWaitTimeout);

    /// The session id as a `BigInt` expression.
    pub(crate) const SESSION_ID: &str = "CAST(pg_backend_pid() AS BIGINT)";

    /// The server's id of the session.
    pub(crate) fn session_id(conn: &mut PgConnection) -> u64 {
        let pid: i32 = diesel::select(sql::<Integer>("pg_backend_pid()"))
            .get_result(conn)
            .expect("pg_backend_pid()");
        pid as u64
    }

    /// Terminates session `id` and waits until the server has removed it.
    pub(crate) fn kill(admin: &mut PgConnection, id: u64) {
        let signalled: bool = diesel::select(sql::<Bool>(&format!("pg_terminate_backend({id})")))
            .get_result(admin)
            .expect("pg_terminate_backend");
        assert!(signalled, "no session {id} to terminate");
        super::wait_until("the terminated session to go away", || {
            let left: i64 = diesel::select(sql::<BigInt>(&format!(
                "(SELECT count(*) FROM pg_stat_activity WHERE pid = {id})"
            )))
            .get_result(admin)
            .expect("pg_stat_activity");
            left == 0
        });
    }

    /// Opens a transaction on `holder` that holds the row lock of `counters` row `id`.
    pub(crate) fn lock_counter(holder: &mut PgConnection, id: i32) {
        holder
            .batch_execute(&format!(
                "BEGIN; UPDATE counters SET value = value WHERE id = {id}"
            ))
            .expect("take the row lock");
    }
}

#[cfg(feature = "mysql")]
pub(crate) mod mysql {
    use diesel::connection::SimpleConnection;
    use diesel::dsl::sql;
    use diesel::mysql::MysqlConnection;
    use diesel::prelude::*;
    use diesel::sql_types::{BigInt, Unsigned};
    use diesel_occ::TransientKind;

    /// Sets a statement timeout of 200 ms on the session (MariaDB).
    pub(crate) const STATEMENT_TIMEOUT: &str = "SET max_statement_time = 0.2";
    /// Error 1969, `Query execution was interrupted (max_statement_time exceeded)`: not
    /// transient.
    pub(crate) const STATEMENT_TIMEOUT_KIND: Option<TransientKind> = None;
    /// Sets InnoDB's lock wait timeout to its minimum, 1 s.
    pub(crate) const LOCK_TIMEOUT: &str = "SET innodb_lock_wait_timeout = 1";
    /// Error 1205, `Lock wait timeout exceeded`: transient.
    pub(crate) const LOCK_TIMEOUT_KIND: Option<TransientKind> =
        Some(TransientKind::LockWaitTimeout);

    /// The session id as a `BigInt` expression.
    pub(crate) const SESSION_ID: &str = "CAST(CONNECTION_ID() AS SIGNED)";

    /// The server's id of the session.
    pub(crate) fn session_id(conn: &mut MysqlConnection) -> u64 {
        diesel::select(sql::<Unsigned<BigInt>>("CONNECTION_ID()"))
            .get_result(conn)
            .expect("CONNECTION_ID()")
    }

    /// Kills session `id` and waits until the server has removed it.
    pub(crate) fn kill(admin: &mut MysqlConnection, id: u64) {
        admin
            .batch_execute(&format!("KILL CONNECTION {id}"))
            .expect("KILL");
        super::wait_until("the killed session to go away", || {
            let left: i64 = diesel::select(sql::<BigInt>(&format!(
                "(SELECT count(*) FROM information_schema.processlist WHERE id = {id})"
            )))
            .get_result(admin)
            .expect("processlist");
            left == 0
        });
    }

    /// Opens a transaction on `holder` that holds the row lock of `counters` row `id`.
    pub(crate) fn lock_counter(holder: &mut MysqlConnection, id: i32) {
        holder.batch_execute("BEGIN").expect("BEGIN");
        holder
            .batch_execute(&format!(
                "UPDATE counters SET value = value WHERE id = {id}"
            ))
            .expect("take the row lock");
    }
}
