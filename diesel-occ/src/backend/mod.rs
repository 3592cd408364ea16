//! What differs between backends: which database errors are worth retrying, and how an
//! escalated retry attempt takes its write lock.
//!
//! | | PostgreSQL | MySQL / MariaDB | SQLite |
//! |---|---|---|---|
//! | transient errors ([`TransientKind`]) | `40001`, `40P01`, `55P03` (lock timeout) | 1213, 1205, 1020 (MariaDB snapshot isolation) | busy, locked |
//! | escalated transaction ([`LockingBackend::BEGIN_LOCKED`]) | `BEGIN` | `BEGIN` | `BEGIN IMMEDIATE` |
//! | escalated read ([`LockingBackend::ROW_LOCK`]) | `... FOR UPDATE` | `... FOR UPDATE` | plain: the write lock is already held |
//!
//! The classification works on [`diesel::result::Error`] alone, whichever driver
//! produced it (`libpq`, `tokio-postgres`, `mysqlclient`, `mysql_async`, SQLite), so it
//! needs no backend feature.

mod mysql;
mod pg;
mod sqlite;

use diesel::backend::Backend;
use diesel::connection::{AnsiTransactionManager, Connection};
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::{Error as DieselError, QueryResult};

use crate::error::TransientKind;

/// The transient kind of a Diesel error, whichever backend raised it.
pub(crate) fn transient(error: &DieselError) -> Option<TransientKind> {
    match error {
        DieselError::DatabaseError(kind, info) => {
            let message = info.message();
            // MySQL first: `mysqlclient` reports error 1213 as `SerializationFailure`,
            // which is a deadlock there.
            mysql::transient(kind, message)
                .or_else(|| pg::transient(kind, message))
                .or_else(|| sqlite::transient(kind, message))
        }
        // A failed COMMIT whose rollback failed too: the commit error says why.
        DieselError::RollbackErrorOnCommit { commit_error, .. } => transient(commit_error),
        _ => None,
    }
}

/// How a backend runs an escalated retry attempt: in a transaction whose read locks the
/// rows it reads until the transaction ends.
///
/// Implemented for `Pg` (feature `postgres`), `Mysql` (feature `mysql`) and `Sqlite`
/// (feature `sqlite`).
pub trait LockingBackend: Backend {
    /// The statement that opens the escalated transaction: `BEGIN` on PostgreSQL and
    /// MySQL, `BEGIN IMMEDIATE` on SQLite (which takes the database's write lock up
    /// front, so the read that follows cannot be overtaken by another writer).
    const BEGIN_LOCKED: &'static str;

    /// What follows the escalated read: ` FOR UPDATE` on PostgreSQL and MySQL, nothing
    /// on SQLite.
    const ROW_LOCK: &'static str;
}

/// A read whose rows stay locked until the transaction ends: the query followed by the
/// backend's [`ROW_LOCK`](LockingBackend::ROW_LOCK) (`SELECT ... FOR UPDATE`).
///
/// The retry helpers' `AttemptDsl::find` builds it for an escalated attempt; it wraps
/// the entity's typed key lookup (`t WHERE <key>` with its selection), whose SQL ends
/// where a locking clause goes. Diesel's own `.for_update()` cannot be called from
/// generic code (its lock type is private), hence this wrapper.
#[derive(Debug, Clone, Copy, QueryId)]
pub struct LockedRead<Q>(Q);

impl<Q> LockedRead<Q> {
    /// Locks the rows `query` reads.
    pub fn new(query: Q) -> Self {
        LockedRead(query)
    }
}

impl<Q: Query> Query for LockedRead<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, DB> QueryFragment<DB> for LockedRead<Q>
where
    DB: LockingBackend,
    Q: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.0.walk_ast(out.reborrow())?;
        out.push_sql(DB::ROW_LOCK);
        Ok(())
    }
}

impl<Q, Conn> diesel::RunQueryDsl<Conn> for LockedRead<Q> {}

/// A blocking connection that can open an escalated retry attempt's transaction.
///
/// Implemented for every connection of a [`LockingBackend`] that uses Diesel's
/// `AnsiTransactionManager`: `PgConnection`, `MysqlConnection` and `SqliteConnection`.
/// The transaction is committed or rolled back through the connection's own
/// `TransactionManager`, as any Diesel transaction.
pub trait LockingConnection: Connection {
    /// Opens the transaction with [`LockingBackend::BEGIN_LOCKED`]. Fails with
    /// `AlreadyInTransaction` when a transaction is open.
    fn begin_locked_transaction(&mut self) -> QueryResult<()>;
}

