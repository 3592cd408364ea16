//! What differs between backends: which database errors are worth retrying, and how an
//! escalated retry attempt takes its write lock.
//!
//! | | PostgreSQL | MySQL / MariaDB | SQLite |
//! |---|---|---|---|
//! | transient errors ([`TransientKind`]) | `40001`, `40P01`, `55P03` (lock timeout) | 1213, 1205, 1020 (MariaDB snapshot isolation), 1047 (Galera node not synced) | busy, locked |
//! | escalated transaction (`LockingBackend::BEGIN_LOCKED`) | `BEGIN` | `BEGIN` | `BEGIN IMMEDIATE` |
//! | escalated read (`LockingBackend::ROW_LOCK`) | `... FOR UPDATE` | `... FOR UPDATE` | plain: the write lock is already held |
//! | lock wait within a [deadline](crate::retry::RetryPolicy::deadline) (`LockingBackend::begin_locked_within`, `LockingBackend::locked_read_prefix`) | `SET LOCAL lock_timeout` after `BEGIN` | MariaDB: `SET STATEMENT max_statement_time = ... FOR` the read | not bounded: SQLite's `busy_timeout` |
//!
//! A retry policy's deadline bounds the lock wait of a locking read on the server, so
//! that the statement ends cleanly and the connection stays usable:
//!
//! - **PostgreSQL**: the escalated transaction starts with `BEGIN; SET LOCAL
//!   lock_timeout = '<ms>ms'`, the time left rounded up to a millisecond, in one round
//!   trip. Every lock wait of the transaction is bounded by the time left when it began;
//!   `SET LOCAL` ends with the transaction. A wait that runs out fails with `55P03`, a
//!   [lock wait timeout](TransientKind::LockWaitTimeout).
//! - **MariaDB**: `innodb_lock_wait_timeout` counts whole seconds, so the read itself is
//!   prefixed with `SET STATEMENT max_statement_time = <seconds> FOR`, computed when the
//!   read starts, which interrupts the lock wait on time (error 1969); the helpers report
//!   that as a lock wait timeout too. The prefix sits in a MariaDB-only comment
//!   (`/*M!100108 ... */`), which MySQL skips: on MySQL the lock wait is bounded by
//!   `innodb_lock_wait_timeout` alone (whole seconds, 50 by default; set it on the
//!   session where that matters). A bounded read's SQL text carries the time left, so it
//!   is not put in the prepared statement cache.
//! - **SQLite**: an escalated attempt waits for the write lock in `BEGIN IMMEDIATE`,
//!   for as long as the connection's `busy_timeout` says; the deadline does not shorten
//!   it.
//!
//! The classification works on [`diesel::result::Error`] alone, whichever driver
//! produced it (`libpq`, `tokio-postgres`, `mysqlclient`, `mysql_async`, SQLite), so it
//! needs no backend feature.

mod mysql;
mod pg;
mod sqlite;

use std::borrow::Cow;
use std::time::Duration;

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::{DatabaseErrorKind, Error as DieselError, QueryResult};

use crate::error::{DatabaseError, TransientKind};

/// A Diesel error as the library reports it, with its transient kind classified by the
/// codes of the backend that raised it.
impl From<DieselError> for DatabaseError {
    fn from(source: DieselError) -> Self {
        let transient = transient(&source);
        DatabaseError::classified(source, transient)
    }
}

/// The message of a locking read the async retry helpers abandoned at the deadline
/// (`retry::deadline::no_answer`): here, not there, so that classifying errors never
/// imports the retry loop.
pub(crate) const NO_ANSWER: &str = "No answer to the locking read within the retry deadline";

