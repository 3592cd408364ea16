//! Errors: one `#[non_exhaustive]` enum, with the conflict as a type of its own.
//!
//! No `Display` or `Debug` here contains SQL text, bind values or driver messages, so
//! a service may put any of them in a response or a log line. The driver's error stays
//! reachable through [`DatabaseError::diesel_error`] for code that wants it.

use std::fmt;

use crate::token::{TokenValue, VersionToken};

/// Everything a checked operation can fail with.
///
/// ```
/// use diesel_occ::Error;
///
/// fn status(error: &Error) -> u16 {
///     match error {
///         Error::Conflict(conflict) if conflict.is_deleted() => 404,
///         Error::Conflict(_) => 409,
///         Error::NotFound(_) => 404,
///         Error::InvalidToken(_) => 400,
///         _ => 500,
///     }
/// }
/// # let _ = status;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The row changed or vanished since it was read: the write matched no row, or a
    /// client-supplied token is already stale. Nothing was written.
    #[error(transparent)]
    Conflict(#[from] ConcurrencyConflict),
    /// A load by key found no row.
    #[error(transparent)]
    NotFound(#[from] NotFound),
    /// A client-supplied token is missing, nil, malformed or out of range, or a write
    /// found no fresh token to follow the entity's (a timestamp at the end of chrono's
    /// range). Nothing was read or written.
    #[error(transparent)]
    InvalidToken(#[from] InvalidToken),
    /// A checked write matched more than one row: the declared primary key is not unique
    /// in the database.
    #[error("{affected} rows of {table} matched key {key}; the primary key is not unique")]
    KeyNotUnique {
        /// The table written to.
        table: &'static str,
        /// The key that matched several rows.
        key: EntityKey,
        /// How many rows the statement touched.
        affected: usize,
    },
    /// The database or the connection failed.
    ///
    /// Some of these are worth retrying: [`Error::is_transient`] tells which.
    #[error(transparent)]
    Database(#[from] DatabaseError),
    /// A retry helper could not get a connection out of its source (a pool timed out,
    /// was closed, or could not connect). The helper does not retry this: the pool has
    /// its own waiting.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A retry helper gave up: every attempt its [`RetryPolicy`](crate::retry::RetryPolicy)
    /// allowed met a conflict or a transient database error, or its deadline came first.
    /// Carries the number of attempts and the last error.
    #[error(transparent)]
    RetriesExhausted(#[from] RetriesExhausted),
    /// A batch save ([`BatchDsl::save_all_checked`](crate::BatchDsl::save_all_checked))
    /// met one or more conflicts: it rolled back, wrote nothing, and lists every stale
    /// or deleted entity.
    #[error(transparent)]
    Batch(#[from] crate::batch::BatchConflict),
    /// A [`SchemaCheck`](crate::schema::SchemaCheck) found token columns that cannot
    /// hold their entities' tokens (missing, of another kind, or keeping fewer
    /// fractional digits than declared). Nothing was written.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaProblems),
}

impl Error {
    /// True for [`Error::Conflict`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict(_))
    }

    /// The conflict, when this is one.
    pub fn as_conflict(&self) -> Option<&ConcurrencyConflict> {
        match self {
            Error::Conflict(conflict) => Some(conflict),
            _ => None,
        }
    }

    /// The schema problems, when a [`SchemaCheck`](crate::schema::SchemaCheck) found some.
    pub fn as_schema_problems(&self) -> Option<&crate::schema::SchemaProblems> {
        match self {
            Error::Schema(problems) => Some(problems),
            _ => None,
        }
    }

    /// The batch conflict, when this is one.
    pub fn as_batch_conflict(&self) -> Option<&crate::batch::BatchConflict> {
        match self {
            Error::Batch(conflict) => Some(conflict),
            _ => None,
        }
    }

    /// True for [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound(_))
    }

    /// True for a database error that is worth retrying as it is: a serialization
    /// failure, a deadlock, a lock wait timeout or a busy SQLite database. See
    /// [`TransientKind`] for how each backend's errors are recognised.
    ///
    /// ```
    /// use diesel::result::{DatabaseErrorKind, Error as DieselError};
    /// use diesel_occ::Error;
    ///
    /// let deadlock = DieselError::DatabaseError(
    ///     DatabaseErrorKind::Unknown,
    ///     Box::new(String::from("deadlock detected")),
    /// );
    /// assert!(Error::from(deadlock).is_transient());
    /// assert!(!Error::from(DieselError::NotFound).is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        self.transient_kind().is_some()
    }

    /// What kind of transient database error this is, if it is one.
    pub fn transient_kind(&self) -> Option<TransientKind> {
        match self {
            Error::Database(error) => error.transient(),
            _ => None,
        }
    }

    /// True when the retry helpers retry this error: a [`ConcurrencyConflict`] met by a
    /// write (a stale client token is not retried: re-reading cannot make it current;
    /// nor is [`ConflictState::Unmatched`]: the row holds the token, so re-reading
    /// changes nothing) or a [transient](Self::is_transient) database error.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Conflict(conflict) => conflict.is_retryable(),
            Error::Batch(batch) => batch.conflicts().iter().all(|(_, c)| c.is_retryable()),
            _ => self.is_transient(),
        }
    }
}

