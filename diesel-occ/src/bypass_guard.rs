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
//! Timestamp tokens are guarded on PostgreSQL (now in UTC at microseconds, or the old
//! value plus one microsecond if that is later); MySQL and SQLite return
//! [`GuardError::Unsupported`] for them.
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
//! # include!("doctest_setup.rs");
//! use diesel::connection::SimpleConnection;
//! use diesel::prelude::*;
//! use diesel_occ::bypass_guard::{BypassGuard, GuardBackend};
//! use diesel_occ::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut conn = connection();
//! let guard = BypassGuard::of::<Stock>();
//! conn.batch_execute(&guard.install_sql(GuardBackend::Sqlite)?)?;
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

use crate::token::uuid_token::UuidToken;

/// The backend whose dialect the trigger DDL is written in.
///
/// ```
/// use diesel_occ::bypass_guard::GuardBackend;
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
/// use diesel_occ::bypass_guard::{GuardToken, GuardTokenKind};
///
/// assert_eq!(<i64 as GuardToken>::KIND, GuardTokenKind::I64);
/// assert_eq!(<diesel_occ::UuidToken as GuardToken>::KIND, GuardTokenKind::Uuid);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuardTokenKind {
    /// An `i16` counter (`SMALLINT`): the old value plus one, `i16::MAX` wraps to
    /// `i16::MIN`.
    I16,
    /// An `i32` counter (`INTEGER`): the old value plus one, `i32::MAX` wraps to
    /// `i32::MIN`.
    I32,
    /// An `i64` counter (`BIGINT`): the old value plus one, `i64::MAX` wraps to
    /// `i64::MIN`.
    I64,
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
    ($($ty:ty => $kind:ident),* $(,)?) => {$(
        impl GuardToken for $ty {
            const KIND: GuardTokenKind = GuardTokenKind::$kind;
        }
    )*};
}

guard_token!(
    i16 => I16,
    i32 => I32,
    i64 => I64,
    uuid::Uuid => Uuid,
    UuidToken => Uuid,
    NaiveDateTime => Timestamp,
    DateTime<Utc> => Timestamp,
);

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
/// # include!("doctest_setup.rs");
/// use diesel_occ::bypass_guard::{BypassGuard, GuardBackend};
///
/// # fn main() -> Result<(), diesel_occ::bypass_guard::GuardError> {
/// let guard = BypassGuard::of::<Stock>();
/// assert_eq!(guard.trigger_name(), "occ_guard_stock_version_8e3dfac2f3d11183");
/// assert!(guard.install_sql(GuardBackend::Postgres)?.contains("BEFORE UPDATE ON \"stock\""));
/// assert_eq!(
///     guard.uninstall_sql(GuardBackend::Sqlite)?,
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
    kind: GuardTokenKind,
    /// Set when Diesel's rendering of the table could not be read; every DDL method
    /// returns it rather than guess a name.
    unreadable: bool,
}

