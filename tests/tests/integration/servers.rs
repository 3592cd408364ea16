//! What differs between the servers in the fault scenarios: session ids, killing a
//! session, timeouts and how the library classifies them.

use diesel::connection::SimpleConnection;
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer};
use diesel_occ::TransientKind;
use diesel_occ_tests::wait;
use diesel_occ_tests::{TestConnection, wait_until};

/// A blocking connection to a server whose sessions a test can kill and time out.
pub(crate) trait Server: TestConnection {
    /// Sets a statement timeout of 200 ms on the session.
    const STATEMENT_TIMEOUT: &'static str;
    /// How the library classifies the error of a statement that timed out.
    const STATEMENT_TIMEOUT_KIND: Option<TransientKind>;
    /// Sets the session's lock wait timeout to 200 ms (MySQL: its minimum, 1 s).
    const LOCK_TIMEOUT: &'static str;
    /// How the library classifies the error of a lock wait that timed out.
    const LOCK_TIMEOUT_KIND: Option<TransientKind>;

    /// The server's id of this session; an error when the session is gone.
    fn try_session_id(&mut self) -> QueryResult<u64>;

    /// The server's id of this session, which must be alive.
    fn session_id(&mut self) -> u64 {
        self.try_session_id().expect("the session's id")
    }

    /// Kills session `id` from this connection and waits until the server has removed
    /// it.
    fn kill(&mut self, id: u64);

    /// Opens a transaction on this connection that holds the row lock of `counters` row
    /// `id`.
    fn lock_counter(&mut self, id: i32);
}

impl Server for PgConnection {
    const STATEMENT_TIMEOUT: &'static str = "SET statement_timeout = '200ms'";
    /// SQLSTATE 57014, `canceling statement due to statement timeout`: not transient.
    const STATEMENT_TIMEOUT_KIND: Option<TransientKind> = None;
    const LOCK_TIMEOUT: &'static str = "SET lock_timeout = '200ms'";
    /// SQLSTATE 55P03, `canceling statement due to lock timeout`: PostgreSQL's
    /// counterpart of MySQL's 1205, a lock wait timeout.
    const LOCK_TIMEOUT_KIND: Option<TransientKind> = Some(TransientKind::LockWaitTimeout);

    fn try_session_id(&mut self) -> QueryResult<u64> {
        let pid: i32 = diesel::select(sql::<Integer>("pg_backend_pid()")).get_result(self)?;
        Ok(pid as u64)
    }

    fn kill(&mut self, id: u64) {
        let terminate = format!("pg_terminate_backend({id})");
        let query = diesel::select(sql::<Bool>(&terminate));
        let signalled: bool = query.get_result(self).expect("terminate");
        assert!(signalled, "no session {id} to terminate");
        let left = format!("(SELECT count(*) FROM pg_stat_activity WHERE pid = {id})");
        wait_until("the terminated session to go away", wait::TIMEOUT, || {
            let left = diesel::select(sql::<BigInt>(&left)).get_result::<i64>(self);
            left.expect("pg_stat_activity") == 0
        });
    }

    fn lock_counter(&mut self, id: i32) {
        let lock = format!("BEGIN; UPDATE counters SET value = value WHERE id = {id}");
        self.batch_execute(&lock).expect("take the row lock");
    }
}

#[cfg(feature = "mysql")]
impl Server for diesel::mysql::MysqlConnection {
    /// MariaDB's statement time limit, in seconds.
    const STATEMENT_TIMEOUT: &'static str = "SET max_statement_time = 0.2";
    /// Error 1969, `Query execution was interrupted (max_statement_time exceeded)`: not
    /// transient.
    const STATEMENT_TIMEOUT_KIND: Option<TransientKind> = None;
    const LOCK_TIMEOUT: &'static str = "SET innodb_lock_wait_timeout = 1";
    /// Error 1205, `Lock wait timeout exceeded`: transient.
    const LOCK_TIMEOUT_KIND: Option<TransientKind> = Some(TransientKind::LockWaitTimeout);

    fn try_session_id(&mut self) -> QueryResult<u64> {
        use diesel::sql_types::Unsigned;
        diesel::select(sql::<Unsigned<BigInt>>("CONNECTION_ID()")).get_result(self)
    }

    fn kill(&mut self, id: u64) {
        let kill = format!("KILL CONNECTION {id}");
        self.batch_execute(&kill).expect("KILL");
        let left = format!("(SELECT count(*) FROM information_schema.processlist WHERE id = {id})");
        wait_until("the killed session to go away", wait::TIMEOUT, || {
            let left = diesel::select(sql::<BigInt>(&left)).get_result::<i64>(self);
            left.expect("processlist") == 0
        });
    }

    fn lock_counter(&mut self, id: i32) {
        self.batch_execute("BEGIN").expect("BEGIN");
        let lock = format!("UPDATE counters SET value = value WHERE id = {id}");
        self.batch_execute(&lock).expect("take the row lock");
    }
}
