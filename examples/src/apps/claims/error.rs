//! Why a claim or a completion failed.

use std::fmt;

use diesel_occ::Error as OccError;

use super::Status;

/// Why a claim or a completion failed. Nothing was written.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClaimError {
    /// No such item.
    UnknownItem(i32),
    /// The item is done, or leased to someone else until its lease expires.
    NotClaimable {
        /// The item's status.
        status: Status,
    },
    /// The worker's fencing token is stale: its lease expired and the item was claimed
    /// again (or completed) since.
    Fenced {
        /// The worker's fence.
        mine: i64,
        /// The item's fence now.
        current: i64,
        /// Who holds the item now, if anyone.
        holder: Option<String>,
    },
    /// The item was already completed under this lease (a replayed completion).
    AlreadyCompleted,
    /// The item changed under the lease without a new claim: a writer that bypassed
    /// the protocol.
    Changed,
    /// The database failed; the text names only the kind of failure.
    Database(String),
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::UnknownItem(id) => write!(f, "unknown work item {id}"),
            ClaimError::NotClaimable {
                status: Status::Processing,
            } => f.write_str("another worker's lease on the item has not expired"),
            ClaimError::NotClaimable { status } => {
                write!(f, "the item is {} and not claimable", status.as_str())
            }
            ClaimError::Fenced {
                mine,
                current,
                holder,
            } => {
                write!(
                    f,
                    "stale fencing token {mine}: the item is now at fence {current}"
                )?;
                match holder {
                    Some(holder) => write!(f, ", held by {holder}"),
                    None => Ok(()),
                }
            }
            ClaimError::AlreadyCompleted => f.write_str("the item was already completed"),
            ClaimError::Changed => f.write_str("the item changed under the lease"),
            ClaimError::Database(kind) => write!(f, "database error: {kind}"),
        }
    }
}

impl std::error::Error for ClaimError {}

impl From<diesel::result::Error> for ClaimError {
    fn from(error: diesel::result::Error) -> Self {
        database(error)
    }
}

pub(super) fn database(error: impl Into<OccError>) -> ClaimError {
    match error.into() {
        OccError::Database(error) => ClaimError::Database(error.kind().to_owned()),
        OccError::NotFound(_) => ClaimError::Database("row not found".into()),
        other => ClaimError::Database(other.to_string()),
    }
}
