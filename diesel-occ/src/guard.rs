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
//! | PostgreSQL | plpgsql `BEFORE UPDATE` | `OLD + 1` | `gen_random_uuid()` (PostgreSQL 13+) |
//! | MySQL / MariaDB | `BEFORE UPDATE` | `OLD + 1` | 16 bytes from `UUID()` (`BINARY(16)`) |
//! | SQLite | `AFTER UPDATE ... WHEN NEW.tok IS OLD.tok` | `OLD + 1` | `randomblob(16)` |
//!
//! Timestamp tokens are guarded on PostgreSQL (now in UTC at microseconds, or the old
//! value plus one microsecond if that is later); MySQL and SQLite return
//! [`UnsupportedGuard`] for them.
//!
//! The checked operations always change the token, so the trigger never touches their
//! writes. This is the one place diesel-occ writes SQL text: Diesel has no builder for
//! triggers.
//!
//! ```
//! # include!("doctest_setup.rs");
//! use diesel::connection::SimpleConnection;
//! use diesel::prelude::*;
//! use diesel_occ::guard::{BypassGuard, GuardBackend};
//! use diesel_occ::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut conn = connection();
//! let guard = BypassGuard::of::<Stock>();
//! conn.batch_execute(&guard.install_sql(GuardBackend::Sqlite))?;
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

use std::fmt;

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::uuid_token::UuidToken;
use crate::versioned::Versioned;

/// The backend whose dialect the trigger DDL is written in.
///
/// ```
/// use diesel_occ::guard::GuardBackend;
///
/// assert_eq!(GuardBackend::Postgres.to_string(), "PostgreSQL");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuardBackend {
    /// PostgreSQL: a plpgsql function and a `BEFORE UPDATE` trigger.
    Postgres,
    /// MySQL or MariaDB: a `BEFORE UPDATE` trigger.
    Mysql,
    /// SQLite: an `AFTER UPDATE` trigger that rewrites the token.
    Sqlite,
}

/// How the trigger advances the token; [`BypassGuard::of`] takes it from the entity's
/// token type through [`GuardToken`].
///
/// ```
/// use diesel_occ::guard::{GuardToken, GuardTokenKind};
///
/// assert_eq!(<i64 as GuardToken>::KIND, GuardTokenKind::Integer);
/// assert_eq!(<diesel_occ::UuidToken as GuardToken>::KIND, GuardTokenKind::Uuid);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuardTokenKind {
    /// An integer counter: the old value plus one.
    Integer,
    /// A UUID: a fresh random one (native `uuid` on PostgreSQL, 16 bytes on MySQL and
    /// SQLite, as [`UuidToken`] stores it).
    Uuid,
    /// A timestamp: now in UTC at microseconds, or one microsecond after the old value
    /// if that is later (PostgreSQL only).
    Timestamp,
}

/// A token type whose trigger-side advance [`BypassGuard`] knows: see
/// [`GuardTokenKind`] for an example.
pub trait GuardToken {
    /// How a trigger advances it.
    const KIND: GuardTokenKind;
}

macro_rules! guard_token {
    ($kind:ident: $($ty:ty),*) => {$(
        impl GuardToken for $ty {
            const KIND: GuardTokenKind = GuardTokenKind::$kind;
        }
    )*};
}

guard_token!(Integer: i16, i32, i64);
guard_token!(Uuid: uuid::Uuid, UuidToken);
guard_token!(Timestamp: NaiveDateTime, DateTime<Utc>);

/// The trigger that guards one table's token column against writers that bypass
/// diesel-occ: see the [module documentation](self) for a complete example.
///
/// ```
/// # include!("doctest_setup.rs");
/// use diesel_occ::guard::{BypassGuard, GuardBackend};
///
/// # fn main() {
/// let guard = BypassGuard::of::<Stock>();
/// assert_eq!(guard.trigger_name(), "occ_guard_stock_version");
/// assert!(guard.install_sql(GuardBackend::Postgres).contains("BEFORE UPDATE ON \"stock\""));
/// assert_eq!(guard.uninstall_sql(GuardBackend::Sqlite), "DROP TRIGGER IF EXISTS \"occ_guard_stock_version\";\n");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BypassGuard {
    table: String,
    token_column: String,
    key_columns: Vec<String>,
    kind: GuardTokenKind,
}