/// The transient kind of a Diesel error, whichever backend raised it.
pub(crate) fn transient(error: &DieselError) -> Option<TransientKind> {
    match error {
        // A locking read the async helpers abandoned at the deadline, on any backend.
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
            if info.message() == NO_ANSWER =>
        {
            Some(TransientKind::LockWaitTimeout)
        }
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

/// `error` as the helpers report it after a locking read whose lock wait was bounded by
/// the retry deadline: MariaDB's `max_statement_time` interruption becomes a lock wait
/// timeout; everything else is left as it is.
pub(crate) fn lock_wait_bound_reached(error: DieselError) -> DieselError {
    mysql::lock_wait_bound_reached(error)
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

    /// The statements that open the escalated transaction when its lock waits must end
    /// within `remaining` (the time left before a retry deadline; `None` for no bound):
    /// [`BEGIN_LOCKED`](Self::BEGIN_LOCKED), followed on PostgreSQL by `SET LOCAL
    /// lock_timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel_occ::backend::LockingBackend;
    /// use diesel::sqlite::Sqlite;
    ///
    /// // SQLite waits in BEGIN IMMEDIATE for as long as its busy_timeout says.
    /// assert_eq!(Sqlite::begin_locked_within(Some(Duration::from_millis(300))), "BEGIN IMMEDIATE");
    /// assert_eq!(Sqlite::begin_locked_within(None), Sqlite::BEGIN_LOCKED);
    /// ```
    fn begin_locked_within(remaining: Option<Duration>) -> Cow<'static, str> {
        let _ = remaining;
        Cow::Borrowed(Self::BEGIN_LOCKED)
    }

    /// What goes before a locking read whose lock wait must end within `remaining`:
    /// MariaDB's `SET STATEMENT max_statement_time = ... FOR`; nothing elsewhere.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel_occ::backend::LockingBackend;
    /// use diesel::sqlite::Sqlite;
    ///
    /// assert_eq!(Sqlite::locked_read_prefix(Duration::from_millis(300)), None);
    /// ```
    fn locked_read_prefix(remaining: Duration) -> Option<String> {
        let _ = remaining;
        None
    }
}

/// A read whose rows stay locked until the transaction ends: the query followed by the
/// backend's [`ROW_LOCK`](LockingBackend::ROW_LOCK) (`SELECT ... FOR UPDATE`).
///
/// The retry helpers' `AttemptDsl::find` builds it for an escalated attempt; it wraps
/// the entity's typed key lookup (`t WHERE <key>` with its selection), whose SQL ends
/// where a locking clause goes. Diesel's own `.for_update()` cannot be called from
/// generic code (its lock type is private), hence this wrapper.
#[derive(Debug, Clone, Copy, QueryId)]
pub struct LockedRead<Q> {
    query: Q,
    wait: Option<Duration>,
}

impl<Q> LockedRead<Q> {
    /// Locks the rows `query` reads.
    pub fn new(query: Q) -> Self {
        LockedRead { query, wait: None }
    }

    /// Waits for the row lock at most `remaining` where the backend can bound the wait
    /// of one statement (`LockingBackend::locked_read_prefix`); `None` leaves the
    /// wait to the server's settings.
    ///
    /// ```
    /// use std::time::Duration;
    /// use diesel::prelude::*;
    /// use diesel_occ::backend::LockedRead;
    ///
    /// diesel::table! { stock (id) { id -> Integer, available -> Integer } }
    ///
    /// let read = LockedRead::new(stock::table.find(1)).within(Some(Duration::from_millis(300)));
    /// // SQLite needs no row lock: the escalated transaction holds the write lock.
    /// assert_eq!(
    ///     diesel::debug_query::<diesel::sqlite::Sqlite, _>(&read).to_string(),
    ///     "SELECT `stock`.`id`, `stock`.`available` FROM `stock` WHERE (`stock`.`id` = ?) -- binds: [1]"
    /// );
    /// ```
    pub fn within(mut self, remaining: Option<Duration>) -> Self {
        self.wait = remaining;
        self
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
        if let Some(prefix) = self.wait.and_then(DB::locked_read_prefix) {
            // The text carries the time left: caching it would prepare a statement per
            // distinct bound, never evicted.
            out.unsafe_to_cache_prepared();
            out.push_sql(&prefix);
        }
        self.query.walk_ast(out.reborrow())?;
        out.push_sql(DB::ROW_LOCK);
        Ok(())
    }
}

impl<Q, Conn> diesel::RunQueryDsl<Conn> for LockedRead<Q> {}

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
            // Galera 1047 from a node that is not synced, through both drivers.
            (
                database_error(
                    Unknown,
                    "WSREP has not yet prepared node for application use",
                ),
                Some(TransientKind::NodeNotReady),
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

    diesel::table! {
        stock (id) {
            id -> Integer,
            available -> Integer,
            version -> Integer,
        }
    }

    type StockByKey = diesel::dsl::Select<
        diesel::dsl::Filter<stock::table, diesel::dsl::Eq<stock::id, i32>>,
        (stock::id, stock::available, stock::version),
    >;

    /// The read an escalated attempt locks: an entity's row by its key.
    fn stock_by_key(id: i32) -> StockByKey {
        use diesel::{ExpressionMethods, QueryDsl};

        stock::table
            .filter(stock::id.eq(id))
            .select((stock::id, stock::available, stock::version))
    }

    /// The escalated read of an entity's row, as backend `$db` renders it.
    macro_rules! locked_find_sql {
        ($db:ty) => {{
            let query = LockedRead::new(stock_by_key(1));
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
    fn a_deadline_bounds_the_lock_wait_where_the_backend_can() {
        use std::time::Duration;

        let left = Some(Duration::from_micros(299_999_500));
        macro_rules! bounded_sql {
            ($db:ty, $left:expr) => {{
                let read = LockedRead::new(stock_by_key(1));
                diesel::debug_query::<$db, _>(&read.within($left)).to_string()
            }};
        }
        #[cfg(feature = "postgres")]
        {
            use diesel::pg::Pg;
            // PostgreSQL bounds the whole transaction when it begins, rounded up.
            assert_eq!(
                Pg::begin_locked_within(left),
                "BEGIN; SET LOCAL lock_timeout = '300000ms'"
            );
            assert_eq!(
                Pg::begin_locked_within(Some(Duration::ZERO)),
                "BEGIN; SET LOCAL lock_timeout = '1ms'"
            );
            assert_eq!(Pg::begin_locked_within(None), "BEGIN");
            assert_eq!(bounded_sql!(Pg, left), locked_find_sql!(Pg));
        }
        #[cfg(feature = "mysql")]
        {
            use diesel::mysql::Mysql;
            // MariaDB bounds the read itself, in a comment MySQL skips.
            assert_eq!(Mysql::begin_locked_within(left), "BEGIN");
            assert_eq!(
                bounded_sql!(Mysql, left),
                format!(
                    "/*M!100108 SET STATEMENT max_statement_time = 299.999500 FOR */ {}",
                    locked_find_sql!(Mysql)
                )
            );
            assert_eq!(
                Mysql::locked_read_prefix(Duration::ZERO).as_deref(),
                Some("/*M!100108 SET STATEMENT max_statement_time = 0.001000 FOR */ ")
            );
            assert_eq!(bounded_sql!(Mysql, None), locked_find_sql!(Mysql));
        }
        use diesel::sqlite::Sqlite;
        assert_eq!(Sqlite::begin_locked_within(left), "BEGIN IMMEDIATE");
        assert_eq!(bounded_sql!(Sqlite, left), locked_find_sql!(Sqlite));
    }

    #[test]
    fn a_lock_wait_the_deadline_ended_is_a_lock_wait_timeout() {
        // MariaDB's error 1969 from the time limit of a bounded read.
        let interrupted = database_error(
            DatabaseErrorKind::Unknown,
            "Query execution was interrupted (max_statement_time exceeded)",
        );
        assert_eq!(transient(&interrupted), None, "a statement timeout as such");
        let ended = lock_wait_bound_reached(interrupted);
        assert_eq!(transient(&ended), Some(TransientKind::LockWaitTimeout));
        let DieselError::DatabaseError(_, info) = &ended else {
            panic!("{ended:?}");
        };
        assert_eq!(
            info.details(),
            Some("Query execution was interrupted (max_statement_time exceeded)"),
            "the server's message stays reachable"
        );
        // Anything else is left alone.
        let deadlock = database_error(DatabaseErrorKind::Unknown, "deadlock detected");
        assert_eq!(
            transient(&lock_wait_bound_reached(deadlock)),
            Some(TransientKind::Deadlock)
        );
        assert!(matches!(
            lock_wait_bound_reached(DieselError::NotFound),
            DieselError::NotFound
        ));
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
