//! [`InvalidToken`]: a token that cannot be used, and why.

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
    /// The entity has no version column: its writes check the values of its
    /// `#[occ(check)]` columns as read, so there is no token to give a client (no ETag)
    /// or take back from one.
    #[error("an entity without a version column has no token for a client")]
    Versionless,
}
