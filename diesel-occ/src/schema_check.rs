//! [`SchemaCheck`]: a start-up check that every versioned entity's table can hold what
//! the entity writes: a token column that keeps its tokens, and a key the database keeps
//! unique.
//!
//! Diesel's `table!` says a column is a `Timestamp`, not how many fractional digits of a
//! second the database keeps, and a token written to a column that rounds it may come
//! back equal to the old one. The check reads what the database says about each token
//! column (`information_schema.columns` on PostgreSQL and MySQL/MariaDB, SQLite's
//! `pragma_table_info`) and reports every column that is missing, of the wrong kind,
//! coarser than the precision the entity declares with
//! `#[occ(version, precision = N)]`, or set to the current time by the database on every
//! UPDATE (MySQL/MariaDB's `ON UPDATE CURRENT_TIMESTAMP`).
//!
//! Nor does `table!` say whether the database keeps its primary key unique. The check
//! reads each table's unique indexes (`pg_index` on PostgreSQL,
//! `information_schema.STATISTICS` on MySQL/MariaDB, SQLite's `pragma_index_list` and
//! `pragma_index_info`, and SQLite's `INTEGER PRIMARY KEY`, the rowid) and reports every
//! entity whose key columns no PRIMARY KEY or UNIQUE index covers exactly.
//!
//! Tables and columns are looked up by the SQL names `table!` declares: a
//! `#[sql_name = "..."]` and a schema (`app.stock`) are honoured.

use std::collections::{BTreeMap, BTreeSet};

use diesel::QueryableByName;
use diesel::backend::Backend;
use diesel::connection::Connection;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::sql_types::{BigInt, Nullable, Text};

pub use crate::error::{SchemaProblem, SchemaProblems, TokenColumnProblem, UnenforcedKey};
pub use crate::sql_name::SqlTable;

use crate::dialect::Dialect;
use crate::error::Error;
use crate::token::{TokenKind, VersionToken};
use crate::versioned::Versioned;
use crate::versioned::VersionedParts;

/// The tables of a set of entities, checked against the database: each token column
/// holds its entity's tokens, and each key is one the database keeps unique.
///
/// Call it once at start-up, after the migrations: [`run`](Self::run) on a blocking
/// connection, `run_async` (feature `async`) on an async one. It returns
/// [`Error::Schema`] listing every problem it finds, each a [`SchemaProblem`]:
///
/// - [`SchemaProblem::TokenColumn`], a token column that cannot hold its entity's
///   tokens: a missing column, a column of another kind (a `VARCHAR` for a timestamp,
///   an `INT` for an `i64`), a timestamp column that keeps fewer fractional digits than
///   the entity's `#[occ(version, precision = N)]` declares, or one the database sets
///   to the current time on every UPDATE (MySQL/MariaDB's `ON UPDATE
///   CURRENT_TIMESTAMP`: a write at a "now" behind a token that ran ahead of the clock
///   puts back a token a stale entity may hold, whose save then wins).
///   Database-generated tokens (`#[occ(version, generated)]`) are not checked.
/// - [`SchemaProblem::UnenforcedKey`], a key the database does not keep unique: no
///   PRIMARY KEY, UNIQUE constraint or unique index of the table is on exactly the
///   entity's key columns (in any order). A unique index on more columns than the key,
///   a partial one (`WHERE ...`), one on an expression or a column prefix
///   (MySQL's `name(10)`), and on PostgreSQL a deferrable or invalid one do not count.
///   The checked writes rely on the key: on MySQL/MariaDB, a checked insert or
///   `upsert_checked` on a key without one inserts a second row with the same key
///   where it should find the key taken, and later checked writes then match several
///   rows; on PostgreSQL and SQLite the upsert's `ON CONFLICT (key)` fails with a
///   database error. The problem's message carries the DDL that adds the index
///   ([`UnenforcedKey::fix`]). Every entity's key is checked, generated token or not;
///   a missing table is reported once, by its token column.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::connection::SimpleConnection;
/// use diesel_occ::schema_check::{SchemaCheck, SchemaProblem};
///
/// diesel::table! {
///     events (id) {
///         id -> Integer,
///         updated_at -> Timestamp,
///     }
/// }
///
/// #[derive(Debug, Queryable, Selectable, diesel_occ::Versioned)]
/// #[diesel(table_name = events)]
/// pub struct Event {
///     pub id: i32,
///     #[occ(version, precision = 6)]
///     pub updated_at: chrono::NaiveDateTime,
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut conn = connection();
/// // Stock's integer token lives in an INTEGER column, its key is the primary key:
/// // nothing to report.
/// SchemaCheck::new().entity::<Stock>().run(&mut conn)?;
///
/// // The events table does not exist here: reported, with every other problem.
/// let error = SchemaCheck::new().entity::<Stock>().entity::<Event>().run(&mut conn).unwrap_err();
/// let problems = error.as_schema_problems().unwrap();
/// assert_eq!(problems.len(), 1);
/// let SchemaProblem::TokenColumn(problem) = &problems[0] else { panic!("{error}") };
/// assert_eq!(problem.table, "events");
/// assert_eq!(problem.column, "updated_at");
/// assert_eq!(problem.found, None);
///
/// // Created without a key the database keeps unique: the message says how to add one.
/// conn.batch_execute("CREATE TABLE events (id INTEGER NOT NULL, updated_at TIMESTAMP NOT NULL)")?;
/// let error = SchemaCheck::new().entity::<Event>().run(&mut conn).unwrap_err();
/// let problems = error.as_schema_problems().unwrap();
/// let SchemaProblem::UnenforcedKey(key) = &problems[0] else { panic!("{error}") };
/// assert_eq!((key.table, key.columns), ("events", &["id"][..]));
/// assert_eq!(key.fix, r#"CREATE UNIQUE INDEX "events_id_key" ON "events" ("id")"#);
///
/// conn.batch_execute(&key.fix)?;
/// SchemaCheck::new().entity::<Event>().run(&mut conn)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct SchemaCheck {
    tokens: Vec<Expected>,
    keys: Vec<ExpectedKey>,
}