impl<C> LockingConnection for C
where
    C: Connection<TransactionManager = AnsiTransactionManager>,
    C::Backend: LockingBackend,
{
    fn begin_locked_transaction(&mut self) -> QueryResult<()> {
        AnsiTransactionManager::begin_transaction_sql(self, C::Backend::BEGIN_LOCKED)
    }
}

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind, Error as DieselError};

    use super::*;

    fn database_error(kind: DatabaseErrorKind, message: &str) -> DieselError {
        DieselError::DatabaseError(kind, Box::new(message.to_owned()))
    }

    #[test]
    fn classification_covers_every_backend() {
        use DatabaseErrorKind::{SerializationFailure, Unknown};
        let cases = [
            // PostgreSQL 40001, mapped by both libpq and tokio-postgres.
            (
                database_error(
                    SerializationFailure,
                    "could not serialize access due to concurrent update",
                ),
                Some(TransientKind::SerializationFailure),
            ),
            // PostgreSQL 40P01 arrives as Unknown with the server's message.
            (
                database_error(Unknown, "deadlock detected"),
                Some(TransientKind::Deadlock),
            ),
            // MySQL 1213 through mysqlclient (mapped) and mysql_async (Unknown).
            (
                database_error(
                    SerializationFailure,
                    "Deadlock found when trying to get lock; try restarting transaction",
                ),
                Some(TransientKind::Deadlock),
            ),
            (
                database_error(
                    Unknown,
                    "Deadlock found when trying to get lock; try restarting transaction",
                ),
                Some(TransientKind::Deadlock),
            ),
            // MySQL 1205.
            (
                database_error(
                    Unknown,
                    "Lock wait timeout exceeded; try restarting transaction",
                ),
                Some(TransientKind::LockWaitTimeout),
            ),
            // PostgreSQL 55P03 from `lock_timeout`; 57014 from `statement_timeout` is not
            // transient.
            (
                database_error(Unknown, "canceling statement due to lock timeout"),
                Some(TransientKind::LockWaitTimeout),
            ),
            (
                database_error(Unknown, "canceling statement due to statement timeout"),
                None,
            ),
            // SQLite busy and locked.
            (
                database_error(Unknown, "database is locked"),
                Some(TransientKind::Busy),
            ),
            (
                database_error(Unknown, "database table is locked: stock"),
                Some(TransientKind::Busy),
            ),
            (
                database_error(Unknown, "database schema is locked: main"),
                Some(TransientKind::Busy),
            ),
            // Not transient.
            (
                database_error(DatabaseErrorKind::UniqueViolation, "duplicate key"),
                None,
            ),
            (
                database_error(Unknown, "syntax error at or near \"x\""),
                None,
            ),
            (
                database_error(Unknown, "a deadlock detected in the message"),
                None,
            ),
            (DieselError::NotFound, None),
            (DieselError::RollbackTransaction, None),
        ];
        for (error, expected) in cases {
            assert_eq!(transient(&error), expected, "{error:?}");
        }
    }

    /// The escalated read of the retry tests' entity, as backend `$db` renders it.
    macro_rules! locked_find_sql {
        ($db:ty) => {{
            use diesel::{QueryDsl, SelectableHelper};

            use crate::Versioned;
            use crate::retry::test_support::Stock;

            let query = LockedRead::new(Stock::find_query(1).select(Stock::as_select()));
            diesel::debug_query::<$db, _>(&query).to_string()
        }};
    }

    #[test]
    fn the_escalated_read_locks_its_row_where_the_backend_can() {
        #[cfg(feature = "postgres")]
        assert_eq!(
            locked_find_sql!(diesel::pg::Pg),
            "SELECT \"stock\".\"id\", \"stock\".\"available\", \"stock\".\"version\" \
             FROM \"stock\" WHERE (\"stock\".\"id\" = $1) FOR UPDATE -- binds: [1]"
        );
        #[cfg(feature = "mysql")]
        assert_eq!(
            locked_find_sql!(diesel::mysql::Mysql),
            "SELECT `stock`.`id`, `stock`.`available`, `stock`.`version` \
             FROM `stock` WHERE (`stock`.`id` = ?) FOR UPDATE -- binds: [1]"
        );
        assert_eq!(
            locked_find_sql!(diesel::sqlite::Sqlite),
            "SELECT `stock`.`id`, `stock`.`available`, `stock`.`version` \
             FROM `stock` WHERE (`stock`.`id` = ?) -- binds: [1]"
        );
    }

    #[test]
    fn a_failed_commit_is_classified_by_its_commit_error() {
        let error = DieselError::RollbackErrorOnCommit {
            rollback_error: Box::new(DieselError::BrokenTransactionManager),
            commit_error: Box::new(database_error(
                DatabaseErrorKind::SerializationFailure,
                "could not serialize access due to read/write dependencies among transactions",
            )),
        };
        assert_eq!(transient(&error), Some(TransientKind::SerializationFailure));
    }
}
