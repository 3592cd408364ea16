//! The trigger DDL a [`BypassGuard`] renders, per backend and token kind.

use super::names::*;
use super::*;

impl BypassGuard {
    /// The guard of a `Versioned` entity's table and token column, by their SQL names:
    /// the table, its schema and its primary key as Diesel's `table!` declares them
    /// (see `SqlTable`), the token column's `#[sql_name]`.
    pub fn of<T>() -> Self
    where
        T: crate::versioned::VersionedParts,
        T::Table: SqlTable,
        T::TokenColumn: diesel::Column,
    {
        let token_column = <T::TokenColumn as diesel::Column>::NAME;
        let kind = <T::Token as crate::VersionToken>::KIND;
        match <T::Table as SqlTable>::sql_names() {
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
    /// use diesel_occ::bypass_guard::BypassGuard;
    /// use diesel_occ::{Dialect, TokenKind};
    ///
    /// let guard = BypassGuard::new("odd\"name", "v", &["id"], TokenKind::Integer);
    /// assert!(guard.install_sql(Dialect::Sqlite).unwrap().contains("ON \"odd\"\"name\""));
    /// ```
    pub fn new(table: &str, token_column: &str, key_columns: &[&str], kind: TokenKind) -> Self {
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
    /// use diesel_occ::bypass_guard::BypassGuard;
    /// use diesel_occ::{Dialect, TokenKind};
    ///
    /// let guard = BypassGuard::new("items", "version", &["id"], TokenKind::Integer)
    ///     .in_schema("shop");
    /// assert!(guard.install_sql(Dialect::Mysql).unwrap().contains("ON `shop`.`items`"));
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
    /// use diesel_occ::bypass_guard::BypassGuard;
    /// use diesel_occ::{Dialect, TokenKind};
    ///
    /// let guard = BypassGuard::new("stock", "version", &["id"], TokenKind::Integer);
    /// assert_eq!(
    ///     guard.install_sql(Dialect::Mysql).unwrap(),
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
    pub fn install_sql(&self, backend: Dialect) -> Result<String, GuardError> {
        self.check(backend)?;
        let tok = quote(backend, &self.token_column);
        let unsupported = GuardError::Unsupported {
            backend,
            kind: self.kind,
        };
        if self.kind == TokenKind::Timestamp {
            return match backend {
                Dialect::Postgres => Ok(self.postgres_ddl(&postgres_timestamp_body(&tok))),
                Dialect::Mysql | Dialect::Sqlite => Err(unsupported),
            };
        }
        let fresh = match (self.kind, backend) {
            (TokenKind::SmallInt, _) => wrapping_increment_sql(&format!("OLD.{tok}"), 32767),
            (TokenKind::Integer, _) => wrapping_increment_sql(&format!("OLD.{tok}"), 2_147_483_647),
            (TokenKind::BigInt, _) => {
                wrapping_increment_sql(&format!("OLD.{tok}"), 9_223_372_036_854_775_807)
            }
            (TokenKind::Uuid, Dialect::Postgres) => "gen_random_uuid()".to_owned(),
            // A `UuidToken` column is `uuid` or `bytea` on PostgreSQL: see below.
            (TokenKind::UuidBytes, Dialect::Postgres) => "gen_random_uuid()".to_owned(),
            (TokenKind::Uuid | TokenKind::UuidBytes, Dialect::Mysql) => {
                "UNHEX(REPLACE(UUID(), '-', ''))".to_owned()
            }
            (TokenKind::Uuid | TokenKind::UuidBytes, Dialect::Sqlite) => {
                "randomblob(16)".to_owned()
            }
            (TokenKind::Timestamp | TokenKind::Columns | TokenKind::Other, _) => {
                return Err(unsupported);
            }
        };
        Ok(match backend {
            Dialect::Postgres => {
                let assign = if self.kind == TokenKind::UuidBytes {
                    // plpgsql plans a statement when it first runs it, so the branch
                    // for the other column type is never type-checked.
                    format!(
                        "IF pg_typeof(NEW.{tok}) = 'uuid'::regtype THEN\n\
                         \x20           NEW.{tok} := {fresh};\n\
                         \x20       ELSE\n\
                         \x20           NEW.{tok} := uuid_send({fresh});\n\
                         \x20       END IF;"
                    )
                } else {
                    format!("NEW.{tok} := {fresh};")
                };
                self.postgres_ddl(&format!(
                    "\nBEGIN\n\
                     \x20   IF NEW.{tok} IS NOT DISTINCT FROM OLD.{tok} THEN\n\
                     \x20       {assign}\n\
                     \x20   END IF;\n\
                     \x20   RETURN NEW;\n\
                     END\n"
                ))
            }
            Dialect::Mysql => {
                let table = self.qualified(backend, &self.table);
                let name = self.qualified(backend, &self.trigger_name());
                format!(
                    "CREATE TRIGGER {name} BEFORE UPDATE ON {table}\n\
                     \x20   FOR EACH ROW SET NEW.{tok} = IF(NEW.{tok} <=> OLD.{tok}, {fresh}, NEW.{tok});\n"
                )
            }
            Dialect::Sqlite => {
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

    /// PostgreSQL's trigger function with `body` and the trigger that runs it.
    fn postgres_ddl(&self, body: &str) -> String {
        let backend = Dialect::Postgres;
        let table = self.qualified(backend, &self.table);
        let function = self.qualified(backend, &self.trigger_name());
        let name = quote(backend, &self.trigger_name());
        let tag = dollar_tag(body);
        format!(
            "CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS \
             {tag}{body}{tag};\n\
             CREATE TRIGGER {name} BEFORE UPDATE ON {table}\n\
             \x20   FOR EACH ROW EXECUTE FUNCTION {function}();\n"
        )
    }

    /// The DDL that removes the trigger (and on PostgreSQL its function), for
    /// `down.sql`.
    ///
    /// # Errors
    ///
    /// [`GuardError`] when the backend cannot hold one of the names.
    pub fn uninstall_sql(&self, backend: Dialect) -> Result<String, GuardError> {
        self.check(backend)?;
        let name = self.qualified(backend, &self.trigger_name());
        Ok(match backend {
            Dialect::Postgres => format!(
                "DROP TRIGGER IF EXISTS {} ON {};\nDROP FUNCTION IF EXISTS {name}();\n",
                quote(backend, &self.trigger_name()),
                self.qualified(backend, &self.table),
            ),
            Dialect::Mysql | Dialect::Sqlite => {
                format!("DROP TRIGGER IF EXISTS {name};\n")
            }
        })
    }

    /// Refuses names the backend cannot hold, before any text is rendered.
    fn check(&self, backend: Dialect) -> Result<(), GuardError> {
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
        if backend == Dialect::Sqlite && self.key_columns.is_empty() {
            return Err(GuardError::NoKeyColumns { backend });
        }
        Ok(())
    }

    /// `"schema"."name"`, or `"name"` without a schema.
    fn qualified(&self, backend: Dialect, name: &str) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", quote(backend, schema), quote(backend, name)),
            None => quote(backend, name),
        }
    }
}

/// The body of PostgreSQL's trigger function for a timestamp token `tok` (quoted).
///
/// A write that leaves the token where it was, or moves it back (a writer that sets it
/// to its "now" while the token runs ahead of the clock), gets the clock, or the old
/// token plus one unit of the column if that is later, so the token only moves forward
/// and never returns to a value a stale entity may hold:
///
/// - The clock is taken as the column's type needs it: the instant for `timestamptz`,
///   the clock time in UTC for `timestamp` (what the library writes there), so the
///   session's `TimeZone` never shifts it.
/// - Assigning to `NEW` rounds to the column's precision (`timestamp(0)` keeps whole
///   seconds), so one microsecond after the old token may come back equal to it. The
///   loop tries steps of 1 µs, 10 µs, ..., 1 s, and the first that survives the
///   rounding is exactly one unit of the column: the precision is the column's own at
///   the time of the write, with no catalog lookup and nothing to redo after an
///   `ALTER COLUMN ... TYPE`.
fn postgres_timestamp_body(tok: &str) -> String {
    format!(
        "\nDECLARE\n\
         \x20   step interval := interval '1 microsecond';\n\
         BEGIN\n\
         \x20   IF NEW.{tok} IS NOT DISTINCT FROM OLD.{tok} OR NEW.{tok} <= OLD.{tok} THEN\n\
         \x20       IF pg_typeof(NEW.{tok}) = 'timestamp with time zone'::regtype THEN\n\
         \x20           NEW.{tok} := clock_timestamp();\n\
         \x20       ELSE\n\
         \x20           NEW.{tok} := clock_timestamp() AT TIME ZONE 'UTC';\n\
         \x20       END IF;\n\
         \x20       WHILE NOT NEW.{tok} > OLD.{tok} AND step <= interval '1 second' LOOP\n\
         \x20           NEW.{tok} := OLD.{tok} + step;\n\
         \x20           step := step * 10;\n\
         \x20       END LOOP;\n\
         \x20   END IF;\n\
         \x20   RETURN NEW;\n\
         END\n"
    )
}