/// What one entity needs of its token column.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Expected {
    schema: Option<&'static str>,
    table: &'static str,
    column: &'static str,
    kind: TokenKind,
    precision: u8,
}

/// A key the database must keep unique: the key columns of one or more entities of a
/// table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ExpectedKey {
    schema: Option<&'static str>,
    table: &'static str,
    columns: &'static [&'static str],
}

impl SchemaCheck {
    /// A check of no entity yet.
    pub fn new() -> Self {
        SchemaCheck::default()
    }

    /// Adds an entity: its table, key columns and token column (by the SQL names
    /// `table!` declares), token kind and declared precision. Entities that share a
    /// table and key have their key checked once.
    pub fn entity<T>(mut self) -> Self
    where
        T: VersionedParts,
        T::TokenColumn: diesel::Column,
    {
        let crate::sql_name::TableName { schema, table, .. } = T::sql_table();
        if !T::GENERATED_TOKEN {
            self.tokens.push(Expected {
                schema,
                table,
                column: <T::TokenColumn as diesel::Column>::NAME,
                kind: <T::Token as VersionToken>::KIND,
                precision: <T as Versioned>::TOKEN_PRECISION,
            });
        }
        let key = ExpectedKey {
            schema,
            table,
            columns: T::KEY_COLUMNS,
        };
        if !key.columns.is_empty() && !self.keys.iter().any(|known| known.same_key(&key)) {
            self.keys.push(key);
        }
        self
    }

    /// Reads each token column's type and each table's unique indexes on a blocking
    /// connection and reports every problem at once, as [`Error::Schema`]. One query
    /// per token column and one per table.
    pub fn run<Conn>(&self, conn: &mut Conn) -> Result<(), Error>
    where
        Conn: Connection,
        Conn::Backend: SchemaBackend,
        for<'a> BoxedSqlQuery<'a, Conn::Backend, SqlQuery>:
            LoadQuery<'a, Conn, ColumnRow> + LoadQuery<'a, Conn, KeyIndexRow>,
    {
        let mut columns = Vec::with_capacity(self.tokens.len());
        for query in self.column_queries::<Conn::Backend>() {
            let rows: Vec<ColumnRow> = query.load(conn)?;
            columns.push(rows.into_iter().next());
        }
        let mut keys = Vec::with_capacity(self.keys.len());
        for query in self.key_queries::<Conn::Backend>() {
            keys.push(query.load(conn)?);
        }
        self.judge(<Conn::Backend as SchemaBackend>::DIALECT, columns, keys)
    }

    /// The query of each token column, in order.
    pub(crate) fn column_queries<DB: SchemaBackend>(
        &self,
    ) -> impl Iterator<Item = BoxedSqlQuery<'static, DB, SqlQuery>> + '_ {
        self.tokens
            .iter()
            .map(|expected| DB::column_query(expected.schema, expected.table, expected.column))
    }

    /// The query of each key's table, in order.
    pub(crate) fn key_queries<DB: SchemaBackend>(
        &self,
    ) -> impl Iterator<Item = BoxedSqlQuery<'static, DB, SqlQuery>> + '_ {
        self.keys
            .iter()
            .map(|key| DB::key_query(key.schema, key.table))
    }

    /// Compares what each token column is with what its entity needs, and each table's
    /// unique indexes with its entities' keys. `columns` and `keys` hold the rows of
    /// [`column_queries`](Self::column_queries) and [`key_queries`](Self::key_queries).
    pub(crate) fn judge(
        &self,
        dialect: Dialect,
        columns: Vec<Option<ColumnRow>>,
        keys: Vec<Vec<KeyIndexRow>>,
    ) -> Result<(), Error> {
        let token_problems = self
            .tokens
            .iter()
            .zip(columns)
            .filter_map(|(expected, row)| expected.problem(dialect, row))
            .map(SchemaProblem::from);
        let key_problems = self
            .keys
            .iter()
            .zip(keys)
            .filter_map(|(key, rows)| key.problem(dialect, rows))
            .map(SchemaProblem::from);
        let problems: Vec<SchemaProblem> = token_problems.chain(key_problems).collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Schema(SchemaProblems::new(problems)))
        }
    }
}

/// The column query with its three binds, table, column and schema (the bind impls of
/// `&str` differ per backend).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
macro_rules! column_query {
    ($sql:expr) => {
        fn column_query(
            schema: Option<&'static str>,
            table: &'static str,
            column: &'static str,
        ) -> BoxedSqlQuery<'static, Self, SqlQuery> {
            diesel::sql_query($sql)
                .into_boxed()
                .bind::<Text, _>(table)
                .bind::<Text, _>(column)
                .bind::<Nullable<Text>, _>(schema)
        }
    };
}

/// The key query with its two binds, table and schema.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
macro_rules! key_query {
    ($sql:expr) => {
        fn key_query(
            schema: Option<&'static str>,
            table: &'static str,
        ) -> BoxedSqlQuery<'static, Self, SqlQuery> {
            diesel::sql_query($sql)
                .into_boxed()
                .bind::<Text, _>(table)
                .bind::<Nullable<Text>, _>(schema)
        }
    };
}

