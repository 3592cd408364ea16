//! SQLite.
//!
//! What the driver keeps: diesel maps SQLite's constraint codes and reports everything
//! else, `SQLITE_BUSY` and `SQLITE_LOCKED` included, as `DatabaseErrorKind::Unknown`
//! with `sqlite3_errmsg`, whose text for those codes is fixed (SQLite's messages are
//! not translated):
//!
//! - `SQLITE_BUSY` (and its extended codes): `database is locked`
//! - `SQLITE_LOCKED`: `database table is locked` or `database schema is locked`,
//!   possibly followed by `: <name>`
//!
//! A busy error is only worth retrying after SQLite's own `busy_timeout` has run out,
//! or when it cannot help (a deferred transaction upgrading to a write lock); set a
//! `busy_timeout` on the connections either way.

use diesel::result::DatabaseErrorKind;

use crate::error::TransientKind;

const BUSY_MESSAGE: &str = "database is locked";
const LOCKED_PREFIXES: [&str; 2] = ["database table is locked", "database schema is locked"];

pub(super) fn transient(kind: &DatabaseErrorKind, message: &str) -> Option<TransientKind> {
    match kind {
        DatabaseErrorKind::Unknown
            if message == BUSY_MESSAGE
                || LOCKED_PREFIXES.iter().any(|p| message.starts_with(p)) =>
        {
            Some(TransientKind::Busy)
        }
        _ => None,
    }
}

#[cfg(feature = "sqlite")]
impl super::LockingBackend for diesel::sqlite::Sqlite {
    const BEGIN_LOCKED: &'static str = "BEGIN IMMEDIATE";
    const ROW_LOCK: &'static str = "";
}
