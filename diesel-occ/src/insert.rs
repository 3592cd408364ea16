//! What the checked inserts and upserts of both flavours share: [`Upserted`], the
//! outcome of an upsert, how the tokens of an upsert are drawn and told apart, and the
//! upsert's two statements.

use diesel::associations::HasTable;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::FilterDsl;
use diesel::{Insertable, Table};

use crate::error::{ConcurrencyConflict, ConflictState, Error, Operation};
use crate::statement::{CachedUpdate, InsertIfAbsent};
use crate::token::{InvalidToken, VersionToken};
use crate::versioned::{KeyGuarded, TokenIs, Versioned, VersionedParts, key_guarded};

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

/// The insert of an upsert that expects no row, on PostgreSQL and SQLite.
pub(crate) type InsertIfAbsentOf<T> = InsertIfAbsent<
    InsertStatement<
        <T as crate::Versioned>::Table,
        <T as Insertable<<T as crate::Versioned>::Table>>::Values,
    >,
    <T as VersionedParts>::TokenColumn,
>;

/// The insert of an upsert that expects no row: `INSERT ... ON CONFLICT DO NOTHING
/// RETURNING token`.
pub(crate) fn insert_if_absent<T>(row: T) -> InsertIfAbsentOf<T>
where
    T: VersionedParts + Insertable<T::Table>,
    T::Table: Table + Default,
{
    let cached = row.insert_text_cached();
    InsertIfAbsent::new(
        diesel::insert_into(T::Table::default()).values(row),
        T::KEY_COLUMNS,
        cached,
    )
}

/// The update of an upsert that expects a token: every column a checked save writes,
/// on the row with the key if it holds `expected`.
pub(crate) type UpsertUpdate<T> = CachedUpdate<KeyGuarded<T>, <T as VersionedParts>::Changes>;

/// The update of an upsert that expects `expected` (its text varies with the entity's
/// skipped `None` fields: cached as the entity's save is).
pub(crate) fn upsert_update<T>(row: &T, expected: &T::Token, fresh: &T::Token) -> UpsertUpdate<T>
where
    T: VersionedParts,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
{
    CachedUpdate::new(key_guarded::<T>(row.key(), expected), row.changes(fresh))
        .cached_if(row.changes_text_cached())
}
