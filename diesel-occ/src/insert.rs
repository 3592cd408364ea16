//! What the checked inserts and upserts of both flavours share: [`Upserted`], the
//! outcome of an upsert, and how the tokens of an upsert are drawn and told apart.

use crate::error::{ConcurrencyConflict, ConflictState, Error, Operation};
use crate::token::{InvalidToken, VersionToken};
use crate::versioned::Versioned;

/// What a checked upsert did: inserted the row, or updated it because it held the
/// expected token. Either way, the token the row holds now (the client's next ETag).
/// A row holding another token is an [`Error::Conflict`](crate::Error::Conflict).
///
/// ```
/// use diesel_occ::Upserted;
///
/// let outcome = Upserted::Inserted(1);
/// assert!(outcome.is_inserted());
/// assert_eq!(*outcome.token(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Upserted<Tok> {
    /// No row had the key: the row was inserted with the initial token.
    Inserted(Tok),
    /// The row held the expected token: it was updated with a fresh one.
    Updated(Tok),
}

impl<Tok> Upserted<Tok> {
    /// The token the row holds now.
    pub fn token(&self) -> &Tok {
        match self {
            Upserted::Inserted(token) | Upserted::Updated(token) => token,
        }
    }

    /// Takes the token the row holds now.
    pub fn into_token(self) -> Tok {
        match self {
            Upserted::Inserted(token) | Upserted::Updated(token) => token,
        }
    }

    /// True when the row was inserted.
    pub fn is_inserted(&self) -> bool {
        matches!(self, Upserted::Inserted(_))
    }
}

/// The tokens of an upsert: the initial one it inserts with, and the fresh one it
/// updates with, which must differ so the token read back says which happened (an
/// integer counter expected at 0 would otherwise update to 1, the initial token: it
/// skips to 2; a timestamp could meet the initial one at the same instant).
pub(crate) struct UpsertTokens<Tok> {
    pub(crate) initial: Tok,
    pub(crate) fresh: Tok,
}

impl<Tok: VersionToken> UpsertTokens<Tok> {
    pub(crate) fn draw(expected: Option<&Tok>, precision: u8) -> Result<Self, InvalidToken> {
        let initial = Tok::initial();
        let fresh = match expected {
            Some(expected) => {
                expected.validate()?;
                let fresh = expected.try_next_token_at(precision)?;
                if fresh == initial {
                    fresh.try_next_token_at(precision)?
                } else {
                    fresh
                }
            }
            // Not written: the statement does nothing when the key is taken.
            None => initial.clone(),
        };
        Ok(UpsertTokens { initial, fresh })
    }

    /// The outcome, from the token the statement read back (`None`: it left the row
    /// alone).
    pub(crate) fn outcome(&self, returned: Option<Tok>) -> Option<Upserted<Tok>> {
        match returned {
            Some(token) if token == self.initial => Some(Upserted::Inserted(token)),
            Some(token) => Some(Upserted::Updated(token)),
            None => None,
        }
    }
}

/// The conflict of an upsert that left the row alone: the classification of that
/// zero-row write against `expected`, or against the initial token when the caller
/// expected no row. Then any row is newer than what the caller knows, even one that
/// holds the initial token, which the classification calls unmatched: it is stale.
pub(crate) fn upsert_conflict<T: Versioned>(
    expected: Option<&T::Token>,
    classified: Error,
) -> Error {
    match (expected, classified) {
        (None, Error::Conflict(conflict)) if conflict.state() == &ConflictState::Unmatched => {
            let current = conflict.expected_value().clone();
            // Not observed again: the classification counted this conflict.
            ConcurrencyConflict::new(
                conflict.table(),
                conflict.key().clone(),
                Operation::Upsert,
                current.clone(),
                ConflictState::Stale { current },
            )
            .into()
        }
        (_, classified) => classified,
    }
}
