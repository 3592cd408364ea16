//! What the sync and async checked operations share: reading the affected row count,
//! turning a zero-row write into a classified conflict, checking a client's token, and
//! reporting all of it (through [`observe`]).

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};

use crate::dialect::Dialect;
use crate::error::{ConcurrencyConflict, ConflictState, EntityKey, Error, NotFound, Operation};
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
            table: T::TABLE_NAME,
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
        Some(current) if current == *expected && operation != Operation::ClientToken => {
            ConflictState::Unmatched
        }
        Some(current) => ConflictState::Stale {
            current: current.to_value(),
        },
        None => ConflictState::Deleted,
    };
    let conflict = ConcurrencyConflict::new(
        T::TABLE_NAME,
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
    Error::NotFound(NotFound {
        table: T::TABLE_NAME,
        key: EntityKey::new(T::KEY_COLUMNS, T::key_values(key)),
    })
}

pub(crate) fn trace_written<T: Versioned>(entity: &T, operation: Operation) {
    trace_written_key::<T>(&entity.key(), operation);
}

/// [`trace_written`], for a caller that holds the key rather than the entity.
pub(crate) fn trace_written_key<T: Versioned>(key: &T::Key, operation: Operation) {
    observe::written(T::TABLE_NAME, key, operation);
}

/// The classifying read of a zero-row write: `SELECT token FROM t WHERE <key>`, with a
/// shared row lock on PostgreSQL (`FOR SHARE`) and MySQL (`LOCK IN SHARE MODE`) when
/// `lock` is set.
///
/// Inside a REPEATABLE READ transaction a plain SELECT reads the transaction's snapshot,
/// while the UPDATE that matched nothing read the latest committed row: the snapshot's
/// token can be the very token the caller expected. A locking read returns the latest
/// committed row on MySQL, and on PostgreSQL fails with a serialization failure when
/// the row changed after the snapshot (transient: a retry restarts the transaction).
/// SQLite has no row locks and needs none: its writer sees the latest row.
///
/// It appears in the bounds of the checked operations
/// (`CurrentToken<T::TokenQuery>: LoadQuery<..>`), which code generic over the
/// connection or the entity repeats; it is never built outside this crate.
#[derive(Debug, Clone, Copy)]
pub struct CurrentToken<Q> {
    query: Q,
    lock: bool,
}

impl<Q> CurrentToken<Q> {
    pub(crate) fn new(query: Q, lock: bool) -> Self {
        CurrentToken { query, lock }
    }
}

/// The locking clause `CurrentToken` appends on `DB`: empty where there is none.
fn locking_clause<DB: 'static>() -> &'static str {
    match Dialect::of::<DB>() {
        Some(Dialect::Postgres) => " FOR SHARE",
        // MariaDB does not accept MySQL 8's `FOR SHARE`; both accept this.
        Some(Dialect::Mysql) => " LOCK IN SHARE MODE",
        Some(Dialect::Sqlite) | None => "",
    }
}

impl<Q: Query> Query for CurrentToken<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, DB> QueryFragment<DB> for CurrentToken<Q>
where
    DB: Backend + 'static,
    Q: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.query.walk_ast(pass.reborrow())?;
        if self.lock {
            pass.push_sql(locking_clause::<DB>());
        }
        Ok(())
    }
}

impl<Q> QueryId for CurrentToken<Q> {
    // The SQL depends on `lock`: cached by its text, not by type.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q, Conn> RunQueryDsl<Conn> for CurrentToken<Q> {}