impl From<diesel::result::Error> for Error {
    fn from(error: diesel::result::Error) -> Self {
        Error::Database(DatabaseError::from(error))
    }
}

/// The primary key of one row, as column names and rendered values: `(id=7)`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EntityKey {
    columns: &'static [&'static str],
    values: Vec<String>,
}

impl EntityKey {
    /// A key from its column names and the `Debug` rendering of each value.
    pub fn new(columns: &'static [&'static str], values: Vec<String>) -> Self {
        EntityKey { columns, values }
    }

    /// The key columns, in declaration order.
    pub fn columns(&self) -> &'static [&'static str] {
        self.columns
    }

    /// The rendered key values, one per column.
    pub fn values(&self) -> &[String] {
        &self.values
    }
}

impl fmt::Display for EntityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, (column, value)) in self.columns.iter().zip(&self.values).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{column}={value}")?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for EntityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Which checked operation met the conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// `save_checked`: an UPDATE guarded by the original token.
    Update,
    /// `delete_checked`: a DELETE guarded by the original token.
    Delete,
    /// `find_checked`: a client-supplied token compared before any write.
    ClientToken,
    /// `force_increment`: an UPDATE of the token alone, guarded by the original token.
    ForceIncrement,
    /// `soft_delete_checked`: an UPDATE of a deleted marker and the token, guarded by
    /// the original token.
    SoftDelete,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Update => "update",
            Operation::Delete => "delete",
            Operation::ClientToken => "client token check",
            Operation::ForceIncrement => "force increment",
            Operation::SoftDelete => "soft delete",
        })
    }
}

/// What the database holds now, as seen right after the conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConflictState {
    /// The row exists with another token: somebody else wrote it.
    Stale {
        /// The token the row holds now.
        current: TokenValue,
    },
    /// The row is gone.
    Deleted,
    /// The row still holds the expected token, yet the write matched no row: something
    /// other than a concurrent writer refused it, such as a row-level security policy
    /// or a trigger that skips the write. Re-reading and retrying cannot help, so the
    /// retry helpers do not retry it; [`ConcurrencyConflict::current`] is `None`.
    Unmatched,
}

/// The row changed or vanished since it was read; nothing was written.
///
/// The entity that met it is exactly as it was before the call (its token is not
/// advanced), so the caller can inspect it, merge, re-read or give up.
///
/// ```
/// use diesel_occ::{ConcurrencyConflict, ConflictState, EntityKey, Operation, VersionToken};
///
/// let conflict = ConcurrencyConflict::new(
///     "stock",
///     EntityKey::new(&["id"], vec!["1".into()]),
///     Operation::Update,
///     3_i32.to_value(),
///     ConflictState::Stale { current: 4_i32.to_value() },
/// );
/// assert_eq!(conflict.current::<i32>(), Some(4));
/// assert_eq!(
///     conflict.to_string(),
///     "concurrency conflict on stock (id=1) during update: expected token 3, the row now holds token 4"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConcurrencyConflict {
    table: &'static str,
    key: EntityKey,
    operation: Operation,
    expected: TokenValue,
    state: ConflictState,
}

