//! Bypass-writer guard: triggers that advance the token on any UPDATE that did not
//! change it, so writes that bypass diesel-occ (raw SQL, bulk updates, other services)
//! still make every in-flight checked save conflict instead of silently overwriting
//! them.
//!
//! [`BypassGuard`] renders the trigger DDL for a migration (`up.sql`) and its removal
//! (`down.sql`), per backend and token kind:
//!
//! | backend | trigger | integer token | UUID token |
//! |---|---|---|---|
//! | PostgreSQL | plpgsql `BEFORE UPDATE` | `OLD + 1`, MAX wraps to MIN | `gen_random_uuid()` (PostgreSQL 13+) |
//! | MySQL / MariaDB | `BEFORE UPDATE` | `OLD + 1`, MAX wraps to MIN | 16 bytes from `UUID()` (`BINARY(16)`) |
//! | SQLite | `AFTER UPDATE ... WHEN NEW.tok IS OLD.tok` | `OLD + 1`, MAX wraps to MIN | `randomblob(16)` |
//!
//! A [`UuidToken`](crate::UuidToken) column may be `uuid` or `bytea` on PostgreSQL: the
//! trigger draws the fresh UUID in the column's type (`uuid_send(...)` for `bytea`).
//!
//! Timestamp tokens are guarded on PostgreSQL: a write that leaves the token where it
//! was or moves it back gets the clock (in UTC for `timestamp`, the instant for
//! `timestamptz`, whatever the session's `TimeZone`), or the old value plus one unit of
//! the column's precision (a whole second on `timestamp(0)`) if that is later, so the
//! token only ever moves forward. MySQL and SQLite return [`GuardError::Unsupported`]
//! for them.
//!
//! **Naming rule:** the trigger (and on PostgreSQL its function) is named
//! `occ_guard_<table>_<column>_<hash>`, where the readable part is cut so the whole name
//! fits in 63 bytes and `<hash>` is a stable 64-bit hash of the exact SQL names of the
//! table and the token column, so two guards get the same name only when they guard
//! the same column of the same table, and installing such a second guard fails.
//!
//! **Wrap rule:** an integer token at its type's MAX (`i16`, `i32` or `i64`) becomes
//! its MIN, exactly as [`VersionToken::next_token`](crate::VersionToken::next_token)
//! does, on every backend.
//!
//! The DDL names the table, its schema and the columns by their SQL names (Diesel's
//! `#[sql_name]` and `schema.table` in `table!`), quotes every identifier for the
//! backend, and refuses with a typed [`GuardError`] a name the backend cannot hold
//! (empty, a NUL character, or longer than PostgreSQL's 63 bytes or MySQL's 64
//! characters). The checked operations always change the token, so the trigger never
//! touches their writes. This is the one place diesel-occ writes SQL text: Diesel has
//! no builder for triggers.
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel::connection::SimpleConnection;
//! use diesel::prelude::*;
//! use diesel_occ::Dialect;
//! use diesel_occ::bypass_guard::BypassGuard;
//! use diesel_occ::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut conn = connection();
//! let guard = BypassGuard::of::<Stock>();
//! conn.batch_execute(&guard.install_sql(Dialect::Sqlite)?)?;
//!
//! let mut mine = Stock::find(&mut conn, 1)?;
//! // Another service writes the row without touching the token...
//! diesel::sql_query("UPDATE stock SET available = 0 WHERE id = 1").execute(&mut conn)?;
//! // ...and the trigger advanced it anyway: the stale save conflicts.
//! mine.available -= 1;
//! assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
//! # Ok(())
//! # }
//! ```

use crate::dialect::Dialect;
use crate::sql_name::SqlTable;
use crate::token::TokenKind;

/// `CASE WHEN <operand> = MAX THEN MIN ELSE <operand> + 1 END` for a signed integer
/// type whose `MAX` is `max`: the SQL twin of the wrapping `next_token`.
///
/// MIN is written `(-MAX - 1)` so that no backend ever parses a literal outside the
/// type (PostgreSQL reads `9223372036854775808` as `numeric`, SQLite as a float).
pub(crate) fn wrapping_increment_sql(operand: &str, max: i64) -> String {
    format!("CASE WHEN {operand} = {max} THEN (-{max} - 1) ELSE {operand} + 1 END")
}

