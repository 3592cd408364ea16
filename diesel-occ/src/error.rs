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
    /// A client-supplied token is missing, nil or malformed. Nothing was read or written.
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
    #[error(transparent)]
    Database(#[from] DatabaseError),
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

    /// True for [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound(_))
    }
}

impl From<diesel::result::Error> for Error {
    fn from(error: diesel::result::Error) -> Self {
        Error::Database(DatabaseError::from(error))
    }
}

/// The primary key of one row, as column names and rendered values: `(id=7)`.
#[derive(Clone, PartialEq, Eq)]
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
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Update => "update",
            Operation::Delete => "delete",
            Operation::ClientToken => "client token check",
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

    /// The token the row holds now; `None` if it was deleted or `T` is the wrong type.
    pub fn current<T: VersionToken>(&self) -> Option<T> {
        match &self.state {
            ConflictState::Stale { current } => T::from_value(current),
            ConflictState::Deleted => None,
        }
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

    /// A short description of the kind of failure, free of driver text.
    pub fn kind(&self) -> &'static str {
        use diesel::result::{DatabaseErrorKind as Kind, Error as E};
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