/// Why [`BypassGuard`] cannot render its DDL for a backend. Nothing was executed.
///
/// ```
/// use diesel_occ::bypass_guard::{BypassGuard, GuardBackend, GuardError, GuardTokenKind};
///
/// let guard = BypassGuard::new("events", "updated_at", &["id"], GuardTokenKind::Timestamp);
/// let error = guard.install_sql(GuardBackend::Mysql).unwrap_err();
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
        backend: GuardBackend,
        /// The token kind asked for.
        kind: GuardTokenKind,
    },
    /// A name the DDL needs cannot be an identifier on this backend. The message
    /// names which one and why, never the name itself.
    #[error("the bypass guard's {part} name {problem} on {backend}")]
    InvalidName {
        /// The backend asked for.
        backend: GuardBackend,
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
        backend: GuardBackend,
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

/// Where [`BypassGuard::of`] reads a table's SQL names: Diesel's rendering of the
/// table and of its primary key, so `#[sql_name]` and `schema.table` in `table!`
/// are honoured. Implemented for every table `diesel::table!` declares, when at least
/// one of the features `postgres`, `mysql` or `sqlite` is enabled.
///
/// ```
/// # include!("doctest_setup.rs");
/// use diesel_occ::bypass_guard::GuardTable;
///
/// # fn main() {
/// fn guardable<T: GuardTable>() {}
/// guardable::<stock::table>();
/// # }
/// ```
pub trait GuardTable {
    /// The schema (if `table!` names one), the table's SQL name and its primary key
    /// columns' SQL names; `None` if Diesel rendered them in an unexpected form.
    #[doc(hidden)]
    fn sql_names() -> Option<(Option<String>, String, Vec<String>)>;
}

/// The backend whose query builder renders tables for [`GuardTable`]: any will do,
/// since only the quoted identifiers are read back.
#[cfg(feature = "postgres")]
mod render {
    pub(super) type Backend = diesel::pg::Pg;
    pub(super) const QUOTE: char = '"';
}
#[cfg(all(feature = "mysql", not(feature = "postgres")))]
mod render {
    pub(super) type Backend = diesel::mysql::Mysql;
    pub(super) const QUOTE: char = '`';
}
#[cfg(all(feature = "sqlite", not(any(feature = "postgres", feature = "mysql"))))]
mod render {
    pub(super) type Backend = diesel::sqlite::Sqlite;
    pub(super) const QUOTE: char = '`';
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
impl<T> GuardTable for T
where
    T: diesel::Table + Default,
    T::FromClause: diesel::query_builder::QueryFragment<render::Backend>,
    T::PrimaryKey: diesel::query_builder::QueryFragment<render::Backend>,
{
    fn sql_names() -> Option<(Option<String>, String, Vec<String>)> {
        use diesel::query_builder::{QueryBuilder, QueryFragment};

        fn rendered<F: QueryFragment<render::Backend>>(fragment: &F) -> Option<String> {
            let mut builder =
                <<render::Backend as diesel::backend::Backend>::QueryBuilder>::default();
            fragment
                .to_sql(&mut builder, &render::Backend::default())
                .ok()?;
            Some(builder.finish())
        }

        let table = T::default();
        let mut from = parse_identifier_paths(
            &rendered(&diesel::QuerySource::from_clause(&table))?,
            render::QUOTE,
        )?;
        let (schema, name) = match (from.pop()?, from.is_empty()) {
            (mut path, true) if path.len() == 1 => (None, path.pop()?),
            (mut path, true) if path.len() == 2 => {
                let name = path.pop()?;
                (path.pop(), name)
            }
            _ => return None,
        };
        let keys = parse_identifier_paths(&rendered(&table.primary_key())?, render::QUOTE)?
            .into_iter()
            .map(|mut path| path.pop())
            .collect::<Option<Vec<_>>>()?;
        Some((schema, name, keys))
    }
}

/// Reads `"a"."b", "c"."d"` (identifiers quoted with `quote`, embedded quotes doubled)
/// back into `[[a, b], [c, d]]`; `None` for anything else.
#[cfg_attr(
    not(any(feature = "postgres", feature = "mysql", feature = "sqlite")),
    allow(dead_code)
)]
fn parse_identifier_paths(sql: &str, quote: char) -> Option<Vec<Vec<String>>> {
    let mut paths = Vec::new();
    let mut path = Vec::new();
    let mut chars = sql.chars().peekable();
    loop {
        if chars.next()? != quote {
            return None;
        }
        let mut ident = String::new();
        loop {
            let c = chars.next()?;
            if c != quote {
                ident.push(c);
            } else if chars.peek() == Some(&quote) {
                chars.next();
                ident.push(quote);
            } else {
                break;
            }
        }
        path.push(ident);
        match chars.next() {
            None => {
                paths.push(path);
                return Some(paths);
            }
            Some('.') => {}
            Some(',') => {
                while chars.peek() == Some(&' ') {
                    chars.next();
                }
                paths.push(std::mem::take(&mut path));
            }
            Some(_) => return None,
        }
    }
}

impl BypassGuard {
    /// The guard of a `Versioned` entity's table and token column, by their SQL names:
    /// the table, its schema and its primary key as Diesel's `table!` declares them
    /// (see [`GuardTable`]), the token column's `#[sql_name]`.
    pub fn of<T>() -> Self
    where
        T: crate::statement::VersionedParts,
        T::Token: GuardToken,
        T::Table: GuardTable,
        T::TokenColumn: diesel::Column,
    {
        let token_column = <T::TokenColumn as diesel::Column>::NAME;
        let kind = <T::Token as GuardToken>::KIND;
        match <T::Table as GuardTable>::sql_names() {
            Some((schema, table, keys)) => {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let guard = BypassGuard::new(&table, token_column, &keys, kind);
                match schema {
                    Some(schema) => guard.in_schema(&schema),
                    None => guard,
                }
            }
            None => BypassGuard {
                unreadable: true,
                ..BypassGuard::new(T::TABLE_NAME, token_column, T::KEY_COLUMNS, kind)
            },
        }
    }

