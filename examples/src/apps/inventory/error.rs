//! Why a reservation was refused.

use std::fmt;

use diesel_occ::{Error as OccError, InvalidTokenReason, UuidToken, VersionToken};

/// Why a reservation was refused. Nothing was written in any of these cases.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReserveError {
    /// The quantity is zero or negative.
    NonPositiveQuantity(i32),
    /// The client sent no token.
    TokenRequired,
    /// The client's token is empty, malformed or the nil UUID.
    InvalidToken(InvalidTokenReason),
    /// No such SKU.
    UnknownSku(String),
    /// The client's token is already stale: rejected before the edit.
    StaleToken {
        /// The token the row holds now, for the client to refresh with.
        current: String,
    },
    /// Not enough stock for the quantity.
    InsufficientStock {
        /// Units requested.
        requested: i32,
        /// Units available.
        available: i32,
    },
    /// Another writer changed the row between the check and the save: the predicate
    /// matched no row. Refresh and decide again.
    Conflict {
        /// The token the row holds now.
        current: String,
    },
    /// The row was deleted between the check and the save.
    Deleted,
    /// The database's `CHECK (available >= 0)` refused the write: the final guard.
    StockGuard,
    /// The database failed; the text names only the kind of failure.
    Database(String),
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReserveError::NonPositiveQuantity(q) => {
                write!(f, "quantity must be positive (got {q})")
            }
            ReserveError::TokenRequired => f.write_str("a version token is required"),
            ReserveError::InvalidToken(reason) => write!(f, "invalid version token: {reason}"),
            ReserveError::UnknownSku(sku) => write!(f, "unknown SKU {sku}"),
            ReserveError::StaleToken { .. } => {
                f.write_str("the submitted version is stale: refresh before trying again")
            }
            ReserveError::InsufficientStock {
                requested,
                available,
            } => {
                write!(
                    f,
                    "not enough stock ({requested} requested, {available} available)"
                )
            }
            ReserveError::Conflict { .. } => {
                f.write_str("stock changed while saving: refresh before trying again")
            }
            ReserveError::Deleted => f.write_str("the SKU was deleted while saving"),
            ReserveError::StockGuard => {
                f.write_str("the database refused a negative stock (CHECK available >= 0)")
            }
            ReserveError::Database(kind) => write!(f, "database error: {kind}"),
        }
    }
}

impl std::error::Error for ReserveError {}

impl ReserveError {
    /// Maps a library error met while reading or writing `sku`.
    pub(super) fn from_occ(error: OccError, sku: &str) -> ReserveError {
        match error {
            OccError::NotFound(_) => ReserveError::UnknownSku(sku.to_owned()),
            OccError::InvalidToken(invalid) => ReserveError::InvalidToken(invalid.reason),
            OccError::Conflict(conflict) => match conflict.current::<UuidToken>() {
                None => ReserveError::Deleted,
                Some(current) if conflict.operation() == diesel_occ::Operation::ClientToken => {
                    ReserveError::StaleToken {
                        current: current.encode(),
                    }
                }
                Some(current) => ReserveError::Conflict {
                    current: current.encode(),
                },
            },
            OccError::Database(error) if is_stock_guard(error.diesel_error()) => {
                ReserveError::StockGuard
            }
            OccError::Database(error) => ReserveError::Database(error.kind().to_owned()),
            other => ReserveError::Database(other.to_string()),
        }
    }
}

/// True when `error` is the `inventory_available_nonnegative` CHECK refusing a write.
///
/// PostgreSQL, MySQL 8 and SQLite report a check violation; MariaDB reports its own
/// error 4025 that Diesel does not classify, so its message is matched on the
/// constraint's name (the message is never shown to anyone).
fn is_stock_guard(error: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    match error {
        Error::DatabaseError(DatabaseErrorKind::CheckViolation, _) => true,
        Error::DatabaseError(_, info) => info.message().contains("inventory_available_nonnegative"),
        _ => false,
    }
}
