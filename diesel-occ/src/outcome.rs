//! What the blocking and async checked writes share: reading the affected row count,
//! turning a zero-row write into a classified conflict, checking a client's token, and
//! reporting all of it (through [`observe`]).

use crate::error::{ConcurrencyConflict, ConflictState, Error, NotFound, Operation};
use crate::observe;
use crate::token::VersionToken;
use crate::versioned::Versioned;

/// What a guarded write's affected-row count means.
pub(crate) fn written<T: Versioned>(entity: &T, affected: usize) -> Result<bool, Error> {
    written_key::<T>(&entity.key(), affected)
}

/// [`written`], for a caller that holds the key rather than the entity.
pub(crate) fn written_key<T: Versioned>(key: &T::Key, affected: usize) -> Result<bool, Error> {
    match affected {
        1 => Ok(true),
        0 => Ok(false),
        affected => Err(Error::KeyNotUnique {
            table: T::sql_table_name(),
            key: T::entity_key(key),
            affected,
        }),
    }
}

/// The conflict met by `operation`, given the token the row holds now (`None`: deleted).
///
/// A row that still holds the expected token was not written for another reason than a
/// concurrent writer: reporting it as stale would send a "client wins" retry or a merge
/// into a loop that can never succeed.
pub(crate) fn conflict<T: Versioned>(
    key: &T::Key,
    operation: Operation,
    expected: &T::Token,
    current: Option<T::Token>,
) -> ConcurrencyConflict {
    let state = match current {
        // A client's token checked against a loaded row never gets here equal.
        Some(current) if current == *expected => ConflictState::Unmatched,
        Some(current) => ConflictState::Stale {
            current: current.to_value(),
        },
        None => ConflictState::Deleted,
    };
    let conflict = ConcurrencyConflict::new(
        T::sql_table_name(),
        T::entity_key(key),
        operation,
        expected.to_value(),
        state,
    );
    observe::conflict(&conflict);
    conflict
}

/// A client-supplied token checked against the row just loaded.
pub(crate) fn check_client_token<T: Versioned>(row: T, expected: &T::Token) -> Result<T, Error> {
    if row.token() == expected {
        Ok(row)
    } else {
        let current = Some(row.token().clone());
        Err(conflict::<T>(&row.key(), Operation::ClientToken, expected, current).into())
    }
}

pub(crate) fn not_found<T: Versioned>(key: &T::Key) -> Error {
    Error::NotFound(NotFound::of::<T>(key))
}

pub(crate) fn trace_written<T: Versioned>(entity: &T, operation: Operation) {
    trace_written_key::<T>(&entity.key(), operation);
}

/// [`trace_written`], for a caller that holds the key rather than the entity.
pub(crate) fn trace_written_key<T: Versioned>(key: &T::Key, operation: Operation) {
    observe::written(T::sql_table_name(), key, operation);
}