    /// The guard of any table: its SQL name, token column, key columns and token kind.
    /// Names are taken literally (`"a.b"` is one table named `a.b`; see
    /// [`in_schema`](Self::in_schema)) and quoted when rendered, so any name is safe;
    /// one the backend cannot hold is refused by [`install_sql`](Self::install_sql).
    ///
    /// ```
    /// use diesel_occ::bypass_guard::{BypassGuard, GuardBackend, GuardTokenKind};
    ///
    /// let guard = BypassGuard::new("odd\"name", "v", &["id"], GuardTokenKind::I32);
    /// assert!(guard.install_sql(GuardBackend::Sqlite).unwrap().contains("ON \"odd\"\"name\""));
    /// ```
    pub fn new(
        table: &str,
        token_column: &str,
        key_columns: &[&str],
        kind: GuardTokenKind,
    ) -> Self {
        BypassGuard {
            schema: None,
            table: table.to_owned(),
            token_column: token_column.to_owned(),
            key_columns: key_columns.iter().map(|&k| k.to_owned()).collect(),
            kind,
            unreadable: false,
        }
    }

    /// The same guard on a table in `schema` (a PostgreSQL schema, a MySQL database,
    /// an attached SQLite database). The trigger, and on PostgreSQL its function, are
    /// created in that schema.
    ///
    /// ```
    /// use diesel_occ::bypass_guard::{BypassGuard, GuardBackend, GuardTokenKind};
    ///
    /// let guard = BypassGuard::new("items", "version", &["id"], GuardTokenKind::I32)
    ///     .in_schema("shop");
    /// assert!(guard.install_sql(GuardBackend::Mysql).unwrap().contains("ON `shop`.`items`"));
    /// ```
    pub fn in_schema(mut self, schema: &str) -> Self {
        self.schema = Some(schema.to_owned());
        self
    }

    /// The trigger's name (and on PostgreSQL its function's):
    /// `occ_guard_<table>_<column>_<hash>`, at most 63 bytes. The readable part keeps
    /// ASCII letters and digits (lower-cased) and turns every other character into
    /// `_`; the hash is of the exact SQL names, so the name depends on nothing else and
    /// stays the same across releases.
    pub fn trigger_name(&self) -> String {
        const PREFIX: &str = "occ_guard_";
        const HASH_HEX: usize = 16;
        const READABLE: usize = 63 - PREFIX.len() - 1 - HASH_HEX;
        let readable: String = self
            .table
            .chars()
            .chain(['_'])
            .chain(self.token_column.chars())
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(READABLE)
            .collect();
        format!(
            "{PREFIX}{readable}_{:016x}",
            name_hash(&self.table, &self.token_column)
        )
    }