/// A guard that the chosen backend cannot express.
///
/// ```
/// use diesel_occ::guard::{BypassGuard, GuardBackend, GuardTokenKind};
///
/// let guard = BypassGuard::new("events", "updated_at", &["id"], GuardTokenKind::Timestamp);
/// let error = guard.try_install_sql(GuardBackend::Mysql).unwrap_err();
/// assert_eq!(error.to_string(), "the bypass guard does not support Timestamp tokens on Mysql");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the bypass guard does not support {kind:?} tokens on {backend:?}")]
pub struct UnsupportedGuard {
    /// The backend asked for.
    pub backend: GuardBackend,
    /// The token kind asked for.
    pub kind: GuardTokenKind,
}

impl BypassGuard {
    /// The guard of a `Versioned` entity's table and token column.
    pub fn of<T>() -> Self
    where
        T: Versioned,
        T::Token: GuardToken,
    {
        BypassGuard::new(
            T::TABLE_NAME,
            T::TOKEN_COLUMN,
            T::KEY_COLUMNS,
            <T::Token as GuardToken>::KIND,
        )
    }

    /// The guard of any table: its name, token column, key columns and token kind.
    pub fn new(
        table: &str,
        token_column: &str,
        key_columns: &[&str],
        kind: GuardTokenKind,
    ) -> Self {
        BypassGuard {
            table: table.to_owned(),
            token_column: token_column.to_owned(),
            key_columns: key_columns.iter().map(|&k| k.to_owned()).collect(),
            kind,
        }
    }

    /// The trigger's name (and on PostgreSQL its function's): `occ_guard_<table>_<token>`.
    pub fn trigger_name(&self) -> String {
        format!("occ_guard_{}_{}", self.table, self.token_column)
    }

    /// The DDL that installs the trigger, for `up.sql` or `batch_execute`.
    ///
    /// ```
    /// use diesel_occ::guard::{BypassGuard, GuardBackend, GuardTokenKind};
    ///
    /// let guard = BypassGuard::new("stock", "version", &["id"], GuardTokenKind::Integer);
    /// assert_eq!(
    ///     guard.install_sql(GuardBackend::Mysql),
    ///     "CREATE TRIGGER `occ_guard_stock_version` BEFORE UPDATE ON `stock`\n    \
    ///      FOR EACH ROW SET NEW.`version` = IF(NEW.`version` <=> OLD.`version`, \
    ///      OLD.`version` + 1, NEW.`version`);\n"
    /// );
    /// ```
    ///
    /// # Panics
    ///
    /// When the backend cannot express this token kind (timestamps outside
    /// PostgreSQL); [`try_install_sql`](Self::try_install_sql) returns the error instead.
    pub fn install_sql(&self, backend: GuardBackend) -> String {
        self.try_install_sql(backend)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// The DDL that installs the trigger, or why this backend cannot express it.
    pub fn try_install_sql(&self, backend: GuardBackend) -> Result<String, UnsupportedGuard> {
        let (table, name, tok) = (
            quote(backend, &self.table),
            quote(backend, &self.trigger_name()),
            quote(backend, &self.token_column),
        );
        let unsupported = UnsupportedGuard {
            backend,
            kind: self.kind,
        };
        Ok(match backend {
            GuardBackend::Postgres => {
                let fresh = match self.kind {
                    GuardTokenKind::Integer => format!("OLD.{tok} + 1"),
                    GuardTokenKind::Uuid => "gen_random_uuid()".to_owned(),
                    GuardTokenKind::Timestamp => format!(
                        "GREATEST(date_trunc('microseconds', clock_timestamp() AT TIME ZONE 'UTC'), \
                         OLD.{tok} + interval '1 microsecond')"
                    ),
                };
                format!(
                    "CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $occ$\n\
                     BEGIN\n\
                     \x20   IF NEW.{tok} IS NOT DISTINCT FROM OLD.{tok} THEN\n\
                     \x20       NEW.{tok} := {fresh};\n\
                     \x20   END IF;\n\
                     \x20   RETURN NEW;\n\
                     END\n\
                     $occ$;\n\
                     CREATE TRIGGER {name} BEFORE UPDATE ON {table}\n\
                     \x20   FOR EACH ROW EXECUTE FUNCTION {name}();\n"
                )
            }
            GuardBackend::Mysql => {
                let fresh = match self.kind {
                    GuardTokenKind::Integer => format!("OLD.{tok} + 1"),
                    GuardTokenKind::Uuid => "UNHEX(REPLACE(UUID(), '-', ''))".to_owned(),
                    GuardTokenKind::Timestamp => return Err(unsupported),
                };
                format!(
                    "CREATE TRIGGER {name} BEFORE UPDATE ON {table}\n\
                     \x20   FOR EACH ROW SET NEW.{tok} = IF(NEW.{tok} <=> OLD.{tok}, {fresh}, NEW.{tok});\n"
                )
            }
            GuardBackend::Sqlite => {
                let fresh = match self.kind {
                    GuardTokenKind::Integer => format!("OLD.{tok} + 1"),
                    GuardTokenKind::Uuid => "randomblob(16)".to_owned(),
                    GuardTokenKind::Timestamp => return Err(unsupported),
                };
                let key = self
                    .key_columns
                    .iter()
                    .map(|k| {
                        let k = quote(backend, k);
                        format!("{k} = NEW.{k}")
                    })
                    .collect::<Vec<_>>()
                    .join(" AND ");
                format!(
                    "CREATE TRIGGER {name} AFTER UPDATE ON {table}\n\
                     \x20   FOR EACH ROW WHEN NEW.{tok} IS OLD.{tok}\n\
                     BEGIN\n\
                     \x20   UPDATE {table} SET {tok} = {fresh} WHERE {key};\n\
                     END;\n"
                )
            }
        })
    }

    /// The DDL that removes the trigger, for `down.sql`.
    pub fn uninstall_sql(&self, backend: GuardBackend) -> String {
        let (table, name) = (
            quote(backend, &self.table),
            quote(backend, &self.trigger_name()),
        );
        match backend {
            GuardBackend::Postgres => format!(
                "DROP TRIGGER IF EXISTS {name} ON {table};\nDROP FUNCTION IF EXISTS {name}();\n"
            ),
            GuardBackend::Mysql | GuardBackend::Sqlite => {
                format!("DROP TRIGGER IF EXISTS {name};\n")
            }
        }
    }
}

impl fmt::Display for GuardBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GuardBackend::Postgres => "PostgreSQL",
            GuardBackend::Mysql => "MySQL",
            GuardBackend::Sqlite => "SQLite",
        })
    }
}