impl ConcurrencyConflict {
    /// Builds a conflict; checked operations do this for you.
    pub fn new(
        table: &'static str,
        key: EntityKey,
        operation: Operation,
        expected: TokenValue,
        state: ConflictState,
    ) -> Self {
        ConcurrencyConflict {
            table,
            key,
            operation,
            expected,
            state,
        }
    }

    /// The table of the row.
    pub fn table(&self) -> &'static str {
        self.table
    }

    /// The key of the row.
    pub fn key(&self) -> &EntityKey {
        &self.key
    }

    /// The operation that met the conflict.
    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// What the database holds now.
    pub fn state(&self) -> &ConflictState {
        &self.state
    }

    /// True when the row was deleted.
    pub fn is_deleted(&self) -> bool {
        matches!(self.state, ConflictState::Deleted)
    }

    /// The token the caller expected, as an untyped value.
    pub fn expected_value(&self) -> &TokenValue {
        &self.expected
    }

    /// The token the caller expected, typed; `None` if `T` is not the entity's token type.
    pub fn expected<T: VersionToken>(&self) -> Option<T> {
        T::from_value(&self.expected)
    }

    /// The token the row holds now; `None` if it was deleted, if the write was
    /// [unmatched](ConflictState::Unmatched), or if `T` is the wrong type.
    pub fn current<T: VersionToken>(&self) -> Option<T> {
        match &self.state {
            ConflictState::Stale { current } => T::from_value(current),
            ConflictState::Deleted | ConflictState::Unmatched => None,
        }
    }

    /// True when re-reading the row and trying again can succeed: a write's conflict
    /// with a stale or deleted row. A stale client token and an
    /// [unmatched](ConflictState::Unmatched) write are not retryable.
    pub fn is_retryable(&self) -> bool {
        self.operation != Operation::ClientToken && self.state != ConflictState::Unmatched
    }
}

impl fmt::Display for ConcurrencyConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "concurrency conflict on {} {} during {}: expected token {}, ",
            self.table, self.key, self.operation, self.expected
        )?;
        match &self.state {
            ConflictState::Stale { current } => write!(f, "the row now holds token {current}"),
            ConflictState::Deleted => f.write_str("the row was deleted"),
            ConflictState::Unmatched => f.write_str(
                "the row holds that token but the write matched no row \
                 (a row-level security policy or a trigger may have refused it)",
            ),
        }
    }
}

/// A load by key found no row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no row in {table} with key {key}")]
pub struct NotFound {
    /// The table searched.
    pub table: &'static str,
    /// The key searched for.
    pub key: EntityKey,
}

/// A client-supplied token that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid concurrency token: {reason}")]
pub struct InvalidToken {
    /// Why the token was refused.
    pub reason: InvalidTokenReason,
}

impl InvalidToken {
    /// A token refused for `reason`.
    pub fn new(reason: InvalidTokenReason) -> Self {
        InvalidToken { reason }
    }
}

/// Why a client-supplied token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidTokenReason {
    /// No token was supplied where one is required.
    #[error("a token is required")]
    Missing,
    /// The token is empty.
    #[error("the token is empty")]
    Empty,
    /// The nil UUID, which is never a valid token.
    #[error("the nil UUID is not a valid token")]
    Nil,
    /// Longer than any token this library issues.
    #[error("the token is too long")]
    TooLong,
    /// Not a token of the expected kind.
    #[error("the token is malformed")]
    Malformed,
    /// A timestamp so late (the last second of chrono's range, years past any
    /// database's) that no fresh token can follow it: a write could only store an
    /// earlier one.
    #[error("the token is too late for a fresh token to follow it")]
    OutOfRange,
}

/// The database or the connection failed.
///
/// `Display` and `Debug` name only the kind of failure; the driver's message (which may
/// quote SQL or values) is available through [`DatabaseError::diesel_error`].
#[derive(thiserror::Error)]
#[error("database error: {}", self.kind())]
pub struct DatabaseError {
    #[source]
    source: diesel::result::Error,
}