    /// The DDL that installs the trigger, for `up.sql` or `batch_execute`. Plain
    /// `CREATE` statements: if an object of that name exists, running it fails
    /// instead of replacing it.
    ///
    /// ```
    /// use diesel_occ::bypass_guard::{BypassGuard, GuardBackend, GuardTokenKind};
    ///
    /// let guard = BypassGuard::new("stock", "version", &["id"], GuardTokenKind::I32);
    /// assert_eq!(
    ///     guard.install_sql(GuardBackend::Mysql).unwrap(),
    ///     "CREATE TRIGGER `occ_guard_stock_version_8e3dfac2f3d11183` BEFORE UPDATE ON `stock`\n    \
    ///      FOR EACH ROW SET NEW.`version` = IF(NEW.`version` <=> OLD.`version`, \
    ///      CASE WHEN OLD.`version` = 2147483647 THEN (-2147483647 - 1) \
    ///      ELSE OLD.`version` + 1 END, NEW.`version`);\n"
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// [`GuardError`] when the backend cannot express this token kind (timestamps
    /// outside PostgreSQL) or cannot hold one of the names.
    pub fn install_sql(&self, backend: GuardBackend) -> Result<String, GuardError> {
        self.check(backend)?;
        let name = quote(backend, &self.trigger_name());
        let tok = quote(backend, &self.token_column);
        let unsupported = GuardError::Unsupported {
            backend,
            kind: self.kind,
        };
        let fresh = match (self.kind, backend) {
            (GuardTokenKind::I16, _) => wrapping_increment_sql(&format!("OLD.{tok}"), 32767),
            (GuardTokenKind::I32, _) => {
                wrapping_increment_sql(&format!("OLD.{tok}"), 2_147_483_647)
            }
            (GuardTokenKind::I64, _) => {
                wrapping_increment_sql(&format!("OLD.{tok}"), 9_223_372_036_854_775_807)
            }
            (GuardTokenKind::Uuid, GuardBackend::Postgres) => "gen_random_uuid()".to_owned(),
            (GuardTokenKind::Uuid, GuardBackend::Mysql) => {
                "UNHEX(REPLACE(UUID(), '-', ''))".to_owned()
            }
            (GuardTokenKind::Uuid, GuardBackend::Sqlite) => "randomblob(16)".to_owned(),
            (GuardTokenKind::Timestamp, GuardBackend::Postgres) => format!(
                "GREATEST(date_trunc('microseconds', clock_timestamp() AT TIME ZONE 'UTC'), \
                 OLD.{tok} + interval '1 microsecond')"
            ),
            (GuardTokenKind::Timestamp, _) => return Err(unsupported),
        };
        Ok(match backend {
            GuardBackend::Postgres => {
                let table = self.qualified(backend, &self.table);
                let function = self.qualified(backend, &self.trigger_name());
                let body = format!(
                    "\nBEGIN\n\
                     \x20   IF NEW.{tok} IS NOT DISTINCT FROM OLD.{tok} THEN\n\
                     \x20       NEW.{tok} := {fresh};\n\
                     \x20   END IF;\n\
                     \x20   RETURN NEW;\n\
                     END\n"
                );
                let tag = dollar_tag(&body);
                format!(
                    "CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS \
                     {tag}{body}{tag};\n\
                     CREATE TRIGGER {name} BEFORE UPDATE ON {table}\n\
                     \x20   FOR EACH ROW EXECUTE FUNCTION {function}();\n"
                )
            }
            GuardBackend::Mysql => {
                let table = self.qualified(backend, &self.table);
                let name = self.qualified(backend, &self.trigger_name());
                format!(
                    "CREATE TRIGGER {name} BEFORE UPDATE ON {table}\n\
                     \x20   FOR EACH ROW SET NEW.{tok} = IF(NEW.{tok} <=> OLD.{tok}, {fresh}, NEW.{tok});\n"
                )
            }
            GuardBackend::Sqlite => {
                // SQLite names the trigger's schema once, on the trigger; the table in
                // `ON` and in the body must not be qualified.
                let table = quote(backend, &self.table);
                let name = self.qualified(backend, &self.trigger_name());
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

    /// The DDL that removes the trigger (and on PostgreSQL its function), for
    /// `down.sql`.
    ///
    /// # Errors
    ///
    /// [`GuardError`] when the backend cannot hold one of the names.
    pub fn uninstall_sql(&self, backend: GuardBackend) -> Result<String, GuardError> {
        self.check(backend)?;
        let name = self.qualified(backend, &self.trigger_name());
        Ok(match backend {
            GuardBackend::Postgres => format!(
                "DROP TRIGGER IF EXISTS {} ON {};\nDROP FUNCTION IF EXISTS {name}();\n",
                quote(backend, &self.trigger_name()),
                self.qualified(backend, &self.table),
            ),
            GuardBackend::Mysql | GuardBackend::Sqlite => {
                format!("DROP TRIGGER IF EXISTS {name};\n")
            }
        })
    }

    /// Refuses names the backend cannot hold, before any text is rendered.
    fn check(&self, backend: GuardBackend) -> Result<(), GuardError> {
        if self.unreadable {
            return Err(GuardError::UnreadableTable);
        }
        let names = self
            .schema
            .iter()
            .map(|s| (NamePart::Schema, s))
            .chain([
                (NamePart::Table, &self.table),
                (NamePart::TokenColumn, &self.token_column),
            ])
            .chain(self.key_columns.iter().map(|k| (NamePart::KeyColumn, k)));
        for (part, name) in names {
            if let Some(problem) = name_problem(backend, name) {
                return Err(GuardError::InvalidName {
                    backend,
                    part,
                    problem,
                });
            }
        }
        if backend == GuardBackend::Sqlite && self.key_columns.is_empty() {
            return Err(GuardError::NoKeyColumns { backend });
        }
        Ok(())
    }

    /// `"schema"."name"`, or `"name"` without a schema.
    fn qualified(&self, backend: GuardBackend, name: &str) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", quote(backend, schema), quote(backend, name)),
            None => quote(backend, name),
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

impl fmt::Display for NamePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NamePart::Schema => "schema",
            NamePart::Table => "table",
            NamePart::TokenColumn => "token column",
            NamePart::KeyColumn => "key column",
        })
    }
}

impl fmt::Display for NameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameProblem::Empty => "is empty",
            NameProblem::ContainsNul => "contains a NUL character",
            NameProblem::TooLong => {
                "is longer than the backend's identifier limit (PostgreSQL: 63 bytes, \
                 MySQL: 64 characters)"
            }
        })
    }
}

