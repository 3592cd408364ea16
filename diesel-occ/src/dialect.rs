//! [`Dialect`]: which of the three supported SQL dialects a Diesel backend type speaks.
//!
//! The statements diesel-occ builds are generic over the backend, so that code generic
//! over it (Diesel's `MultiConnection`) compiles; the few places whose SQL differs
//! recognise the backend by its type.

use std::any::TypeId;

/// The SQL dialect of a backend, where diesel-occ writes backend-specific SQL or reads
/// a column type's name ([`SchemaBackend`](crate::schema_check::SchemaBackend)).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL.
    Postgres,
    /// MySQL and MariaDB.
    Mysql,
    /// SQLite.
    Sqlite,
}

impl Dialect {
    /// The dialect of `DB`, or `None` for a backend this build does not support.
    pub(crate) fn of<DB: 'static>() -> Option<Dialect> {
        let backend = TypeId::of::<DB>();
        #[cfg(feature = "postgres")]
        if backend == TypeId::of::<diesel::pg::Pg>() {
            return Some(Dialect::Postgres);
        }
        #[cfg(feature = "mysql")]
        if backend == TypeId::of::<diesel::mysql::Mysql>() {
            return Some(Dialect::Mysql);
        }
        #[cfg(feature = "sqlite")]
        if backend == TypeId::of::<diesel::sqlite::Sqlite>() {
            return Some(Dialect::Sqlite);
        }
        let _ = backend;
        None
    }
}