/// An identifier, quoted for the backend (embedded quotes doubled).
fn quote(backend: GuardBackend, ident: &str) -> String {
    match backend {
        GuardBackend::Mysql => format!("`{}`", ident.replace('`', "``")),
        GuardBackend::Postgres | GuardBackend::Sqlite => {
            format!("\"{}\"", ident.replace('"', "\"\""))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_each_backend() {
        let guard = BypassGuard::new("stock", "version", &["id"], GuardTokenKind::Integer);
        let pg = guard.install_sql(GuardBackend::Postgres);
        assert!(pg.contains("IF NEW.\"version\" IS NOT DISTINCT FROM OLD.\"version\""));
        assert!(pg.contains("BEFORE UPDATE ON \"stock\""));
        let mysql = guard.install_sql(GuardBackend::Mysql);
        assert!(mysql.contains(
            "SET NEW.`version` = IF(NEW.`version` <=> OLD.`version`, OLD.`version` + 1, NEW.`version`)"
        ));
        let sqlite = guard.install_sql(GuardBackend::Sqlite);
        assert!(sqlite.contains("WHEN NEW.\"version\" IS OLD.\"version\""));
        assert!(sqlite.contains("WHERE \"id\" = NEW.\"id\""));
        assert_eq!(
            guard.uninstall_sql(GuardBackend::Mysql),
            "DROP TRIGGER IF EXISTS `occ_guard_stock_version`;\n"
        );
    }

    #[test]
    fn timestamps_only_on_postgres() {
        let guard = BypassGuard::new("t", "at", &["id"], GuardTokenKind::Timestamp);
        assert!(guard.try_install_sql(GuardBackend::Postgres).is_ok());
        assert_eq!(
            guard.try_install_sql(GuardBackend::Sqlite),
            Err(UnsupportedGuard {
                backend: GuardBackend::Sqlite,
                kind: GuardTokenKind::Timestamp
            })
        );
    }
}