/// The trigger that guards one table's token column against writers that bypass
/// diesel-occ: see the [module documentation](self) for a complete example and the
/// naming rule.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::Dialect;
/// use diesel_occ::bypass_guard::BypassGuard;
///
/// # fn main() -> Result<(), diesel_occ::bypass_guard::GuardError> {
/// let guard = BypassGuard::of::<Stock>();
/// assert_eq!(guard.trigger_name(), "occ_guard_stock_version_8e3dfac2f3d11183");
/// assert!(guard.install_sql(Dialect::Postgres)?.contains("BEFORE UPDATE ON \"stock\""));
/// assert_eq!(
///     guard.uninstall_sql(Dialect::Sqlite)?,
///     "DROP TRIGGER IF EXISTS \"occ_guard_stock_version_8e3dfac2f3d11183\";\n"
/// );
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BypassGuard {
    schema: Option<String>,
    table: String,
    token_column: String,
    key_columns: Vec<String>,
    kind: TokenKind,
    /// Set when Diesel's rendering of the table could not be read; every DDL method
    /// returns it rather than guess a name.
    unreadable: bool,
}

/// Why [`BypassGuard`] cannot render its DDL for a backend. Nothing was executed.
///
/// ```
/// use diesel_occ::bypass_guard::{BypassGuard, GuardError};
/// use diesel_occ::{Dialect, TokenKind};
///
/// let guard = BypassGuard::new("events", "updated_at", &["id"], TokenKind::Timestamp);
/// let error = guard.install_sql(Dialect::Mysql).unwrap_err();
/// assert!(matches!(error, GuardError::Unsupported { .. }));
/// assert_eq!(error.to_string(), "the bypass guard does not support Timestamp tokens on MySQL");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// The backend cannot express this token kind in a trigger (timestamps on MySQL
    /// and SQLite).
    #[error("the bypass guard does not support {kind:?} tokens on {backend}")]
    Unsupported {
        /// The backend asked for.
        backend: Dialect,
        /// The token kind asked for.
        kind: TokenKind,
    },
    /// A name the DDL needs cannot be an identifier on this backend. The message
    /// names which one and why, never the name itself.
    #[error("the bypass guard's {part} name {problem} on {backend}")]
    InvalidName {
        /// The backend asked for.
        backend: Dialect,
        /// Which name.
        part: NamePart,
        /// What is wrong with it.
        problem: NameProblem,
    },
    /// SQLite's trigger finds the updated row by its key, and the guard has no key
    /// column.
    #[error("the bypass guard needs at least one key column on {backend}")]
    NoKeyColumns {
        /// The backend asked for.
        backend: Dialect,
    },
    /// [`BypassGuard::of`] could not read the table's SQL name from Diesel's rendering
    /// of it.
    #[error("the bypass guard could not read the table's SQL name from Diesel")]
    UnreadableTable,
}

/// Which name of a [`BypassGuard`] a [`GuardError::InvalidName`] is about.
///
/// ```
/// use diesel_occ::bypass_guard::NamePart;
///
/// assert_eq!(NamePart::TokenColumn.to_string(), "token column");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NamePart {
    /// The table's schema (PostgreSQL schema, MySQL database, SQLite attached database).
    Schema,
    /// The table.
    Table,
    /// The token column.
    TokenColumn,
    /// One of the key columns.
    KeyColumn,
}

/// What is wrong with a name in a [`GuardError::InvalidName`].
///
/// ```
/// use diesel_occ::bypass_guard::NameProblem;
///
/// assert_eq!(NameProblem::ContainsNul.to_string(), "contains a NUL character");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameProblem {
    /// The name is empty.
    Empty,
    /// The name contains U+0000, which no backend accepts in an identifier.
    ContainsNul,
    /// The name is longer than the backend keeps: PostgreSQL's 63 bytes (it would
    /// silently cut it and name another object) or MySQL's 64 characters.
    TooLong,
}

mod ddl;
mod names;
#[cfg(test)]
mod tests;
