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

/// The tokens of an upsert: the initial one it inserts with when it expects no row, at
/// the token's declared precision (so it is what the column stores), and the fresh one
/// it updates with when it expects a token.
pub(crate) struct UpsertTokens<Tok> {
    pub(crate) initial: Tok,
    pub(crate) fresh: Tok,
}

impl<Tok: VersionToken> UpsertTokens<Tok> {
    pub(crate) fn draw(expected: Option<&Tok>, precision: u8) -> Result<Self, InvalidToken> {
        let initial = Tok::initial_at(precision);
        let fresh = match expected {
            Some(expected) => {
                expected.validate()?;
                expected.try_next_token_at(precision)?
            }
            // Not written: a row that exists is left alone.
            None => initial.clone(),
        };
        Ok(UpsertTokens { initial, fresh })
    }

    /// The token the caller's expectation is compared with: the expected one, or, when
    /// no row was expected, the initial one (any row is newer than that).
    pub(crate) fn against<'a>(&'a self, expected: Option<&'a Tok>) -> &'a Tok {
        expected.unwrap_or(&self.initial)
    }
}

/// What an upsert that wrote did, from what it expected: the insert of a free key when
/// it expected no row, else the update of a row holding the expected token.
pub(crate) fn upserted<Tok>(expected_a_row: bool, token: Tok) -> Upserted<Tok> {
    if expected_a_row {
        Upserted::Updated(token)
    } else {
        Upserted::Inserted(token)
    }
}

/// The conflict of an upsert that left the row alone, a client-token conflict:
/// re-running the same call meets the same row. The classification of that zero-row
/// write against `expected`, or against the initial token when the caller expected no
/// row; then any row is newer than what the caller knows, even one that holds the
/// initial token, which the classification calls unmatched: it is stale.
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
                Operation::ClientToken,
                current.clone(),
                ConflictState::Stale { current },
            )
            .into()
        }
        (_, classified) => classified,
    }
}