impl DatabaseError {
    /// The underlying Diesel error, driver message included. Do not show it to clients.
    pub fn diesel_error(&self) -> &diesel::result::Error {
        &self.source
    }

    /// Takes the underlying Diesel error.
    pub fn into_diesel_error(self) -> diesel::result::Error {
        self.source
    }

    /// The kind of transient failure, when this one is worth retrying.
    pub fn transient(&self) -> Option<TransientKind> {
        crate::backend::transient(&self.source)
    }

    /// A short description of the kind of failure, free of driver text.
    pub fn kind(&self) -> &'static str {
        use diesel::result::{DatabaseErrorKind as Kind, Error as E};
        if let Some(transient) = self.transient() {
            return transient.description();
        }
        match &self.source {
            E::DatabaseError(kind, _) => match kind {
                Kind::UniqueViolation => "unique violation",
                Kind::ForeignKeyViolation => "foreign key violation",
                Kind::NotNullViolation => "not-null violation",
                Kind::CheckViolation => "check constraint violation",
                Kind::SerializationFailure => "serialization failure",
                Kind::ReadOnlyTransaction => "read-only transaction",
                Kind::UnableToSendCommand => "unable to send command",
                Kind::ClosedConnection => "connection closed",
                _ => "statement failed",
            },
            E::NotFound => "row not found",
            E::DeserializationError(_) => "cannot read a column value",
            E::SerializationError(_) => "cannot write a bind value",
            E::QueryBuilderError(_) => "cannot build the query",
            E::RollbackErrorOnCommit { .. } => "commit failed and was rolled back",
            E::RollbackTransaction => "transaction rolled back",
            E::AlreadyInTransaction | E::NotInTransaction => "transaction misuse",
            E::BrokenTransactionManager => "broken transaction manager",
            _ => "unknown failure",
        }
    }
}

impl fmt::Debug for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseError")
            .field("kind", &self.kind())
            .finish_non_exhaustive()
    }
}

impl From<diesel::result::Error> for DatabaseError {
    fn from(source: diesel::result::Error) -> Self {
        DatabaseError { source }
    }
}

/// A database error that is worth retrying as it is, by backend:
///
/// | kind | PostgreSQL | MySQL / MariaDB | SQLite |
/// |---|---|---|---|
/// | [`SerializationFailure`](Self::SerializationFailure) | SQLSTATE `40001` | error 1020 (MariaDB 11.6+, `innodb_snapshot_isolation`) | |
/// | [`Deadlock`](Self::Deadlock) | SQLSTATE `40P01` | error 1213 | |
/// | [`LockWaitTimeout`](Self::LockWaitTimeout) | SQLSTATE `55P03` (`lock_timeout`) | error 1205 | |
/// | [`Busy`](Self::Busy) | | | `SQLITE_BUSY`, `SQLITE_LOCKED` |
///
/// Diesel keeps the SQLSTATE or error number only for what it maps to a
/// [`DatabaseErrorKind`](diesel::result::DatabaseErrorKind) (`40001` on PostgreSQL,
/// 1213 through `mysqlclient`); everything else arrives as `Unknown` with the server's
/// message. Those are recognised by their message, which PostgreSQL localises: run
/// PostgreSQL with `lc_messages` set to `C` or an English locale (the default) for
/// deadlocks to be recognised there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransientKind {
    /// The transaction could not be serialized with a concurrent one.
    SerializationFailure,
    /// The database broke a deadlock by aborting this statement's transaction.
    Deadlock,
    /// A row lock was not granted in time.
    LockWaitTimeout,
    /// SQLite: another connection holds the lock this statement needs.
    Busy,
}

impl TransientKind {
    /// A lower-case description, also used as a label in logs.
    pub fn description(self) -> &'static str {
        match self {
            TransientKind::SerializationFailure => "serialization failure",
            TransientKind::Deadlock => "deadlock",
            TransientKind::LockWaitTimeout => "lock wait timeout",
            TransientKind::Busy => "database busy",
        }
    }
}

