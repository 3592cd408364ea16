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

use diesel::result::DatabaseErrorKind;

use crate::error::TransientKind;

const DEADLOCK_PREFIX: &str = "Deadlock found when trying to get lock";
const LOCK_WAIT_TIMEOUT_PREFIX: &str = "Lock wait timeout exceeded";

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
        _ => None,
    }
}

#[cfg(feature = "mysql")]
impl super::LockingBackend for diesel::mysql::Mysql {
    const BEGIN_LOCKED: &'static str = "BEGIN";
    const ROW_LOCK: &'static str = " FOR UPDATE";
}