impl Expected {
    fn problem(&self, dialect: Dialect, row: Option<ColumnRow>) -> Option<TokenColumnProblem> {
        let needed_precision = (self.kind == TokenKind::Timestamp).then_some(self.precision);
        let problem = |found: Option<String>, found_precision: Option<u8>, set_to_now_on_update| {
            TokenColumnProblem {
                schema: self.schema,
                table: self.table,
                column: self.column,
                found_precision,
                set_to_now_on_update,
                needed: self.kind,
                needed_precision,
                fix: token_column_ddl(
                    dialect,
                    (self.schema, self.table, self.column),
                    self.kind,
                    self.precision.max(found_precision.unwrap_or(0)),
                    found.as_deref(),
                ),
                found,
            }
        };
        let Some(row) = row else {
            return Some(problem(None, None, false));
        };
        let data_type = row.data_type.to_ascii_lowercase();
        let found_precision = row
            .datetime_precision
            .and_then(|digits| u8::try_from(digits).ok());
        let fits = kind_fits(dialect, self.kind, &data_type);
        let set_to_now_on_update = row.set_to_now_on_update != 0;
        // SQLite stores timestamps as text, at any precision.
        let precise_enough = match (needed_precision, dialect) {
            (Some(needed), Dialect::Postgres | Dialect::Mysql) => {
                found_precision.unwrap_or(0) >= needed
            }
            _ => true,
        };
        (!fits || !precise_enough || set_to_now_on_update)
            .then(|| problem(Some(row.data_type), found_precision, set_to_now_on_update))
    }
}

