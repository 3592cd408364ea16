//! [`SchemaCheck`]: a start-up check that every versioned entity's token column can
//! hold the tokens the entity writes.
//!
//! Diesel's `table!` says a column is a `Timestamp`, not how many fractional digits of a
//! second the database keeps, and a token written to a column that rounds it may come
//! back equal to the old one. The check reads what the database says about each token
//! column (`information_schema.columns` on PostgreSQL and MySQL/MariaDB, SQLite's
//! `pragma_table_info`) and reports every column that is missing, of the wrong kind,
//! coarser than the precision the entity declares with
//! `#[occ(version, precision = N)]`, or set to the current time by the database on every
//! UPDATE (MySQL/MariaDB's `ON UPDATE CURRENT_TIMESTAMP`). Tables and columns are looked
//! up by the SQL names `table!` declares: a `#[sql_name = "..."]` and a schema
//! (`app.stock`) are honoured.

use diesel::QueryableByName;
use diesel::backend::Backend;
use diesel::connection::Connection;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::sql_types::{BigInt, Nullable, Text};

pub use crate::error::{SchemaProblem, SchemaProblems};
pub use crate::sql_name::SqlTable;

use crate::dialect::Dialect;
use crate::error::Error;
use crate::token::{TokenKind, VersionToken};
use crate::versioned::Versioned;
use crate::versioned::VersionedParts;

/// The token columns of a set of entities, checked against the database.
///
/// Call it once at start-up, after the migrations: [`run`](Self::run) on a blocking
/// connection, `run_async` (feature `async`) on an async one. It returns
/// [`Error::Schema`] listing every token column that cannot hold its entity's tokens:
/// a missing column, a column of another kind (a `VARCHAR` for a timestamp, an `INT` for
/// an `i64`), a timestamp column that keeps fewer fractional digits than the entity's
/// `#[occ(version, precision = N)]` declares, or one the database sets to the current
/// time on every UPDATE (MySQL/MariaDB's `ON UPDATE CURRENT_TIMESTAMP`: a write at a
/// "now" behind a token that ran ahead of the clock puts back a token a stale entity
/// may hold, whose save then wins). Database-generated tokens
/// (`#[occ(version, generated)]`) are not checked.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::schema_check::SchemaCheck;
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
/// // Stock's integer token lives in an INTEGER column: nothing to report.
/// SchemaCheck::new().entity::<Stock>().run(&mut conn)?;
///
/// // The events table does not exist here: reported, with every other problem.
/// let error = SchemaCheck::new().entity::<Stock>().entity::<Event>().run(&mut conn).unwrap_err();
/// let problems = error.as_schema_problems().unwrap();
/// assert_eq!(problems.len(), 1);
/// assert_eq!(problems[0].table, "events");
/// assert_eq!(problems[0].column, "updated_at");
/// assert_eq!(problems[0].found, None);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct SchemaCheck {
    expected: Vec<Expected>,
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

impl SchemaCheck {
    /// A check of no entity yet.
    pub fn new() -> Self {
        SchemaCheck::default()
    }

    /// Adds an entity: its table and token column (by the SQL names `table!` declares),
    /// token kind and declared precision.
    pub fn entity<T>(mut self) -> Self
    where
        T: VersionedParts,
        T::Table: SqlTable + 'static,
        T::TokenColumn: diesel::Column,
    {
        if !T::GENERATED_TOKEN {
            let (schema, table) = crate::sql_name::of::<T::Table>()
                .map_or((None, T::TABLE_NAME), |name| (name.schema, name.table));
            self.expected.push(Expected {
                schema,
                table,
                column: <T::TokenColumn as diesel::Column>::NAME,
                kind: <T::Token as VersionToken>::KIND,
                precision: <T as Versioned>::TOKEN_PRECISION,
            });
        }
        self
    }

    /// Reads each token column's type on a blocking connection and reports every
    /// problem at once, as [`Error::Schema`]. One query per entity.
    pub fn run<Conn>(&self, conn: &mut Conn) -> Result<(), Error>
    where
        Conn: Connection,
        Conn::Backend: SchemaBackend,
        for<'a> BoxedSqlQuery<'a, Conn::Backend, SqlQuery>: LoadQuery<'a, Conn, ColumnRow>,
    {
        let mut found = Vec::with_capacity(self.expected.len());
        for expected in &self.expected {
            let rows: Vec<ColumnRow> = column_query::<Conn::Backend>(expected).load(conn)?;
            found.push(rows.into_iter().next());
        }
        self.judge(<Conn::Backend as SchemaBackend>::DIALECT, found)
    }

    /// The expectations, for the async twin.
    #[cfg(feature = "async")]
    pub(crate) fn queries<DB: SchemaBackend>(
        &self,
    ) -> impl Iterator<Item = BoxedSqlQuery<'static, DB, SqlQuery>> + '_ {
        self.expected.iter().map(column_query::<DB>)
    }

    /// Compares what each column is with what its entity needs.
    pub(crate) fn judge(
        &self,
        dialect: Dialect,
        found: Vec<Option<ColumnRow>>,
    ) -> Result<(), Error> {
        let problems: Vec<SchemaProblem> = self
            .expected
            .iter()
            .zip(found)
            .filter_map(|(expected, row)| expected.problem(dialect, row))
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Schema(SchemaProblems::new(problems)))
        }
    }
}

fn column_query<DB: SchemaBackend>(expected: &Expected) -> BoxedSqlQuery<'static, DB, SqlQuery> {
    DB::column_query(expected.schema, expected.table, expected.column)
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

impl Expected {
    fn problem(&self, dialect: Dialect, row: Option<ColumnRow>) -> Option<SchemaProblem> {
        let needed_precision = (self.kind == TokenKind::Timestamp).then_some(self.precision);
        let problem = |found: Option<String>, found_precision: Option<u8>, set_to_now_on_update| {
            SchemaProblem {
                schema: self.schema,
                table: self.table,
                column: self.column,
                found,
                found_precision,
                set_to_now_on_update,
                needed: self.kind,
                needed_precision,
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

/// A backend [`SchemaCheck`] can read column types on: PostgreSQL, MySQL/MariaDB and
/// SQLite, with the matching crate feature.
#[doc(hidden)]
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
             least 0 fractional digits"
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
             least 6 fractional digits"
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
            "t.c does not exist, the token needs a 64-bit integer"
        );
    }
}
