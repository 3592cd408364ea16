//! The recipe of the guide's "Adding the version column to a table with rows"
//! (`diesel_occ::guide::checked_writes`), run as real Diesel migrations
//! (`migrations/adopt/<backend>/`) on tables that already hold rows.
//!
//! For each backend, in a fresh database that already holds the suite's own migrations
//! (as an application's database holds its own; the adoption set shares their
//! `__diesel_schema_migrations` without touching their rows):
//!
//! 1. the set's first migration creates the "legacy" tables, without token columns, and
//!    fills them (one table per token kind, `adopt_lines` with a composite key that
//!    nothing keeps unique yet); `SchemaCheck` must then refuse every entity's table, and
//!    each problem must name its fix;
//! 2. the rest of the set adds the token columns (and `adopt_lines`' key);
//! 3. per entity: every row has a token (a UUID token distinct per row), `SchemaCheck`
//!    passes, and one `find` + `save_checked` on a backfilled row writes a new token that
//!    reads back exactly;
//! 4. the set is reverted (its `down.sql`, newest first), leaving the suite's own
//!    migrations applied.
//!
//! The database is dropped at the end, so runs repeat. The `adopt_migrations` binary
//! prints the lines (CI runs it) and the integration test `adopt_migrations` asserts
//! them.

use std::collections::BTreeSet;

use diesel::QueryableByName;
use diesel::migration::MigrationSource;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use diesel_migrations::{EmbeddedMigrations, embed_migrations};
use diesel_occ::prelude::*;
use diesel_occ::schema_check::SchemaCheck;

use crate::backend::Backend;
use crate::db::{TestConnection, TestDb};

/// The adoption set for PostgreSQL.
pub const POSTGRES_MIGRATIONS: EmbeddedMigrations =
    embed_migrations!("../migrations/adopt/postgres");
/// The adoption set for MySQL/MariaDB.
pub const MYSQL_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/adopt/mysql");
/// The adoption set for SQLite.
pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/adopt/sqlite");

/// The problems `SchemaCheck` must report on the legacy tables: five missing token
/// columns and `adopt_lines`' key.
const PROBLEMS_BEFORE: usize = 6;

