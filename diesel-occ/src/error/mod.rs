//! Errors: one `#[non_exhaustive]` enum, with the conflict as a type of its own.
//!
//! No `Display` or `Debug` here contains SQL text, bind values or driver messages, so
//! a service may put any of them in a response or a log line. The driver's error stays
//! reachable through [`DatabaseError::diesel_error`] for code that wants it.

mod batch;
mod conflict;
mod database;
mod schema;
mod unique;

pub use crate::token::{InvalidToken, InvalidTokenReason};
pub use batch::BatchConflict;
pub use conflict::{ConcurrencyConflict, ConflictState, EntityKey, NotFound, Operation};
pub use database::{DatabaseError, PoolError, PoolErrorKind, RetriesExhausted, TransientKind};
pub use schema::{SchemaProblem, SchemaProblems, TokenColumnProblem, UnenforcedKey};
pub use unique::UniqueViolation;
pub(crate) use unique::unique_error;

/// Everything a checked operation can fail with.
///
/// An HTTP service answers each with the status the table of
/// [diesel-occ-axum](https://docs.rs/diesel-occ-axum/latest/diesel_occ_axum/problem/index.html#status-codes)
/// gives, the one home of that mapping; its `Problem` implements `From<Error>`. In
/// short: a stale client token (`If-Match`) is 412 with the current ETag, a conflict no
/// client precondition explains (retries exhausted) 409, a missing or deleted row 404,
/// an invalid token 400, a transient failure 503, anything else 500:
///
/// ```
/// use diesel_occ::{ConflictState, Error, Operation};
///
/// /// For a write whose predicate holds no token of the client's.
/// fn status(error: &Error) -> u16 {
///     match error {
///         Error::Conflict(conflict) if conflict.is_deleted() => 404,
///         Error::Conflict(conflict)
///             if conflict.operation() == Operation::ClientToken
///                 && matches!(conflict.state(), ConflictState::Stale { .. }) => 412,
///         Error::Conflict(_) | Error::Batch(_) => 409,
///         Error::RetriesExhausted(exhausted) if exhausted.last_conflict().is_some() => 409,
///         Error::NotFound(_) => 404,
///         Error::InvalidToken(_) => 400,
///         Error::RetriesExhausted(_) | Error::Pool(_) => 503,
///         error if error.is_transient() => 503,
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
    /// A checked insert or upsert found its key, or another value a unique index
    /// covers, taken. Nothing was written; never retried. It leaves a transaction of
    /// the caller's usable on every backend (a savepoint on PostgreSQL, where a failed
    /// statement would abort it): see [`UniqueViolation`].
    #[error(transparent)]
    UniqueViolation(#[from] UniqueViolation),
    /// A checked write matched more than one row: the declared primary key is not unique
    /// in the database. [`SchemaCheck`](crate::schema_check::SchemaCheck) reports such a
    /// key at start-up.
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
    Batch(#[from] crate::error::BatchConflict),
    /// A [`SchemaCheck`](crate::schema_check::SchemaCheck) found token columns that cannot
    /// hold their entities' tokens (missing, of another kind, or keeping fewer
    /// fractional digits than declared), or keys the database does not keep unique (no
    /// PRIMARY KEY or UNIQUE index on exactly the key columns). Nothing was written.
    #[error(transparent)]
    Schema(#[from] SchemaProblems),
    /// A change handed to a [`Combiner`](crate::blocking::Combiner) (blocking or async)
    /// may or may not be in the row: the connection was lost after its group's UPDATE
    /// or COMMIT may have reached the server, or the caller or task writing the group
    /// stopped mid-group (a panic, the async writer task's runtime shutting down). Read the row to know; never retried,
    /// since running the change again could apply it twice.
    #[cfg(feature = "combine")]
    #[cfg_attr(docsrs, doc(cfg(feature = "combine")))]
    #[error("the change's group may or may not have been saved")]
    OutcomeUnknown,
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

    /// The schema problems, when a [`SchemaCheck`](crate::schema_check::SchemaCheck) found some.
    pub fn as_schema_problems(&self) -> Option<&SchemaProblems> {
        match self {
            Error::Schema(problems) => Some(problems),
            _ => None,
        }
    }

    /// The batch conflict, when this is one.
    pub fn as_batch_conflict(&self) -> Option<&crate::error::BatchConflict> {
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
