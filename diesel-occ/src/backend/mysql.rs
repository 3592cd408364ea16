//! MySQL and MariaDB.
//!
//! What the drivers keep: `mysqlclient` (diesel's `MysqlConnection`) maps error 1213
//! (deadlock) to `DatabaseErrorKind::SerializationFailure` and 1205 (lock wait
//! timeout) to `Unknown`; `mysql_async` (diesel-async's `AsyncMysqlConnection`) maps
//! both to `Unknown`. Neither keeps the error number or the SQLSTATE (both are
//! `40001` for 1213 and `HY000` for 1205 anyway); the server's message survives. The
//! server's messages are English unless `lc_messages` says otherwise:
//!
//! - 1213: `Deadlock found when trying to get lock; try restarting transaction`
//! - 1205: `Lock wait timeout exceeded; try restarting transaction`
//! - 1969 (MariaDB): `Query execution was interrupted (max_statement_time exceeded)`:
//!   a statement time limit, not transient; but when the helpers set that limit on a
//!   locking read to bound its lock wait by the retry deadline, it is reported as a lock
//!   wait timeout ([`lock_wait_bound_reached`]).
//! - 1020 (`ER_CHECKREAD`): `Record has changed since last read in table 't'`. MariaDB
//!   11.6 and later raise it under `innodb_snapshot_isolation` when a transaction writes
//!   or locks a row that another transaction changed after its snapshot was taken: a
//!   write conflict, which a new transaction (a retry) resolves, like PostgreSQL's
//!   serialization failure under REPEATABLE READ.
//! - 1047 (Galera, `ER_UNKNOWN_COM_ERROR`): `WSREP has not yet prepared node for
//!   application use`. The node checks that it is synced before it executes any
//!   statement, a `COMMIT` included, and refuses it unexecuted: a rejoining node accepts
//!   connections before it is synced. The statement had no effect, so another attempt
//!   (on another node) may run it: [`TransientKind::NodeNotReady`].

use diesel::result::{DatabaseErrorInformation, DatabaseErrorKind, Error as DieselError};

use crate::error::TransientKind;

const DEADLOCK_PREFIX: &str = "Deadlock found when trying to get lock";
const LOCK_WAIT_TIMEOUT_PREFIX: &str = "Lock wait timeout exceeded";
/// MariaDB's error 1969.
const STATEMENT_TIME_EXCEEDED: &str =
    "Query execution was interrupted (max_statement_time exceeded)";
/// What a locking read reports when the retry deadline ended its lock wait.
const DEADLINE_LOCK_WAIT: &str = "Lock wait ended by the retry deadline";
const RECORD_CHANGED_PREFIX: &str = "Record has changed since last read";
/// Galera's error 1047.
const NODE_NOT_READY: &str = "WSREP has not yet prepared node for application use";

pub(super) fn transient(kind: &DatabaseErrorKind, message: &str) -> Option<TransientKind> {
    match kind {
        DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::Unknown
            if message.starts_with(DEADLOCK_PREFIX) =>
        {
            Some(TransientKind::Deadlock)
        }
        DatabaseErrorKind::Unknown
            if message.starts_with(LOCK_WAIT_TIMEOUT_PREFIX) || message == DEADLINE_LOCK_WAIT =>
        {
            Some(TransientKind::LockWaitTimeout)
        }
        DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::Unknown
            if message.starts_with(RECORD_CHANGED_PREFIX) =>
        {
            Some(TransientKind::SerializationFailure)
        }
        DatabaseErrorKind::Unknown if message.starts_with(NODE_NOT_READY) => {
            Some(TransientKind::NodeNotReady)
        }
        _ => None,
    }
}

/// A locking read bounded by [`locked_read_prefix`](super::LockingBackend::locked_read_prefix)
/// failed with error 1969: the limit the helper set ended the lock wait, which is a lock
/// wait timeout like 1205 (the read did nothing and can run again), not a slow statement.
/// The server's message stays in `details`.
pub(super) fn lock_wait_bound_reached(error: DieselError) -> DieselError {
    match error {
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
            if info.message() == STATEMENT_TIME_EXCEEDED =>
        {
            DieselError::DatabaseError(
                DatabaseErrorKind::Unknown,
                Box::new(DeadlineLockWait {
                    server: info.message().to_owned(),
                }),
            )
        }
        error => error,
    }
}

/// The error information of [`lock_wait_bound_reached`].
#[derive(Debug)]
struct DeadlineLockWait {
    server: String,
}

impl DatabaseErrorInformation for DeadlineLockWait {
    fn message(&self) -> &str {
        DEADLINE_LOCK_WAIT
    }
    fn details(&self) -> Option<&str> {
        Some(&self.server)
    }
    fn hint(&self) -> Option<&str> {
        None
    }
    fn table_name(&self) -> Option<&str> {
        None
    }
    fn column_name(&self) -> Option<&str> {
        None
    }
    fn constraint_name(&self) -> Option<&str> {
        None
    }
    fn statement_position(&self) -> Option<i32> {
        None
    }
}

#[cfg(feature = "mysql")]
impl super::LockingBackend for diesel::mysql::Mysql {
    const BEGIN_LOCKED: &'static str = "BEGIN";
    const ROW_LOCK: &'static str = " FOR UPDATE";

    /// `/*M!100108 SET STATEMENT max_statement_time = <seconds> FOR */ `: MariaDB (10.1.8
    /// and later) runs the read under a time limit that also ends its lock wait, to the
    /// microsecond, where `innodb_lock_wait_timeout` counts whole seconds; MySQL skips
    /// the comment. The limit replaces the session's own for this statement only.
    fn locked_read_prefix(remaining: std::time::Duration) -> Option<String> {
        // At least a millisecond: zero means no limit.
        let micros = remaining.as_nanos().div_ceil(1_000).max(1_000);
        Some(format!(
            "/*M!100108 SET STATEMENT max_statement_time = {}.{:06} FOR */ ",
            micros / 1_000_000,
            micros % 1_000_000
        ))
    }
}

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind, Error as DieselError};

    use crate::error::{Error, TransientKind};

    fn error(kind: DatabaseErrorKind, message: &str) -> Error {
        DieselError::DatabaseError(kind, Box::new(message.to_owned())).into()
    }

    /// MariaDB 11.6+ with `innodb_snapshot_isolation`; the servers the tests run on
    /// cannot raise it, so the mapping is checked on the error both drivers produce
    /// (`mysqlclient` and `mysql_async` keep only the kind and the message).
    #[test]
    fn a_record_changed_since_last_read_is_a_retryable_serialization_failure() {
        let message = "Record has changed since last read in table 'counters'";
        for kind in [
            DatabaseErrorKind::Unknown,
            DatabaseErrorKind::SerializationFailure,
        ] {
            let error = error(kind, message);
            assert_eq!(
                error.transient_kind(),
                Some(TransientKind::SerializationFailure)
            );
            assert!(error.is_retryable());
            assert!(!error.to_string().contains("counters"), "{error}");
        }
        // Only the server's message, not one that merely mentions it.
        assert_eq!(
            error(
                DatabaseErrorKind::Unknown,
                "a Record has changed since last read"
            )
            .transient_kind(),
            None
        );
        assert_eq!(
            error(DatabaseErrorKind::UniqueViolation, message).transient_kind(),
            None
        );
    }
}
