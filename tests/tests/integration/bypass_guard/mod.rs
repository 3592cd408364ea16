//! The bypass-writer guard: a trigger that advances the token on every write that does
//! not (raw SQL, another service), so a checked save from a stale read conflicts instead
//! of overwriting that write. Each scenario shows the lost update without the guard.
//! Timestamp tokens are guarded on PostgreSQL only; the other backends refuse them.
//! [`triggers`] checks the DDL itself: names, quoting, identifier limits, wrapping;
//! [`timestamp_columns`] the timestamp guard on columns of every precision.

use diesel_occ::Dialect;
use diesel_occ_tests::Backend;

/// The guard's dialect for a test backend.
pub(crate) const fn dialect(backend: Backend) -> Dialect {
    match backend {
        Backend::Postgres => Dialect::Postgres,
        Backend::Mysql => Dialect::Mysql,
        Backend::Sqlite => Dialect::Sqlite,
    }
}

mod timestamp_columns;
mod triggers;

on_every_backend!(entities, scenarios);
