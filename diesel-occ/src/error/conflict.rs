//! [`ConcurrencyConflict`]: what a checked write met, and the key, operation and state
//! that describe it.

use std::fmt;

use crate::token::{TokenValue, VersionToken};

/// The primary key of one row, as column names and rendered values: `(id=7)`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EntityKey {
    columns: &'static [&'static str],
    values: Vec<String>,
}

impl EntityKey {
    /// A key from its column names and the `Debug` rendering of each value.
    pub fn new(columns: &'static [&'static str], values: Vec<String>) -> Self {
        EntityKey { columns, values }
    }

    /// The key columns, in declaration order.
    pub fn columns(&self) -> &'static [&'static str] {
        self.columns
    }

    /// The rendered key values, one per column.
    pub fn values(&self) -> &[String] {
        &self.values
    }
}

impl fmt::Display for EntityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, (column, value)) in self.columns.iter().zip(&self.values).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{column}={value}")?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for EntityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Which checked operation met the conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// `save_checked`: an UPDATE guarded by the original token.
    Update,
    /// `delete_checked`: a DELETE guarded by the original token.
    Delete,
    /// `find_checked`: a client-supplied token compared before any write.
    ClientToken,
    /// `force_increment`: an UPDATE of the token alone, guarded by the original token.
    ForceIncrement,
    /// `soft_delete_checked`: an UPDATE of a deleted marker and the token, guarded by
    /// the original token.
    SoftDelete,
    /// `insert_checked`: an INSERT, which never meets a conflict (a taken key is an
    /// [`Error::UniqueViolation`](crate::Error::UniqueViolation)); it names the write in
    /// events.
    Insert,
    /// `upsert_checked`: the row exists and holds another token than the one the caller
    /// expected, or the caller expected no row. In that case the conflict's expected
    /// token is the one the insert would have stored.
    Upsert,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Update => "update",
            Operation::Delete => "delete",
            Operation::ClientToken => "client token check",
            Operation::ForceIncrement => "force increment",
            Operation::SoftDelete => "soft delete",
            Operation::Insert => "insert",
            Operation::Upsert => "upsert",
        })
    }
}

/// What the database holds now, as seen right after the conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConflictState {
    /// The row exists with another token: somebody else wrote it.
    Stale {
        /// The token the row holds now.
        current: TokenValue,
    },
    /// The row is gone.
    Deleted,
    /// The row still holds the expected token, yet the write matched no row: something
    /// other than a concurrent writer refused it, such as a row-level security policy
    /// or a trigger that skips the write. Re-reading and retrying cannot help, so the
    /// retry helpers do not retry it; [`ConcurrencyConflict::current`] is `None`.
    Unmatched,
}

/// The row changed or vanished since it was read; nothing was written.
///
/// The entity that met it is exactly as it was before the call (its token is not
/// advanced), so the caller can inspect it, merge, re-read or give up.
///
/// ```
/// use diesel_occ::{ConcurrencyConflict, ConflictState, EntityKey, Operation, VersionToken};
///
/// let conflict = ConcurrencyConflict::new(
///     "stock",
///     EntityKey::new(&["id"], vec!["1".into()]),
///     Operation::Update,
///     3_i32.to_value(),
///     ConflictState::Stale { current: 4_i32.to_value() },
/// );
/// assert_eq!(conflict.current::<i32>(), Some(4));
/// assert_eq!(
///     conflict.to_string(),
///     "concurrency conflict on stock (id=1) during update: expected token 3, the row now holds token 4"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConcurrencyConflict {
    table: &'static str,
    key: EntityKey,
    operation: Operation,
    expected: TokenValue,
    state: ConflictState,
}

impl ConcurrencyConflict {
    /// Builds a conflict; checked operations do this for you.
    pub fn new(
        table: &'static str,
        key: EntityKey,
        operation: Operation,
        expected: TokenValue,
        state: ConflictState,
    ) -> Self {
        ConcurrencyConflict {
            table,
            key,
            operation,
            expected,
            state,
        }
    }

    /// The table of the row.
    pub fn table(&self) -> &'static str {
        self.table
    }

    /// The key of the row.
    pub fn key(&self) -> &EntityKey {
        &self.key
    }

    /// The operation that met the conflict.
    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// What the database holds now.
    pub fn state(&self) -> &ConflictState {
        &self.state
    }

    /// True when the row was deleted.
    pub fn is_deleted(&self) -> bool {
        matches!(self.state, ConflictState::Deleted)
    }

    /// The token the caller expected, as an untyped value.
    pub fn expected_value(&self) -> &TokenValue {
        &self.expected
    }

    /// The token the caller expected, typed; `None` if `T` is not the entity's token type.
    pub fn expected<T: VersionToken>(&self) -> Option<T> {
        T::from_value(&self.expected)
    }

    /// The token the row holds now; `None` if it was deleted, if the write was
    /// [unmatched](ConflictState::Unmatched), or if `T` is the wrong type.
    pub fn current<T: VersionToken>(&self) -> Option<T> {
        match &self.state {
            ConflictState::Stale { current } => T::from_value(current),
            ConflictState::Deleted | ConflictState::Unmatched => None,
        }
    }

    /// True when re-reading the row and trying again can succeed: a write's conflict
    /// with a stale or deleted row. A stale client token and an
    /// [unmatched](ConflictState::Unmatched) write are not retryable.
    pub fn is_retryable(&self) -> bool {
        self.operation != Operation::ClientToken && self.state != ConflictState::Unmatched
    }
}

impl fmt::Display for ConcurrencyConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "concurrency conflict on {} {} during {}: expected token {}, ",
            self.table, self.key, self.operation, self.expected
        )?;
        match &self.state {
            ConflictState::Stale { current } => write!(f, "the row now holds token {current}"),
            ConflictState::Deleted => f.write_str("the row was deleted"),
            ConflictState::Unmatched => f.write_str(
                "the row holds that token but the write matched no row \
                 (a row-level security policy or a trigger may have refused it)",
            ),
        }
    }
}

/// A load by key found no row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no row in {table} with key {key}")]
pub struct NotFound {
    /// The table searched.
    pub table: &'static str,
    /// The key searched for.
    pub key: EntityKey,
}

impl NotFound {
    /// No row of `T` with this key: what `find` returns, for code that learns it
    /// otherwise (a closure handed `None` for a row that does not exist).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::{Error, NotFound};
    ///
    /// # fn main() {
    /// let missing = Error::from(NotFound::of::<Stock>(&7));
    /// assert!(missing.is_not_found());
    /// assert_eq!(missing.to_string(), "no row in stock with key (id=7)");
    /// # }
    /// ```
    pub fn of<T: crate::Versioned>(key: &T::Key) -> NotFound {
        NotFound {
            table: T::sql_table_name(),
            key: EntityKey::new(T::KEY_COLUMNS, T::key_values(key)),
        }
    }
}