impl ExpectedKey {
    /// The same table and the same set of key columns.
    fn same_key(&self, other: &ExpectedKey) -> bool {
        let set = |columns: &[&'static str]| columns.iter().copied().collect::<BTreeSet<_>>();
        (self.schema, self.table) == (other.schema, other.table)
            && set(self.columns) == set(other.columns)
    }

    /// The problem, if no unique index in `rows` (the table's, from the key query) is
    /// on exactly the key columns. A table the query did not find (no rows) is none:
    /// its token column reports it.
    fn problem(&self, dialect: Dialect, rows: Vec<KeyIndexRow>) -> Option<UnenforcedKey> {
        if rows.is_empty() {
            return None;
        }
        // MySQL/MariaDB and SQLite compare column names without case.
        let name = |column: &str| match dialect {
            Dialect::Postgres => column.to_owned(),
            Dialect::Mysql | Dialect::Sqlite => column.to_ascii_lowercase(),
        };
        let mut has_primary_key = false;
        // Each index's columns; `None` once a part of it is not a plain column.
        let mut indexes: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
        for row in rows {
            let Some(index) = row.index_name else {
                continue;
            };
            has_primary_key |= row.is_primary != 0;
            let columns = indexes
                .entry(index)
                .or_insert_with(|| Some(BTreeSet::new()));
            match (row.column_name, columns.as_mut()) {
                (Some(column), Some(columns)) => {
                    columns.insert(name(&column));
                }
                _ => *columns = None,
            }
        }
        let key: BTreeSet<String> = self.columns.iter().map(|column| name(column)).collect();
        let covered = indexes.values().flatten().any(|columns| *columns == key);
        (!covered).then(|| UnenforcedKey {
            schema: self.schema,
            table: self.table,
            columns: self.columns,
            fix: unique_key_ddl(
                dialect,
                self.schema,
                self.table,
                self.columns,
                has_primary_key,
            ),
        })
    }
}

/// The DDL that makes `columns` of `schema.table` unique: the primary key where the
/// table has none and the database can add one, a unique index otherwise. Names are
/// quoted, as Diesel quotes them.
fn unique_key_ddl(
    dialect: Dialect,
    schema: Option<&str>,
    table: &str,
    columns: &[&str],
    has_primary_key: bool,
) -> String {
    let quote = |name: &str| quote(dialect, name);
    let qualified = |name: &str| qualified(dialect, schema, name);
    let column_list = columns
        .iter()
        .map(|column| quote(column))
        .collect::<Vec<_>>()
        .join(", ");
    // SQLite cannot add a primary key to a table.
    if !has_primary_key && dialect != Dialect::Sqlite {
        return format!(
            "ALTER TABLE {} ADD PRIMARY KEY ({column_list})",
            qualified(table)
        );
    }
    // `t_a_b_key`, as PostgreSQL names a UNIQUE constraint, within the 63 bytes of a
    // PostgreSQL name (MySQL/MariaDB allow 64).
    let mut index = std::iter::once(table)
        .chain(columns.iter().copied())
        .chain(["key"])
        .collect::<Vec<_>>()
        .join("_");
    index.truncate(index.floor_char_boundary(63));
    match dialect {
        // SQLite puts an index in its table's schema, named on the index.
        Dialect::Sqlite => format!(
            "CREATE UNIQUE INDEX {} ON {} ({column_list})",
            qualified(&index),
            quote(table)
        ),
        Dialect::Postgres | Dialect::Mysql => format!(
            "CREATE UNIQUE INDEX {} ON {} ({column_list})",
            quote(&index),
            qualified(table)
        ),
    }
}

/// `name` quoted as Diesel quotes it in `dialect`.
fn quote(dialect: Dialect, name: &str) -> String {
    match dialect {
        Dialect::Mysql => format!("`{}`", name.replace('`', "``")),
        Dialect::Postgres | Dialect::Sqlite => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

/// `schema.name`, quoted.
fn qualified(dialect: Dialect, schema: Option<&str>, name: &str) -> String {
    match schema {
        Some(schema) => format!("{}.{}", quote(dialect, schema), quote(dialect, name)),
        None => quote(dialect, name),
    }
}

/// The DDL that gives `table.column` a column for `kind` at `precision` fractional
/// digits (timestamps), as [`TokenColumnProblem::fix`] describes: the statements that
/// add it and give the existing rows a token when it is missing (`found` is `None`),
/// the statement that changes its type otherwise. `None` for a kind without a column
/// type.
fn token_column_ddl(
    dialect: Dialect,
    (schema, table, column): (Option<&str>, &str, &str),
    kind: TokenKind,
    precision: u8,
    found: Option<&str>,
) -> Option<String> {
    let with_time_zone =
        found.is_some_and(|found| found.to_ascii_lowercase().contains("with time"));
    let column_type = match (dialect, kind) {
        (Dialect::Postgres, TokenKind::SmallInt) => "smallint".to_owned(),
        (Dialect::Postgres, TokenKind::Integer) => "integer".to_owned(),
        (Dialect::Postgres, TokenKind::BigInt) => "bigint".to_owned(),
        (Dialect::Postgres, TokenKind::Uuid | TokenKind::UuidBytes) => "uuid".to_owned(),
        (Dialect::Postgres, TokenKind::Timestamp) if with_time_zone => {
            format!("timestamptz({precision})")
        }
        (Dialect::Postgres, TokenKind::Timestamp) => format!("timestamp({precision})"),
        (Dialect::Mysql, TokenKind::SmallInt) => "SMALLINT".to_owned(),
        (Dialect::Mysql, TokenKind::Integer) => "INT".to_owned(),
        (Dialect::Mysql, TokenKind::BigInt) => "BIGINT".to_owned(),
        (Dialect::Mysql, TokenKind::Uuid | TokenKind::UuidBytes) => "BINARY(16)".to_owned(),
        (Dialect::Mysql, TokenKind::Timestamp) if precision == 0 => "DATETIME".to_owned(),
        (Dialect::Mysql, TokenKind::Timestamp) => format!("DATETIME({precision})"),
        (Dialect::Sqlite, TokenKind::SmallInt | TokenKind::Integer | TokenKind::BigInt) => {
            "INTEGER".to_owned()
        }
        (Dialect::Sqlite, TokenKind::Uuid | TokenKind::UuidBytes) => "BLOB".to_owned(),
        (Dialect::Sqlite, TokenKind::Timestamp) => "TIMESTAMP".to_owned(),
        _ => return None,
    };
    let table = qualified(dialect, schema, table);
    let column = quote(dialect, column);
    let integer = matches!(
        kind,
        TokenKind::SmallInt | TokenKind::Integer | TokenKind::BigInt
    );
    let add = format!("ALTER TABLE {table} ADD COLUMN {column} {column_type}");
    // The current UTC time, at the column's precision where the database rounds.
    let now = match (dialect, precision) {
        (Dialect::Postgres, _) if with_time_zone => "now()".to_owned(),
        (Dialect::Postgres, _) => "(now() AT TIME ZONE 'UTC')".to_owned(),
        (Dialect::Mysql, 0) => "CURRENT_TIMESTAMP".to_owned(),
        (Dialect::Mysql, digits) => format!("CURRENT_TIMESTAMP({digits})"),
        (Dialect::Sqlite, 0) => "datetime('now')".to_owned(),
        (Dialect::Sqlite, _) => "strftime('%Y-%m-%d %H:%M:%f', 'now')".to_owned(),
    };
    let add_with_tokens = match (dialect, integer, kind) {
        (_, true, _) => format!("{add} NOT NULL DEFAULT 1"),
        (Dialect::Postgres, _, TokenKind::Timestamp)
        | (Dialect::Mysql, _, TokenKind::Timestamp) => {
            format!("{add} NOT NULL DEFAULT {now}")
        }
        // A volatile default: a UUID of its own per existing row (PostgreSQL 13+).
        (Dialect::Postgres, _, _) => format!("{add} NOT NULL DEFAULT gen_random_uuid()"),
        // UUID() runs once per row in an UPDATE, not in an ADD COLUMN's DEFAULT.
        (Dialect::Mysql, _, _) => format!(
            "{add} NULL; UPDATE {table} SET {column} = UNHEX(REPLACE(UUID(), '-', '')); \
             ALTER TABLE {table} MODIFY {column} {column_type} NOT NULL"
        ),
        // SQLite adds a NOT NULL column only with a constant default.
        (Dialect::Sqlite, _, TokenKind::Timestamp) => format!(
            "{add} NOT NULL DEFAULT '1970-01-01 00:00:00'; UPDATE {table} SET {column} = {now}"
        ),
        (Dialect::Sqlite, _, _) => format!(
            "{add} NOT NULL DEFAULT x'00000000000040008000000000000001'; \
             UPDATE {table} SET {column} = randomblob(16)"
        ),
    };
    Some(match (found, dialect) {
        (None, _) => add_with_tokens,
        (Some(_), Dialect::Postgres) => format!(
            "ALTER TABLE {table} ALTER COLUMN {column} TYPE {column_type} \
             USING {column}::{column_type}"
        ),
        (Some(_), Dialect::Mysql) => {
            format!("ALTER TABLE {table} MODIFY {column} {column_type} NOT NULL")
        }
        // SQLite cannot change a column's type.
        (Some(_), Dialect::Sqlite) => {
            format!("ALTER TABLE {table} DROP COLUMN {column}; {add_with_tokens}")
        }
    })
}

/// Whether a column of `data_type` (lower case, as the database names it) holds `kind`.
fn kind_fits(dialect: Dialect, kind: TokenKind, data_type: &str) -> bool {
    match dialect {
        Dialect::Postgres => match kind {
            TokenKind::SmallInt => data_type == "smallint",
            TokenKind::Integer => data_type == "integer",
            TokenKind::BigInt => data_type == "bigint",
            TokenKind::Uuid => data_type == "uuid",
            // `UuidToken` maps to `uuid` and to `bytea` on PostgreSQL.
            TokenKind::UuidBytes => data_type == "uuid" || data_type == "bytea",
            TokenKind::Timestamp => data_type.starts_with("timestamp"),
            _ => true,
        },
        Dialect::Mysql => match kind {
            TokenKind::SmallInt => data_type == "smallint",
            TokenKind::Integer => data_type == "int" || data_type == "integer",
            TokenKind::BigInt => data_type == "bigint",
            TokenKind::Uuid | TokenKind::UuidBytes => {
                data_type == "binary" || data_type == "varbinary"
            }
            TokenKind::Timestamp => data_type == "datetime" || data_type == "timestamp",
            _ => true,
        },
        // SQLite's type affinity, from the declared type.
        Dialect::Sqlite => {
            let integer = data_type.contains("int");
            let real = ["real", "floa", "doub"]
                .iter()
                .any(|r| data_type.contains(r));
            match kind {
                TokenKind::SmallInt | TokenKind::Integer | TokenKind::BigInt => integer,
                TokenKind::Uuid | TokenKind::UuidBytes => {
                    data_type.is_empty() || data_type.contains("blob")
                }
                TokenKind::Timestamp => !integer && !real,
                _ => true,
            }
        }
    }
}

/// One row of the per-backend column query.
#[derive(Debug, QueryableByName)]
#[doc(hidden)]
pub struct ColumnRow {
    #[diesel(sql_type = Text)]
    data_type: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    datetime_precision: Option<i64>,
    /// Non-zero when the database sets the column to now on every UPDATE.
    #[diesel(sql_type = BigInt)]
    set_to_now_on_update: i64,
}

/// One row of the per-backend key query: a column of a unique index of the table.
/// The table has no such row when it does not exist; a row without an index name only
/// says that it exists.
#[derive(Debug, QueryableByName)]
#[doc(hidden)]
pub struct KeyIndexRow {
    /// The unique index (PRIMARY KEY, UNIQUE constraint or unique index).
    #[diesel(sql_type = Nullable<Text>)]
    index_name: Option<String>,
    /// Non-zero for the table's primary key.
    #[diesel(sql_type = BigInt)]
    is_primary: i64,
    /// The indexed column, or `None` for a part of the index that is not a whole
    /// column (an expression, a prefix): such an index does not count.
    #[diesel(sql_type = Nullable<Text>)]
    column_name: Option<String>,
}

/// A backend [`SchemaCheck`] can read column types and unique indexes on: PostgreSQL,
/// MySQL/MariaDB and SQLite, with the matching crate feature.
pub trait SchemaBackend: Backend + sealed::Sealed + 'static {
    /// How the backend names its types.
    #[doc(hidden)]
    const DIALECT: Dialect;
    /// `data_type, datetime_precision, set_to_now_on_update` of the column
    /// `schema.table.column` (`table.column` as an unqualified name resolves it when
    /// `schema` is `None`).
    #[doc(hidden)]
    fn column_query(
        schema: Option<&'static str>,
        table: &'static str,
        column: &'static str,
    ) -> BoxedSqlQuery<'static, Self, SqlQuery>;
    /// `index_name, is_primary, column_name` of every column of every unique index of
    /// `schema.table` that is neither partial nor deferred, one row without an index
    /// name when the table exists but has none, no row when it does not exist (see
    /// [`KeyIndexRow`]).
    #[doc(hidden)]
    fn key_query(
        schema: Option<&'static str>,
        table: &'static str,
    ) -> BoxedSqlQuery<'static, Self, SqlQuery>;
}

mod sealed {
    pub trait Sealed {}
}

#[cfg(feature = "postgres")]
impl sealed::Sealed for diesel::pg::Pg {}
#[cfg(feature = "postgres")]
impl SchemaBackend for diesel::pg::Pg {
    const DIALECT: Dialect = Dialect::Postgres;
    // The table's schema, or the first schema on the search path that has the table,
    // as an unqualified name resolves it.
    column_query!(
        "SELECT c.data_type::text AS data_type, \
         c.datetime_precision::bigint AS datetime_precision, \
         0::bigint AS set_to_now_on_update \
         FROM information_schema.columns c \
         WHERE c.table_name = $1 AND c.column_name = $2 \
         AND (c.table_schema = $3 \
              OR ($3 IS NULL AND c.table_schema = ANY (current_schemas(false)))) \
         ORDER BY array_position(current_schemas(false), c.table_schema::name) LIMIT 1"
    );
    // The table as its (quoted) name resolves; the key columns of each unique index
    // that `ON CONFLICT` can use: valid, not deferrable, not partial. An expression's
    // part (attnum 0) has no attribute, so its column is NULL.
    key_query!(
        "SELECT ic.relname::text AS index_name, \
         COALESCE(i.indisprimary, false)::int::bigint AS is_primary, \
         a.attname::text AS column_name \
         FROM pg_class t \
         LEFT JOIN pg_index i ON i.indrelid = t.oid AND i.indisunique AND i.indimmediate \
              AND i.indisvalid AND i.indpred IS NULL \
         LEFT JOIN pg_class ic ON ic.oid = i.indexrelid \
         LEFT JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
              ON k.ord <= i.indnkeyatts \
         LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
              AND k.attnum > 0 \
         WHERE t.oid = to_regclass(COALESCE(quote_ident($2) || '.', '') || quote_ident($1))"
    );
}

#[cfg(feature = "mysql")]
impl sealed::Sealed for diesel::mysql::Mysql {}
#[cfg(feature = "mysql")]
impl SchemaBackend for diesel::mysql::Mysql {
    const DIALECT: Dialect = Dialect::Mysql;
    column_query!(
        "SELECT CAST(DATA_TYPE AS CHAR) AS data_type, \
         CAST(DATETIME_PRECISION AS SIGNED) AS datetime_precision, \
         CAST(LOWER(EXTRA) LIKE '%on update%' AS SIGNED) AS set_to_now_on_update \
         FROM information_schema.COLUMNS \
         WHERE TABLE_NAME = ? AND COLUMN_NAME = ? AND TABLE_SCHEMA = COALESCE(?, DATABASE())"
    );
    // A column prefix (`SUB_PART`) or an expression (MySQL 8's functional key parts,
    // whose COLUMN_NAME is NULL) gives a NULL column.
    key_query!(
        "SELECT CAST(s.INDEX_NAME AS CHAR) AS index_name, \
         CAST(COALESCE(s.INDEX_NAME = 'PRIMARY', 0) AS SIGNED) AS is_primary, \
         CAST(CASE WHEN s.SUB_PART IS NULL THEN s.COLUMN_NAME END AS CHAR) AS column_name \
         FROM information_schema.TABLES t \
         LEFT JOIN information_schema.STATISTICS s ON s.TABLE_SCHEMA = t.TABLE_SCHEMA \
              AND s.TABLE_NAME = t.TABLE_NAME AND s.NON_UNIQUE = 0 \
         WHERE t.TABLE_NAME = ? AND t.TABLE_SCHEMA = COALESCE(?, DATABASE())"
    );
}

#[cfg(feature = "sqlite")]
impl sealed::Sealed for diesel::sqlite::Sqlite {}
#[cfg(feature = "sqlite")]
impl SchemaBackend for diesel::sqlite::Sqlite {
    const DIALECT: Dialect = Dialect::Sqlite;
    column_query!(
        "SELECT type AS data_type, CAST(NULL AS INTEGER) AS datetime_precision, \
         0 AS set_to_now_on_update \
         FROM pragma_table_info(?1, ?3) WHERE name = ?2"
    );
    // The unique indexes that are not partial (an expression's column has no name);
    // then the rowid alias: a primary key without an index of its own (origin `pk`) is
    // the table's INTEGER PRIMARY KEY; then a row that says the table exists.
    key_query!(
        "SELECT il.name AS index_name, CAST(il.origin = 'pk' AS INTEGER) AS is_primary, \
         ii.name AS column_name \
         FROM pragma_index_list(?1, ?2) AS il, pragma_index_info(il.name, ?2) AS ii \
         WHERE il.\"unique\" AND NOT il.partial \
         UNION ALL \
         SELECT 'INTEGER PRIMARY KEY', 1, ti.name FROM pragma_table_info(?1, ?2) AS ti \
         WHERE ti.pk > 0 \
         AND NOT EXISTS (SELECT 1 FROM pragma_index_list(?1, ?2) WHERE origin = 'pk') \
         UNION ALL \
         SELECT NULL, 0, NULL WHERE EXISTS (SELECT 1 FROM pragma_table_info(?1, ?2))"
    );
}

/// Runs on SQLite; the other backends' queries run in the tests crate.
#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;

    fn expected(kind: TokenKind, precision: u8) -> Expected {
        Expected {
            schema: None,
            table: "t",
            column: "c",
            kind,
            precision,
        }
    }

    fn row(data_type: &str, precision: Option<i64>) -> Option<ColumnRow> {
        Some(ColumnRow {
            data_type: data_type.to_owned(),
            datetime_precision: precision,
            set_to_now_on_update: 0,
        })
    }

    #[test]
    fn a_column_set_to_now_on_update_is_reported() {
        let seconds = expected(TokenKind::Timestamp, 0);
        let auto = Some(ColumnRow {
            set_to_now_on_update: 1,
            ..row("timestamp", Some(0)).unwrap()
        });
        let problem = seconds.problem(Dialect::Mysql, auto).unwrap();
        assert!(problem.set_to_now_on_update);
        assert_eq!(
            problem.to_string(),
            "t.c is timestamp with 0 fractional digits and set to the current time on every \
             update, which can move the token back, the token needs a timestamp with at \
             least 0 fractional digits; change it with: ALTER TABLE `t` MODIFY `c` DATETIME \
             NOT NULL"
        );
    }

    #[test]
    fn coarse_timestamp_columns_are_reported_with_the_precision_they_need() {
        let micros = expected(TokenKind::Timestamp, 6);
        let problem = micros
            .problem(Dialect::Mysql, row("datetime", Some(0)))
            .unwrap();
        assert_eq!(problem.found_precision, Some(0));
        assert_eq!(problem.needed_precision, Some(6));
        assert_eq!(
            problem.to_string(),
            "t.c is datetime with 0 fractional digits, the token needs a timestamp with at \
             least 6 fractional digits; change it with: ALTER TABLE `t` MODIFY `c` \
             DATETIME(6) NOT NULL"
        );
        assert_eq!(
            micros.problem(Dialect::Mysql, row("datetime", Some(6))),
            None
        );
        assert_eq!(
            micros.problem(
                Dialect::Postgres,
                row("timestamp without time zone", Some(6))
            ),
            None
        );
        // Whole-second tokens fit every timestamp column.
        let seconds = expected(TokenKind::Timestamp, 0);
        assert_eq!(
            seconds.problem(Dialect::Mysql, row("timestamp", Some(0))),
            None
        );
        assert_eq!(
            seconds.problem(Dialect::Sqlite, row("TIMESTAMP", None)),
            None
        );
        assert!(
            seconds
                .problem(Dialect::Mysql, row("varchar", None))
                .is_some()
        );
        assert!(
            seconds
                .problem(Dialect::Sqlite, row("INTEGER", None))
                .is_some()
        );
    }

    #[test]
    fn integer_tokens_need_their_own_width_where_the_database_has_widths() {
        let wide = expected(TokenKind::BigInt, 0);
        assert!(
            wide.problem(Dialect::Postgres, row("integer", None))
                .is_some()
        );
        assert!(wide.problem(Dialect::Mysql, row("int", None)).is_some());
        assert_eq!(wide.problem(Dialect::Sqlite, row("INTEGER", None)), None);
        assert_eq!(wide.problem(Dialect::Postgres, row("bigint", None)), None);
        let missing = wide.problem(Dialect::Postgres, None).unwrap();
        assert_eq!(
            missing.to_string(),
            "t.c does not exist, the token needs a 64-bit integer; add it with: ALTER TABLE \
             \"t\" ADD COLUMN \"c\" bigint NOT NULL DEFAULT 1"
        );
    }

    /// The fix of a missing or wrong token column, per backend and token kind: the
    /// recipe of the guide's "Adding the version column to a table with rows".
    #[test]
    fn the_message_names_the_ddl_that_fixes_the_token_column() {
        let fix = |dialect, kind, precision, row| {
            expected(kind, precision)
                .problem(dialect, row)
                .and_then(|problem| problem.fix)
                .unwrap()
        };
        // Missing columns: added NOT NULL, every existing row given a token.
        assert_eq!(
            fix(Dialect::Mysql, TokenKind::Integer, 0, None),
            "ALTER TABLE `t` ADD COLUMN `c` INT NOT NULL DEFAULT 1"
        );
        assert_eq!(
            fix(Dialect::Postgres, TokenKind::Uuid, 0, None),
            r#"ALTER TABLE "t" ADD COLUMN "c" uuid NOT NULL DEFAULT gen_random_uuid()"#
        );
        assert_eq!(
            fix(Dialect::Mysql, TokenKind::UuidBytes, 0, None),
            "ALTER TABLE `t` ADD COLUMN `c` BINARY(16) NULL; UPDATE `t` SET `c` = \
             UNHEX(REPLACE(UUID(), '-', '')); ALTER TABLE `t` MODIFY `c` BINARY(16) NOT NULL"
        );
        assert_eq!(
            fix(Dialect::Sqlite, TokenKind::UuidBytes, 0, None),
            r#"ALTER TABLE "t" ADD COLUMN "c" BLOB NOT NULL DEFAULT x'00000000000040008000000000000001'; UPDATE "t" SET "c" = randomblob(16)"#
        );
        assert_eq!(
            fix(Dialect::Postgres, TokenKind::Timestamp, 6, None),
            r#"ALTER TABLE "t" ADD COLUMN "c" timestamp(6) NOT NULL DEFAULT (now() AT TIME ZONE 'UTC')"#
        );
        assert_eq!(
            fix(Dialect::Mysql, TokenKind::Timestamp, 0, None),
            "ALTER TABLE `t` ADD COLUMN `c` DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP"
        );
        assert_eq!(
            fix(Dialect::Sqlite, TokenKind::Timestamp, 0, None),
            r#"ALTER TABLE "t" ADD COLUMN "c" TIMESTAMP NOT NULL DEFAULT '1970-01-01 00:00:00'; UPDATE "t" SET "c" = datetime('now')"#
        );
        // Wrong columns: the type changed where the database can, keeping a time zone.
        assert_eq!(
            fix(
                Dialect::Postgres,
                TokenKind::Timestamp,
                6,
                row("timestamp with time zone", Some(0))
            ),
            r#"ALTER TABLE "t" ALTER COLUMN "c" TYPE timestamptz(6) USING "c"::timestamptz(6)"#
        );
        assert_eq!(
            fix(
                Dialect::Postgres,
                TokenKind::BigInt,
                0,
                row("integer", None)
            ),
            r#"ALTER TABLE "t" ALTER COLUMN "c" TYPE bigint USING "c"::bigint"#
        );
        // SQLite cannot change a type: the column is dropped and added again.
        let replaced = fix(
            Dialect::Sqlite,
            TokenKind::Timestamp,
            0,
            row("INTEGER", None),
        );
        assert!(
            replaced.starts_with(
                r#"ALTER TABLE "t" DROP COLUMN "c"; ALTER TABLE "t" ADD COLUMN "c" TIMESTAMP"#
            ),
            "{replaced}"
        );
        // A schema is named on the table.
        let in_schema = Expected {
            schema: Some("app"),
            ..expected(TokenKind::Integer, 0)
        };
        assert_eq!(
            in_schema
                .problem(Dialect::Postgres, None)
                .unwrap()
                .fix
                .unwrap(),
            r#"ALTER TABLE "app"."t" ADD COLUMN "c" integer NOT NULL DEFAULT 1"#
        );
    }

    /// Every fix runs: each missing token column is added to a table with rows by its
    /// DDL, after which the column fits and every row has a token.
    #[test]
    fn the_fix_of_a_missing_column_runs_on_a_table_with_rows() {
        use diesel::connection::SimpleConnection;
        let mut conn = diesel::sqlite::SqliteConnection::establish(":memory:").unwrap();
        conn.batch_execute(
            "CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2)",
        )
        .unwrap();
        for (kind, precision) in [
            (TokenKind::Integer, 0),
            (TokenKind::UuidBytes, 0),
            (TokenKind::Timestamp, 0),
            (TokenKind::Timestamp, 6),
        ] {
            let expected = expected(kind, precision);
            let fix = expected
                .problem(Dialect::Sqlite, None)
                .unwrap()
                .fix
                .unwrap();
            conn.batch_execute(&fix).unwrap();
            let check = SchemaCheck {
                tokens: vec![expected],
                keys: Vec::new(),
            };
            check.run(&mut conn).unwrap();
            let nulls: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
                "(SELECT COUNT(*) FROM t WHERE c IS NULL OR c = x'00000000000040008000000000000001' OR c = '1970-01-01 00:00:00')",
            ))
            .get_result(&mut conn)
            .unwrap();
            assert_eq!(nulls, 0, "{fix}");
            conn.batch_execute("ALTER TABLE t DROP COLUMN c").unwrap();
        }
    }

    fn key(columns: &'static [&'static str]) -> ExpectedKey {
        ExpectedKey {
            schema: None,
            table: "t",
            columns,
        }
    }

    /// Rows of the key query: `(index, primary, column)`.
    fn indexes(rows: &[(Option<&str>, bool, Option<&str>)]) -> Vec<KeyIndexRow> {
        rows.iter()
            .map(|&(index, primary, column)| KeyIndexRow {
                index_name: index.map(str::to_owned),
                is_primary: i64::from(primary),
                column_name: column.map(str::to_owned),
            })
            .collect()
    }

    #[test]
    fn a_key_is_covered_only_by_a_unique_index_on_exactly_its_columns() {
        let composite = key(&["order_id", "line_no"]);
        let covering = indexes(&[
            (Some("t_pkey"), true, Some("id")),
            (Some("t_lines"), false, Some("line_no")),
            (Some("t_lines"), false, Some("order_id")),
        ]);
        assert_eq!(composite.problem(Dialect::Postgres, covering), None);

        let superset = indexes(&[
            (Some("wide"), false, Some("order_id")),
            (Some("wide"), false, Some("line_no")),
            (Some("wide"), false, Some("quantity")),
        ]);
        let problem = composite.problem(Dialect::Postgres, superset).unwrap();
        assert_eq!(problem.columns, ["order_id", "line_no"]);
        assert_eq!(
            problem.fix,
            r#"ALTER TABLE "t" ADD PRIMARY KEY ("order_id", "line_no")"#
        );

        // An index with an expression or a prefix among its parts does not count.
        let single = key(&["id"]);
        let expression = indexes(&[(Some("e"), false, Some("id")), (Some("e"), false, None)]);
        assert!(single.problem(Dialect::Mysql, expression).is_some());
        let prefix = indexes(&[(Some("p"), false, None)]);
        assert!(single.problem(Dialect::Mysql, prefix).is_some());
    }

    #[test]
    fn a_missing_table_is_left_to_its_token_column_and_an_empty_one_is_reported() {
        let single = key(&["id"]);
        assert_eq!(single.problem(Dialect::Postgres, Vec::new()), None);
        let no_index = indexes(&[(None, false, None)]);
        assert!(single.problem(Dialect::Postgres, no_index).is_some());
    }

    #[test]
    fn column_names_compare_without_case_where_the_database_does() {
        let single = key(&["Id"]);
        let lower = || indexes(&[(Some("PRIMARY"), true, Some("id"))]);
        assert_eq!(single.problem(Dialect::Mysql, lower()), None);
        assert_eq!(single.problem(Dialect::Sqlite, lower()), None);
        assert!(single.problem(Dialect::Postgres, lower()).is_some());
    }

    #[test]
    fn the_fix_adds_a_primary_key_where_it_can_and_a_unique_index_otherwise() {
        let ddl = |dialect, schema, primary| {
            unique_key_ddl(dialect, schema, "items", &["sku", "bin"], primary)
        };
        assert_eq!(
            ddl(Dialect::Mysql, None, false),
            "ALTER TABLE `items` ADD PRIMARY KEY (`sku`, `bin`)"
        );
        assert_eq!(
            ddl(Dialect::Postgres, Some("app"), true),
            r#"CREATE UNIQUE INDEX "items_sku_bin_key" ON "app"."items" ("sku", "bin")"#
        );
        assert_eq!(
            ddl(Dialect::Mysql, Some("app"), true),
            "CREATE UNIQUE INDEX `items_sku_bin_key` ON `app`.`items` (`sku`, `bin`)"
        );
        // SQLite cannot add a primary key, and names the schema on the index.
        assert_eq!(
            ddl(Dialect::Sqlite, Some("app"), false),
            r#"CREATE UNIQUE INDEX "app"."items_sku_bin_key" ON "items" ("sku", "bin")"#
        );
        // Quotes in a name are doubled; a long index name is cut to 63 bytes.
        assert_eq!(
            unique_key_ddl(Dialect::Postgres, None, "a\"b", &["c"], false),
            r#"ALTER TABLE "a""b" ADD PRIMARY KEY ("c")"#
        );
        let long = "x".repeat(70);
        let fix = unique_key_ddl(Dialect::Postgres, None, &long, &["c"], true);
        assert!(fix.contains(&format!("\"{}\" ON", "x".repeat(63))), "{fix}");
    }

    #[test]
    fn the_message_names_the_key_and_the_fix() {
        let problem = key(&["order_id", "line_no"])
            .problem(Dialect::Sqlite, indexes(&[(None, false, None)]))
            .unwrap();
        assert_eq!(
            SchemaProblem::from(problem).to_string(),
            "t key (order_id, line_no) has no PRIMARY KEY or UNIQUE index on exactly its \
             columns, so the database does not keep it unique, which checked inserts and \
             upserts need; add one: CREATE UNIQUE INDEX \"t_order_id_line_no_key\" ON \"t\" \
             (\"order_id\", \"line_no\")"
        );
    }

    #[test]
    fn entities_sharing_a_table_and_key_check_it_once() {
        let mut check = SchemaCheck::new();
        for columns in [&["a", "b"][..], &["b", "a"], &["a"]] {
            let key = key(columns);
            if !check.keys.iter().any(|known| known.same_key(&key)) {
                check.keys.push(key);
            }
        }
        assert_eq!(check.keys.len(), 2);
    }
}
