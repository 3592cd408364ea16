//! PostgreSQL.
//!
//! What the drivers keep: `libpq` (diesel's `PgConnection`) and `tokio-postgres`
//! (diesel-async's `AsyncPgConnection`) both map SQLSTATE `40001` to
//! `DatabaseErrorKind::SerializationFailure`. Every other SQLSTATE they do not map,
//! `40P01` (deadlock) included, becomes `Unknown`, and the SQLSTATE itself is not
//! reachable: the error information is a private type behind
//! `DatabaseErrorInformation`, which offers the message, detail, hint, table, column,
//! constraint and position only. A deadlock is therefore recognised by its primary
//! message, `deadlock detected`, which PostgreSQL translates unless `lc_messages` is
//! `C` or English.
//!
//! A lock timeout (`SET lock_timeout`, SQLSTATE `55P03`, `canceling statement due to
//! lock timeout`) is the counterpart of MySQL's lock wait timeout (1205): a row lock
//! was not granted in time, and the statement was cancelled without effect, so it is
//! transient in the same way. A statement timeout (`57014`, `canceling statement due to
//! statement timeout`) is not: the statement ran too long, and running it again takes
//! as long.

use diesel::result::DatabaseErrorKind;

use crate::error::TransientKind;

/// The primary message of SQLSTATE 40P01.
const DEADLOCK_MESSAGE: &str = "deadlock detected";

/// The primary message of SQLSTATE 55P03 raised by `lock_timeout`.
const LOCK_TIMEOUT_MESSAGE: &str = "canceling statement due to lock timeout";

pub(super) fn transient(kind: &DatabaseErrorKind, message: &str) -> Option<TransientKind> {
    match kind {
        DatabaseErrorKind::SerializationFailure => Some(TransientKind::SerializationFailure),
        DatabaseErrorKind::Unknown if message == DEADLOCK_MESSAGE => Some(TransientKind::Deadlock),
        DatabaseErrorKind::Unknown if message == LOCK_TIMEOUT_MESSAGE => {
            Some(TransientKind::LockWaitTimeout)
        }
        _ => None,
    }
}

#[cfg(feature = "postgres")]
impl super::LockingBackend for diesel::pg::Pg {
    const BEGIN_LOCKED: &'static str = "BEGIN";
    const ROW_LOCK: &'static str = " FOR UPDATE";

    /// `BEGIN; SET LOCAL lock_timeout = '<ms>ms'`: sent as one batch, so bounding the
    /// lock waits costs no round trip, and `SET LOCAL` ends with the transaction, so the
    /// pooled connection keeps its own setting.
    fn begin_locked_within(
        remaining: Option<std::time::Duration>,
    ) -> std::borrow::Cow<'static, str> {
        match remaining {
            None => Self::BEGIN_LOCKED.into(),
            Some(left) => format!(
                "{}; SET LOCAL lock_timeout = '{}ms'",
                Self::BEGIN_LOCKED,
                ceil_millis(left)
            )
            .into(),
        }
    }
}

/// Whole milliseconds in `duration`, rounded up, at least 1: a `lock_timeout` of zero
/// means "no bound", and rounding down would end a wait before the deadline.
#[cfg(feature = "postgres")]
fn ceil_millis(duration: std::time::Duration) -> u128 {
    duration.as_nanos().div_ceil(1_000_000).max(1)
}