/// What keeps `name` from being an identifier on `backend`, if anything.
fn name_problem(backend: GuardBackend, name: &str) -> Option<NameProblem> {
    let too_long = match backend {
        GuardBackend::Postgres => name.len() > 63,
        GuardBackend::Mysql => name.chars().count() > 64,
        GuardBackend::Sqlite => false,
    };
    if name.is_empty() {
        Some(NameProblem::Empty)
    } else if name.contains('\0') {
        Some(NameProblem::ContainsNul)
    } else if too_long {
        Some(NameProblem::TooLong)
    } else {
        None
    }
}

/// FNV-1a (64 bits) of the length-prefixed SQL names, so that no two different
/// (table, column) pairs share an input: `("order_items", "version")` and
/// `("order", "items_version")` hash differently. Fixed forever: installed triggers
/// are found again by this name.
fn name_hash(table: &str, column: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [table, column] {
        let len = u64::try_from(part.len()).unwrap_or(u64::MAX);
        for &byte in len.to_le_bytes().iter().chain(part.as_bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// A dollar-quote tag that does not occur in `body`, so no name inside the function
/// body can end it early.
fn dollar_tag(body: &str) -> String {
    let mut tag = "$occ$".to_owned();
    let mut n = 0_u64;
    while body.contains(&tag) {
        n = n.wrapping_add(1);
        tag = format!("$occ{n}$");
    }
    tag
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

    const BACKENDS: [GuardBackend; 3] = [
        GuardBackend::Postgres,
        GuardBackend::Mysql,
        GuardBackend::Sqlite,
    ];

    #[test]
    fn renders_each_backend() {
        let guard = BypassGuard::new("stock", "version", &["id"], GuardTokenKind::I32);
        let name = guard.trigger_name();
        let pg = guard.install_sql(GuardBackend::Postgres).unwrap();
        assert!(pg.contains("IF NEW.\"version\" IS NOT DISTINCT FROM OLD.\"version\""));
        assert!(pg.contains("BEFORE UPDATE ON \"stock\""));
        assert!(pg.starts_with(&format!("CREATE FUNCTION \"{name}\"()")));
        let mysql = guard.install_sql(GuardBackend::Mysql).unwrap();
        assert!(mysql.contains(
            "SET NEW.`version` = IF(NEW.`version` <=> OLD.`version`, CASE WHEN OLD.`version` \
             = 2147483647 THEN (-2147483647 - 1) ELSE OLD.`version` + 1 END, NEW.`version`)"
        ));
        let sqlite = guard.install_sql(GuardBackend::Sqlite).unwrap();
        assert!(sqlite.contains("WHEN NEW.\"version\" IS OLD.\"version\""));
        assert!(sqlite.contains("WHERE \"id\" = NEW.\"id\""));
        assert_eq!(
            guard.uninstall_sql(GuardBackend::Mysql).unwrap(),
            format!("DROP TRIGGER IF EXISTS `{name}`;\n")
        );
        for backend in BACKENDS {
            let ddl = guard.install_sql(backend).unwrap();
            assert!(
                !ddl.contains("OR REPLACE"),
                "a collision must fail, not rebind"
            );
        }
    }

    #[test]
    fn timestamps_only_on_postgres() {
        let guard = BypassGuard::new("t", "at", &["id"], GuardTokenKind::Timestamp);
        assert!(guard.install_sql(GuardBackend::Postgres).is_ok());
        assert_eq!(
            guard.install_sql(GuardBackend::Sqlite),
            Err(GuardError::Unsupported {
                backend: GuardBackend::Sqlite,
                kind: GuardTokenKind::Timestamp
            })
        );
    }

    #[test]
    fn names_that_read_alike_differ_by_their_hash() {
        let a = BypassGuard::new("order_items", "version", &["id"], GuardTokenKind::I32);
        let b = BypassGuard::new("order", "items_version", &["id"], GuardTokenKind::I32);
        assert!(
            a.trigger_name()
                .starts_with("occ_guard_order_items_version_")
        );
        assert!(
            b.trigger_name()
                .starts_with("occ_guard_order_items_version_")
        );
        assert_ne!(a.trigger_name(), b.trigger_name());
        // The same names, whatever the key or the kind: a second install collides.
        let c = BypassGuard::new("order_items", "version", &["k"], GuardTokenKind::I64);
        assert_eq!(a.trigger_name(), c.trigger_name());
    }

    #[test]
    fn the_name_is_stable() {
        // Pinned: installed triggers are found again (and uninstalled) by this name.
        let guard = BypassGuard::new("stock", "version", &["id"], GuardTokenKind::I32);
        assert_eq!(
            guard.trigger_name(),
            "occ_guard_stock_version_8e3dfac2f3d11183"
        );
    }

    #[test]
    fn names_fit_in_63_bytes() {
        let long = "é".repeat(100);
        let guard = BypassGuard::new(&long, &long, &["id"], GuardTokenKind::I32);
        let name = guard.trigger_name();
        assert_eq!(name.len(), 63, "{name}");
        assert!(name.is_ascii());
        let short = BypassGuard::new("t", "v", &["id"], GuardTokenKind::I32).trigger_name();
        assert!(short.len() <= 63);
    }

    #[test]
    fn a_dollar_quote_in_a_name_cannot_end_the_function_body() {
        let guard = BypassGuard::new(
            "t$occ$",
            "v$occ$; DROP TABLE x; --",
            &["id"],
            GuardTokenKind::I32,
        );
        let pg = guard.install_sql(GuardBackend::Postgres).unwrap();
        assert!(pg.contains("AS $occ1$\nBEGIN"), "{pg}");
        assert_eq!(pg.matches("$occ1$").count(), 2, "{pg}");
    }

    #[test]
    fn quotes_are_doubled() {
        let guard = BypassGuard::new("a\"b`c", "v", &["i\"d"], GuardTokenKind::I32);
        let pg = guard.install_sql(GuardBackend::Postgres).unwrap();
        assert!(pg.contains("ON \"a\"\"b`c\""));
        let mysql = guard.install_sql(GuardBackend::Mysql).unwrap();
        assert!(mysql.contains("ON `a\"b``c`"));
        let sqlite = guard.install_sql(GuardBackend::Sqlite).unwrap();
        assert!(sqlite.contains("\"i\"\"d\" = NEW.\"i\"\"d\""));
    }

    #[test]
    fn names_no_backend_can_hold_are_refused() {
        let nul = BypassGuard::new("t\0; DROP TABLE x", "v", &["id"], GuardTokenKind::I32);
        for backend in BACKENDS {
            assert_eq!(
                nul.install_sql(backend),
                Err(GuardError::InvalidName {
                    backend,
                    part: NamePart::Table,
                    problem: NameProblem::ContainsNul
                })
            );
            assert!(nul.uninstall_sql(backend).is_err());
        }
        let empty = BypassGuard::new("t", "", &["id"], GuardTokenKind::I32);
        assert!(matches!(
            empty.install_sql(GuardBackend::Sqlite),
            Err(GuardError::InvalidName {
                part: NamePart::TokenColumn,
                problem: NameProblem::Empty,
                ..
            })
        ));
        let keyless = BypassGuard::new("t", "v", &[], GuardTokenKind::I32);
        assert!(matches!(
            keyless.install_sql(GuardBackend::Sqlite),
            Err(GuardError::NoKeyColumns { .. })
        ));
        assert!(keyless.install_sql(GuardBackend::Postgres).is_ok());
    }

    #[test]
    fn identifier_limits_per_backend() {
        let at_limit = BypassGuard::new(&"t".repeat(63), "v", &["id"], GuardTokenKind::I32);
        assert!(at_limit.install_sql(GuardBackend::Postgres).is_ok());
        let over = BypassGuard::new(&"t".repeat(64), "v", &["id"], GuardTokenKind::I32);
        assert!(matches!(
            over.install_sql(GuardBackend::Postgres),
            Err(GuardError::InvalidName {
                part: NamePart::Table,
                problem: NameProblem::TooLong,
                ..
            })
        ));
        assert!(over.install_sql(GuardBackend::Mysql).is_ok());
        assert!(over.install_sql(GuardBackend::Sqlite).is_ok());
        // PostgreSQL counts bytes: 32 two-byte characters are 64 bytes.
        let wide = BypassGuard::new(&"é".repeat(32), "v", &["id"], GuardTokenKind::I32);
        assert!(wide.install_sql(GuardBackend::Postgres).is_err());
        assert!(wide.install_sql(GuardBackend::Mysql).is_ok());
        let schema =
            BypassGuard::new("t", "v", &["id"], GuardTokenKind::I32).in_schema(&"s".repeat(65));
        assert!(matches!(
            schema.install_sql(GuardBackend::Mysql),
            Err(GuardError::InvalidName {
                part: NamePart::Schema,
                ..
            })
        ));
    }

    #[test]
    fn errors_do_not_echo_the_name() {
        let guard = BypassGuard::new("secret\0name", "v", &["id"], GuardTokenKind::I32);
        let error = guard.install_sql(GuardBackend::Postgres).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the bypass guard's table name contains a NUL character on PostgreSQL"
        );
        assert!(!format!("{error:?}").contains("secret"));
    }

    #[test]
    fn integer_tokens_wrap_at_their_max() {
        for (kind, max) in [
            (GuardTokenKind::I16, "32767 THEN (-32767 - 1)"),
            (GuardTokenKind::I32, "2147483647 THEN (-2147483647 - 1)"),
            (
                GuardTokenKind::I64,
                "9223372036854775807 THEN (-9223372036854775807 - 1)",
            ),
        ] {
            let guard = BypassGuard::new("t", "v", &["id"], kind);
            for backend in BACKENDS {
                let ddl = guard.install_sql(backend).unwrap();
                assert!(ddl.contains(max), "{backend}: {ddl}");
            }
        }
    }

    #[test]
    fn schemas_qualify_per_backend() {
        let guard = BypassGuard::new("items", "v", &["id"], GuardTokenKind::I32).in_schema("shop");
        let name = guard.trigger_name();
        let pg = guard.install_sql(GuardBackend::Postgres).unwrap();
        assert!(pg.contains(&format!("CREATE FUNCTION \"shop\".\"{name}\"()")));
        assert!(pg.contains(&format!(
            "CREATE TRIGGER \"{name}\" BEFORE UPDATE ON \"shop\".\"items\""
        )));
        let sqlite = guard.install_sql(GuardBackend::Sqlite).unwrap();
        assert!(sqlite.contains(&format!(
            "CREATE TRIGGER \"shop\".\"{name}\" AFTER UPDATE ON \"items\""
        )));
        assert!(sqlite.contains("UPDATE \"items\" SET"));
        assert_eq!(
            guard.uninstall_sql(GuardBackend::Postgres).unwrap(),
            format!(
                "DROP TRIGGER IF EXISTS \"{name}\" ON \"shop\".\"items\";\n\
                 DROP FUNCTION IF EXISTS \"shop\".\"{name}\"();\n"
            )
        );
    }

    #[test]
    fn rendered_identifier_paths_are_read_back() {
        assert_eq!(
            parse_identifier_paths("\"s\".\"t\"", '"'),
            Some(vec![vec!["s".to_owned(), "t".to_owned()]])
        );
        assert_eq!(
            parse_identifier_paths("`t`.`a``b`, `t`.`c`", '`'),
            Some(vec![
                vec!["t".to_owned(), "a`b".to_owned()],
                vec!["t".to_owned(), "c".to_owned()]
            ])
        );
        assert_eq!(parse_identifier_paths("t.c", '"'), None);
        assert_eq!(parse_identifier_paths("\"t\" AS x", '"'), None);
        assert_eq!(parse_identifier_paths("\"open", '"'), None);
    }

    #[test]
    fn of_reads_the_sql_names_from_diesel() {
        diesel::table! {
            #[sql_name = "Stock Items"]
            shop.stock_items (id) {
                id -> Integer,
                #[sql_name = "row version"]
                version -> Integer,
            }
        }
        let (schema, table, keys) = <stock_items::table as GuardTable>::sql_names().unwrap();
        assert_eq!(schema.as_deref(), Some("shop"));
        assert_eq!(table, "Stock Items");
        assert_eq!(keys, ["id"]);
        assert_eq!(
            <stock_items::version as diesel::Column>::NAME,
            "row version"
        );
    }
}
