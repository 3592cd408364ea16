//! [`DatabaseError`], [`PoolError`] and [`RetriesExhausted`]: failures that are not
//! conflicts, with nothing of the driver's text in their output.

use std::fmt;

use super::{ConcurrencyConflict, Error};

/// The database or the connection failed.
///
/// `Display` and `Debug` name only the kind of failure; the driver's message (which may
/// quote SQL or values) is available through [`DatabaseError::diesel_error`].
#[derive(thiserror::Error)]
#[error("database error: {}", self.kind())]
pub struct DatabaseError {
    #[source]
    source: diesel::result::Error,
    /// Classified once, where the error is made (`backend`), which knows each
    /// backend's codes.
    transient: Option<TransientKind>,
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
        self.transient
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

impl DatabaseError {
    /// `source`, whose transient kind the backend classification found to be
    /// `transient`. The `From<diesel::result::Error>` impl, beside that classification
    /// in `backend`, is the way in.
    pub(crate) fn classified(
        source: diesel::result::Error,
        transient: Option<TransientKind>,
    ) -> Self {
        DatabaseError { source, transient }
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
/// | [`NodeNotReady`](Self::NodeNotReady) | | error 1047 from a Galera node that is not synced | |
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
    /// A MariaDB Galera node refused the statement before running it because it is not
    /// part of the synced cluster yet (error 1047, `WSREP has not yet prepared node for
    /// application use`: a node rejoining after a crash accepts connections before it
    /// is synced). Another attempt, on another node (through `multi_host::MultiHost`,
    /// feature `multi-host`), can run it.
    NodeNotReady,
}

impl TransientKind {
    /// A lower-case description, also used as a label in logs.
    pub fn description(self) -> &'static str {
        match self {
            TransientKind::SerializationFailure => "serialization failure",
            TransientKind::Deadlock => "deadlock",
            TransientKind::LockWaitTimeout => "lock wait timeout",
            TransientKind::Busy => "database busy",
            TransientKind::NodeNotReady => "cluster node not ready",
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
/// Its [`source`](std::error::Error::source) is the last attempt's error itself, a
/// [`diesel_occ::Error`](Error), so a chain walked with `downcast_ref::<Error>()` (as
/// anyhow's and eyre's `chain()` are) finds it.
///
/// ```
/// use diesel_occ::blocking;
/// use diesel_occ::retry::RetryPolicy;
/// # use diesel_occ::Error;
/// # use diesel::prelude::*;
///
/// # fn main() {
/// let policy = RetryPolicy::new().max_attempts(2).backoff(std::time::Duration::ZERO, std::time::Duration::ZERO);
/// let source = || SqliteConnection::establish(":memory:");
/// let result: Result<(), Error> = blocking::retry(&source, &policy, |_conn, _attempt| {
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
#[derive(Debug)]
pub struct RetriesExhausted {
    attempts: u32,
    deadline_reached: bool,
    // Boxed: `Error` holds a `RetriesExhausted`.
    last: Box<Error>,
}

impl fmt::Display for RetriesExhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Written out rather than derived: thiserror's `#[source]` on the `Box<Error>` would
/// give the box as the source, which a downcast to `Error` does not find.
impl std::error::Error for RetriesExhausted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.last)
    }
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

#[cfg(test)]
mod tests {
    use std::error::Error as StdError;

    use super::{Error, RetriesExhausted};

    /// A transient error, as the last attempt of a retry loop meets it.
    fn locked() -> Error {
        diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::Unknown,
            Box::new(String::from("database is locked")),
        )
        .into()
    }

    /// anyhow's and eyre's `chain()` walk `source()` and downcast each link by type: the
    /// last attempt's error is found as a `diesel_occ::Error`, not hidden in a `Box`.
    #[test]
    fn the_source_of_exhaustion_is_the_last_error_itself() {
        let exhausted = RetriesExhausted::new(3, false, locked());
        let source = exhausted.source().expect("the last error is the source");
        let last = source
            .downcast_ref::<Error>()
            .unwrap_or_else(|| panic!("the source is not a diesel_occ::Error: {source:?}"));
        assert!(last.is_transient(), "{last:?}");

        let error = Error::from(exhausted);
        let first: &(dyn StdError + 'static) = &error;
        let chain: Vec<_> = std::iter::successors(Some(first), |e| (*e).source()).collect();
        let ours: Vec<&Error> = chain.iter().filter_map(|e| e.downcast_ref()).collect();
        assert_eq!(
            ours.len(),
            2,
            "the exhaustion and the last error: {chain:?}"
        );
        assert!(matches!(ours[0], Error::RetriesExhausted(_)), "{ours:?}");
        assert!(ours[1].is_transient(), "{ours:?}");
        assert!(
            chain
                .last()
                .unwrap()
                .downcast_ref::<diesel::result::Error>()
                .is_some(),
            "the chain goes on to Diesel's error: {chain:?}"
        );
    }
}