/// Runs the recipe on `backend` and returns one line per step and table, e.g.
/// `postgres adopt_uuid: 3 rows backfilled (3 distinct tokens), SchemaCheck ok,
/// save_checked ok`. `Ok(None)` when the backend's server is unreachable and not
/// required (a SKIPPED line went to stderr); `Err` with the lines so far and the
/// failure.
pub fn run(backend: Backend) -> Result<Option<Vec<String>>, (Vec<String>, String)> {
    let mut lines = Vec::new();
    let outcome = match backend {
        Backend::Postgres => postgres::run(&mut lines),
        #[cfg(feature = "mysql")]
        Backend::Mysql => mysql::run(&mut lines),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("built without the tests crate's `mysql` feature".to_owned()),
        Backend::Sqlite => sqlite::run(&mut lines),
    };
    match outcome {
        Ok(true) => Ok(Some(lines)),
        Ok(false) => Ok(None),
        Err(error) => Err((lines, error)),
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The rows of `table` (a name of this module's migrations, never user input).
fn count_rows<C: TestConnection>(conn: &mut C, table: &str) -> Result<i64, String>
where
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Count>,
{
    diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
        .get_result::<Count>(conn)
        .map(|count| count.n)
        .map_err(|e| format!("count {table}: {e}"))
}

/// Applies the set's first migration, the legacy tables with their rows, and returns
/// the row count of each of `tables`.
fn create_legacy_tables<C: TestConnection>(
    conn: &mut C,
    migrations: EmbeddedMigrations,
    tables: &[&'static str],
) -> Result<Vec<(&'static str, i64)>, String>
where
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Count>,
{
    let version = conn
        .run_next_migration(migrations)
        .map_err(|e| format!("legacy tables: {e}"))?
        .to_string();
    if version != "20261207000000" {
        return Err(format!("the set's first migration is {version}"));
    }
    tables
        .iter()
        .map(|&table| match count_rows(conn, table)? {
            0 => Err(format!("{table} holds no rows before the recipe")),
            rows => Ok((table, rows)),
        })
        .collect()
}

/// `SchemaCheck`'s verdict on the legacy tables: [`PROBLEMS_BEFORE`] problems, each
/// naming its fix.
fn refused_before(
    backend: Backend,
    error: Result<(), diesel_occ::Error>,
) -> Result<String, String> {
    let error = match error {
        Ok(()) => return Err("SchemaCheck passed on the tables without token columns".into()),
        Err(error) => error,
    };
    let problems = error
        .as_schema_problems()
        .ok_or_else(|| format!("SchemaCheck on the legacy tables: {error}"))?;
    if problems.len() != PROBLEMS_BEFORE {
        return Err(format!(
            "SchemaCheck on the legacy tables found {} problems, expected {PROBLEMS_BEFORE}: {error}",
            problems.len()
        ));
    }
    if let Some(unnamed) = problems.iter().find(|problem| {
        let message = problem.to_string();
        !(message.contains("ALTER TABLE") || message.contains("CREATE UNIQUE INDEX"))
    }) {
        return Err(format!("a problem does not name its fix: {unnamed}"));
    }
    Ok(format!(
        "{backend} legacy tables: SchemaCheck refuses them ({} problems, each naming its fix)",
        problems.len()
    ))
}

/// Applies the rest of the set: the recipe.
fn apply_recipe<C: TestConnection>(
    backend: Backend,
    conn: &mut C,
    migrations: EmbeddedMigrations,
) -> Result<String, String> {
    let applied = conn
        .run_pending_migrations(migrations)
        .map_err(|e| format!("the recipe's migrations: {e}"))?;
    let names: Vec<String> = applied.iter().map(ToString::to_string).collect();
    Ok(format!(
        "{backend} recipe applied: {} migrations ({})",
        names.len(),
        names.join(", ")
    ))
}

/// Reverts the whole set, newest first, and checks that the suite's own migrations
/// are still applied and the legacy tables gone.
fn revert<C: TestConnection>(
    backend: Backend,
    conn: &mut C,
    migrations: EmbeddedMigrations,
    tables: &[&'static str],
) -> Result<String, String>
where
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Count>,
{
    let set = MigrationSource::<C::Backend>::migrations(&migrations)
        .map_err(|e| format!("the adoption set: {e}"))?;
    let ours: BTreeSet<String> = set.iter().map(|m| m.name().version().to_string()).collect();
    for migration in set.iter().rev() {
        conn.revert_migration(migration.as_ref())
            .map_err(|e| format!("revert {}: {e}", migration.name()))?;
    }
    let applied = conn
        .applied_migrations()
        .map_err(|e| format!("applied migrations: {e}"))?;
    let others = applied.len();
    if let Some(left) = applied.iter().find(|v| ours.contains(&v.to_string())) {
        return Err(format!("{left} is still applied after the revert"));
    }
    if others == 0 {
        return Err("the suite's own migrations were reverted too".into());
    }
    if let Some(table) = tables
        .iter()
        .find(|&&table| count_rows(conn, table).is_ok())
    {
        return Err(format!("{table} exists after the revert"));
    }
    Ok(format!(
        "{backend} reverted: {} migrations of the set, the other set's {others} still applied",
        set.len()
    ))
}

/// One entity's table after the recipe: every row kept and has a token (`distinct`:
/// a token of its own), `SchemaCheck` passes, and a `find` + `save_checked` on a
/// backfilled row writes a fresh token that reads back exactly.
macro_rules! check_entity {
    (
        $backend:expr, $conn:expr, $before:expr, $entity:ty, $table:ident, $token:ident,
        key = $key:expr, distinct = $distinct:expr, note = $note:expr $(,)?
    ) => {{
        let conn = &mut *$conn;
        let table = stringify!($table);
        let before = $before
            .iter()
            .find(|(name, _)| *name == table)
            .map_or(0, |(_, rows)| *rows);
        let rows: Vec<$entity> = schema::$table::table
            .select(<$entity>::as_select())
            .load(conn)
            .map_err(|e| format!("{table}: load: {e}"))?;
        if rows.len() as i64 != before {
            return Err(format!(
                "{table}: {} rows after the recipe, {before} before",
                rows.len()
            ));
        }
        let tokens: BTreeSet<String> = rows.iter().map(|row| format!("{:?}", row.$token)).collect();
        if $distinct && tokens.len() != rows.len() {
            return Err(format!(
                "{table}: {} distinct tokens for {} rows",
                tokens.len(),
                rows.len()
            ));
        }
        SchemaCheck::new()
            .entity::<$entity>()
            .run(conn)
            .map_err(|e| format!("{table}: SchemaCheck: {e}"))?;
        let mut entity = <$entity>::find(conn, $key).map_err(|e| format!("{table}: find: {e}"))?;
        let old = entity.$token;
        entity.quantity += 1;
        entity
            .save_checked(conn)
            .map_err(|e| format!("{table}: save_checked: {e}"))?;
        let read = <$entity>::find(conn, $key).map_err(|e| format!("{table}: find: {e}"))?;
        if entity.$token == old || read.$token != entity.$token || read.quantity != entity.quantity
        {
            return Err(format!(
                "{table}: after save_checked the row reads {read:?}, the entity is {entity:?}, \
                 the old token {old:?}"
            ));
        }
        let distinct = if $distinct {
            format!(" ({} distinct tokens)", tokens.len())
        } else {
            String::new()
        };
        format!(
            "{} {table}: {} rows {}{distinct}, SchemaCheck ok, save_checked ok",
            $backend,
            rows.len(),
            $note
        )
    }};
}

/// The legacy tables, the entities the recipe makes them fit, and the run, for one
/// backend: `$uuid_sql` is the SQL type of the UUID token column, `$uuid` the token
/// type, and after `xmin` come the extra tables and checks of PostgreSQL.
macro_rules! adopt_backend {
    (
        $backend:expr, $conn:ty, $migrations:expr, $uuid_sql:path, $uuid:ty,
        tables = [$($extra_table:literal),*],
        schema = { $($extra_schema:tt)* },
        entities = { $($extra_entities:tt)* },
        checks = |$c:ident, $b:ident, $lines:ident, $before:ident| { $($extra_checks:tt)* } $(,)?
    ) => {
        use super::*;

        #[allow(missing_docs)]
        mod schema {
            diesel::table! {
                adopt_integer (id) { id -> Integer, name -> Text, quantity -> Integer, version -> Integer }
            }
            diesel::table! {
                adopt_uuid (id) { id -> Integer, name -> Text, quantity -> Integer, version -> $uuid_sql }
            }
            diesel::table! {
                adopt_stamp_seconds (id) {
                    id -> Integer, name -> Text, quantity -> Integer, updated_at -> Timestamp,
                }
            }
            diesel::table! {
                adopt_stamp_micros (id) {
                    id -> Integer, name -> Text, quantity -> Integer, updated_at -> Timestamp,
                }
            }
            diesel::table! {
                adopt_lines (order_id, line_no) {
                    order_id -> Integer, line_no -> Integer, quantity -> Integer, version -> Integer,
                }
            }
            $($extra_schema)*
        }

        /// An integer counter.
        #[derive(Debug, Queryable, Selectable, diesel_occ::Versioned)]
        #[diesel(table_name = schema::adopt_integer)]
        struct AdoptInteger {
            id: i32,
            quantity: i32,
            #[occ(version)]
            version: i32,
        }

        /// A UUID per row.
        #[derive(Debug, Queryable, Selectable, diesel_occ::Versioned)]
        #[diesel(table_name = schema::adopt_uuid)]
        struct AdoptUuid {
            id: i32,
            quantity: i32,
            #[occ(version)]
            version: $uuid,
        }

        /// A timestamp at whole seconds (the default precision).
        #[derive(Debug, Queryable, Selectable, diesel_occ::Versioned)]
        #[diesel(table_name = schema::adopt_stamp_seconds)]
        struct AdoptStampSeconds {
            id: i32,
            quantity: i32,
            #[occ(version)]
            updated_at: chrono::NaiveDateTime,
        }

        /// A timestamp at microseconds.
        #[derive(Debug, Queryable, Selectable, diesel_occ::Versioned)]
        #[diesel(table_name = schema::adopt_stamp_micros)]
        struct AdoptStampMicros {
            id: i32,
            quantity: i32,
            #[occ(version, precision = 6)]
            updated_at: chrono::NaiveDateTime,
        }

        /// A composite key, made unique by the recipe.
        #[derive(Debug, Queryable, Selectable, diesel_occ::Versioned)]
        #[diesel(table_name = schema::adopt_lines, primary_key(order_id, line_no))]
        struct AdoptLine {
            order_id: i32,
            line_no: i32,
            quantity: i32,
            #[occ(version)]
            version: i32,
        }

        $($extra_entities)*

        const TABLES: &[&str] = &[
            "adopt_integer", "adopt_uuid", "adopt_stamp_seconds", "adopt_stamp_micros",
            "adopt_lines", $($extra_table),*
        ];

        /// `Ok(false)` when the server is unreachable and not required.
        pub(super) fn run(lines: &mut Vec<String>) -> Result<bool, String> {
            let backend: Backend = $backend;
            let Some(db) = TestDb::<$conn>::create("adopt_migrations") else {
                return Ok(false);
            };
            let mut conn = db.conn();
            let conn = &mut conn;
            let before = create_legacy_tables(conn, $migrations, TABLES)?;
            let check = SchemaCheck::new()
                .entity::<AdoptInteger>()
                .entity::<AdoptUuid>()
                .entity::<AdoptStampSeconds>()
                .entity::<AdoptStampMicros>()
                .entity::<AdoptLine>();
            lines.push(refused_before(backend, check.run(conn))?);
            lines.push(apply_recipe(backend, conn, $migrations)?);
            lines.push(check_entity!(
                backend, conn, before, AdoptInteger, adopt_integer, version,
                key = 2, distinct = false, note = "backfilled",
            ));
            lines.push(check_entity!(
                backend, conn, before, AdoptUuid, adopt_uuid, version,
                key = 2, distinct = true, note = "backfilled",
            ));
            lines.push(check_entity!(
                backend, conn, before, AdoptStampSeconds, adopt_stamp_seconds,
                updated_at, key = 2, distinct = false, note = "backfilled (whole seconds)",
            ));
            lines.push(check_entity!(
                backend, conn, before, AdoptStampMicros, adopt_stamp_micros,
                updated_at, key = 2, distinct = false, note = "backfilled (precision 6)",
            ));
            lines.push(check_entity!(
                backend, conn, before, AdoptLine, adopt_lines, version,
                key = (1, 2), distinct = false, note = "backfilled, key made unique",
            ));
            {
                let ($c, $b, $lines, $before) = (&mut *conn, backend, &mut *lines, &before);
                let _ = (&$c, &$b, &$lines, &$before);
                $($extra_checks)*
            }
            lines.push(revert(backend, conn, $migrations, TABLES)?);
            Ok(true)
        }
    };
}

mod postgres {
    adopt_backend!(
        Backend::Postgres,
        diesel::pg::PgConnection,
        POSTGRES_MIGRATIONS,
        diesel::sql_types::Uuid,
        uuid::Uuid,
        tables = ["adopt_xmin"],
        schema = {
            diesel::table! {
                adopt_xmin (id) {
                    id -> Integer, name -> Text, quantity -> Integer,
                    xmin -> diesel_occ::xmin::sql_types::Xid,
                }
            }
        },
        entities = {
            /// PostgreSQL's `xmin`: no column to add, the entity declares the system
            /// column.
            #[derive(Debug, Queryable, Selectable, diesel_occ::Versioned)]
            #[diesel(table_name = schema::adopt_xmin, check_for_backend(diesel::pg::Pg))]
            struct AdoptXmin {
                id: i32,
                quantity: i32,
                #[occ(version, generated)]
                xmin: diesel_occ::xmin::XminToken,
            }
        },
        checks = |conn, backend, lines, before| {
            lines.push(check_entity!(
                backend,
                conn,
                before,
                AdoptXmin,
                adopt_xmin,
                xmin,
                key = 2,
                distinct = false,
                note = "(xmin: no column added)",
            ));
        },
    );
}

#[cfg(feature = "mysql")]
mod mysql {
    adopt_backend!(
        Backend::Mysql,
        diesel::mysql::MysqlConnection,
        MYSQL_MIGRATIONS,
        diesel::sql_types::Binary,
        diesel_occ::UuidToken,
        tables = [],
        schema = {},
        entities = {},
        checks = |conn, backend, lines, before| {},
    );
}

mod sqlite {
    adopt_backend!(
        Backend::Sqlite,
        diesel::sqlite::SqliteConnection,
        SQLITE_MIGRATIONS,
        diesel::sql_types::Binary,
        diesel_occ::UuidToken,
        tables = [],
        schema = {},
        entities = {},
        checks = |conn, backend, lines, before| {},
    );
}
