//! [`UniqueViolation`]: a checked insert whose key (or another unique value) is taken.

use std::fmt;

use super::EntityKey;

/// A checked insert ([`insert_checked`](crate::InsertDsl::insert_checked),
/// [`insert_checked_from`](crate::InsertDsl::insert_checked_from)) or upsert
/// ([`upsert_checked`](crate::InsertDsl::upsert_checked)) met a unique constraint: a row
/// with its key, or with another value a unique index covers, exists. Nothing was
/// written. Never retried: inserting again meets the same row.
///
/// It is an outcome to match on ("insert, or carry on if it exists"), so it leaves a
/// transaction of the caller's usable on every backend: on PostgreSQL, where a failed
/// statement aborts the transaction, the checked inserts and upserts run in a savepoint
/// when a Diesel transaction is open; MySQL, MariaDB and SQLite roll back only the
/// failed statement.
///
/// `Display` names the table and, when the insert had one, the key; the constraint's
/// name (which only PostgreSQL reports) is available through
/// [`constraint`](Self::constraint).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
/// use diesel_occ::Error;
///
/// # fn main() {
/// let mut conn = connection();
/// let mut again = Stock { id: 1, available: 3, deleted: false, version: 0 };
/// match again.insert_checked(&mut conn) {
///     Err(Error::UniqueViolation(taken)) => {
///         assert_eq!(taken.table(), "stock");
///         assert_eq!(taken.to_string(), "stock already holds a row with key (id=1) or another of its unique values");
///     }
///     other => panic!("expected a unique violation, got {other:?}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UniqueViolation {
    table: &'static str,
    key: Option<EntityKey>,
    constraint: Option<String>,
}

impl UniqueViolation {
    pub(crate) fn new(
        table: &'static str,
        key: Option<EntityKey>,
        constraint: Option<String>,
    ) -> Self {
        UniqueViolation {
            table,
            key,
            constraint,
        }
    }

    /// The table inserted into.
    pub fn table(&self) -> &'static str {
        self.table
    }

    /// The key of the row the insert tried to add, when it had one (an insert from an
    /// `Insertable` struct does not say which of its fields are the key).
    pub fn key(&self) -> Option<&EntityKey> {
        self.key.as_ref()
    }

    /// The violated constraint's name, when the database reports it (PostgreSQL).
    pub fn constraint(&self) -> Option<&str> {
        self.constraint.as_deref()
    }
}

impl fmt::Display for UniqueViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(
                f,
                "{} already holds a row with key {key} or another of its unique values",
                self.table
            ),
            None => write!(
                f,
                "{} already holds a row with one of its unique values",
                self.table
            ),
        }
    }
}

/// A checked insert's or upsert's error: a unique violation becomes
/// [`UniqueViolation`], anything else the database error it is.
pub(crate) fn unique_error(
    error: diesel::result::Error,
    table: &'static str,
    key: Option<EntityKey>,
) -> super::Error {
    use diesel::result::{DatabaseErrorKind, Error as E};
    match error {
        E::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            let constraint = info.constraint_name().map(str::to_owned);
            UniqueViolation::new(table, key, constraint).into()
        }
        other => other.into(),
    }
}