impl fmt::Display for TransientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// A connection could not be checked out of a retry helper's connection source.
///
/// `Display` and `Debug` name only the [kind](PoolErrorKind) of failure, never a
/// connection string or a driver message; the pool's own error is the
/// [`source`](std::error::Error::source).
///
/// ```
/// use diesel_occ::{PoolError, PoolErrorKind};
///
/// let error = PoolError::new(PoolErrorKind::Timeout, "timed out after 30s waiting for postgres://app:secret@db");
/// assert_eq!(error.to_string(), "could not check out a connection: timed out");
/// assert_eq!(error.kind(), PoolErrorKind::Timeout);
/// ```
#[derive(thiserror::Error)]
#[error("could not check out a connection: {kind}")]
pub struct PoolError {
    kind: PoolErrorKind,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl PoolError {
    /// A checkout failure of this kind, caused by `source` (the pool's own error).
    pub fn new(
        kind: PoolErrorKind,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        PoolError {
            kind,
            source: Some(source.into()),
        }
    }

    /// A checkout failure of this kind with no underlying error.
    pub fn from_kind(kind: PoolErrorKind) -> Self {
        PoolError { kind, source: None }
    }

    /// What went wrong.
    pub fn kind(&self) -> PoolErrorKind {
        self.kind
    }
}

impl fmt::Debug for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolError")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl From<diesel::ConnectionError> for PoolError {
    fn from(error: diesel::ConnectionError) -> Self {
        PoolError::new(PoolErrorKind::Connect, error)
    }
}

/// Why a connection could not be checked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum PoolErrorKind {
    /// No connection became available in time.
    #[error("timed out")]
    Timeout,
    /// The pool was closed.
    #[error("the pool is closed")]
    Closed,
    /// A new connection could not be established or set up.
    #[error("could not connect")]
    Connect,
    /// Anything else the pool reported.
    #[error("the pool failed")]
    Other,
}

/// A retry helper gave up. Nothing of the failed attempts was written.
///
/// ```
/// use diesel_occ::retry::{self, RetryPolicy};
/// # use diesel_occ::Error;
/// # use diesel::prelude::*;
///
/// # fn main() {
/// let policy = RetryPolicy::new().max_attempts(2).backoff(std::time::Duration::ZERO, std::time::Duration::ZERO);
/// let source = || SqliteConnection::establish(":memory:");
/// let result: Result<(), Error> = retry::retry(&source, &policy, |_conn, _attempt| {
///     Err(diesel::result::Error::DatabaseError(
///         diesel::result::DatabaseErrorKind::Unknown,
///         Box::new(String::from("database is locked")),
///     )
///     .into())
/// });
/// let Err(Error::RetriesExhausted(exhausted)) = result else { panic!("expected exhaustion") };
/// assert_eq!(exhausted.attempts(), 2);
/// assert!(exhausted.last_error().is_transient());
/// assert_eq!(exhausted.to_string(), "gave up after 2 attempts");
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{}", self.describe())]
pub struct RetriesExhausted {
    attempts: u32,
    deadline_reached: bool,
    #[source]
    last: Box<Error>,
}

impl RetriesExhausted {
    pub(crate) fn new(attempts: u32, deadline_reached: bool, last: Error) -> Self {
        RetriesExhausted {
            attempts,
            deadline_reached,
            last: Box::new(last),
        }
    }

    fn describe(&self) -> String {
        let plural = if self.attempts == 1 { "" } else { "s" };
        if self.deadline_reached {
            format!(
                "gave up after {} attempt{plural}: the retry deadline came first",
                self.attempts
            )
        } else {
            format!("gave up after {} attempt{plural}", self.attempts)
        }
    }

    /// How many attempts ran.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// True when the policy's deadline, not its attempt limit, ended the retries.
    pub fn deadline_reached(&self) -> bool {
        self.deadline_reached
    }

    /// The error the last attempt met: a conflict or a transient database error.
    pub fn last_error(&self) -> &Error {
        &self.last
    }

    /// Takes the error the last attempt met.
    pub fn into_last_error(self) -> Error {
        *self.last
    }

    /// The conflict the last attempt met, when it was one.
    pub fn last_conflict(&self) -> Option<&ConcurrencyConflict> {
        self.last.as_conflict()
    }
}
