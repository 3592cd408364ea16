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
//! - 1020 (`ER_CHECKREAD`): `Record has changed since last read in table 't'`. MariaDB
//!   11.6 and later raise it under `innodb_snapshot_isolation` when a transaction writes
//!   or locks a row that another transaction changed after its snapshot was taken: a
//!   write conflict, which a new transaction (a retry) resolves, like PostgreSQL's
//!   serialization failure under REPEATABLE READ.

use diesel::result::DatabaseErrorKind;

use crate::error::TransientKind;

const DEADLOCK_PREFIX: &str = "Deadlock found when trying to get lock";
const LOCK_WAIT_TIMEOUT_PREFIX: &str = "Lock wait timeout exceeded";
const RECORD_CHANGED_PREFIX: &str = "Record has changed since last read";

pub(super) fn transient(kind: &DatabaseErrorKind, message: &str) -> Option<TransientKind> {
    match kind {
        DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::Unknown
            if message.starts_with(DEADLOCK_PREFIX) =>
        {
            Some(TransientKind::Deadlock)
        }
        DatabaseErrorKind::Unknown if message.starts_with(LOCK_WAIT_TIMEOUT_PREFIX) => {
            Some(TransientKind::LockWaitTimeout)
        }
        DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::Unknown
            if message.starts_with(RECORD_CHANGED_PREFIX) =>
        {
            Some(TransientKind::SerializationFailure)
        }
        _ => None,
    }
}

#[cfg(feature = "mysql")]
impl super::LockingBackend for diesel::mysql::Mysql {
    const BEGIN_LOCKED: &'static str = "BEGIN";
    const ROW_LOCK: &'static str = " FOR UPDATE";
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
