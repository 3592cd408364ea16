//! The start-up schema check refuses a key the database does not keep unique: an
//! entity's key columns need a PRIMARY KEY or UNIQUE index on exactly those columns, in
//! any order. A unique index on more columns, a partial one and a table keyed on other
//! columns do not count; the message names the key and the DDL that fixes it, and that
//! DDL runs. Each scenario also shows why: without the index a second checked insert of
//! the same key succeeds and the table holds the key twice.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Error;
use diesel_occ::schema_check::UnenforcedKey;
use diesel_occ_tests::Backend;

diesel::table! {
    /// A table whose key the test creates the index for, or not.
    loose_items (id) {
        id -> Integer,
        value -> Integer,
        version -> Integer,
    }
}

diesel::table! {
    /// The same, with a composite key.
    loose_lines (order_id, line_no) {
        order_id -> Integer,
        line_no -> Integer,
        quantity -> Integer,
        version -> Integer,
    }
}

diesel::table! {
    /// A table in a schema (see sql_names), without a unique key.
    occ_app.occ_loose_keys (id) {
        id -> Integer,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, diesel_occ::Versioned)]
#[diesel(table_name = loose_items)]
pub(crate) struct LooseItem {
    id: i32,
    value: i32,
    #[occ(version)]
    version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, diesel_occ::Versioned)]
#[diesel(table_name = loose_lines, primary_key(order_id, line_no))]
pub(crate) struct LooseLine {
    order_id: i32,
    line_no: i32,
    quantity: i32,
    #[occ(version)]
    version: i32,
}

/// The same table with a token the database assigns (saved on PostgreSQL only, but
/// checked everywhere): its key is checked all the same.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = loose_items)]
pub(crate) struct GeneratedItem {
    id: i32,
    value: i32,
    #[occ(version, generated)]
    version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = occ_loose_keys)]
pub(crate) struct SchemaLooseKey {
    id: i32,
    #[occ(version)]
    version: i32,
}

/// `loose_items` without any index.
pub(crate) const ITEMS: &str = "CREATE TABLE loose_items (id INTEGER NOT NULL, \
     value INTEGER NOT NULL, version INTEGER NOT NULL)";

/// `loose_lines` without any index.
pub(crate) const LINES: &str = "CREATE TABLE loose_lines (order_id INTEGER NOT NULL, \
     line_no INTEGER NOT NULL, quantity INTEGER NOT NULL, version INTEGER NOT NULL)";

/// `loose_lines` keyed on a column of its own (on SQLite, the rowid), not on the
/// entity's key.
pub(crate) const LINES_KEYED_ELSEWHERE: &str = "CREATE TABLE loose_lines \
     (line_id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, line_no INTEGER NOT NULL, \
     quantity INTEGER NOT NULL, version INTEGER NOT NULL)";

/// The schema `occ_app` (shared by the tests on MariaDB, hence `IF NOT EXISTS`) and a
/// table in it without a unique key.
pub(crate) fn schema_table(backend: Backend) -> String {
    let schema = match backend {
        Backend::Postgres => "CREATE SCHEMA occ_app;",
        Backend::Mysql => "CREATE DATABASE IF NOT EXISTS occ_app;",
        Backend::Sqlite => "ATTACH DATABASE ':memory:' AS occ_app;",
    };
    format!(
        "{schema} CREATE TABLE IF NOT EXISTS occ_app.occ_loose_keys \
         (id INTEGER NOT NULL, version INTEGER NOT NULL);"
    )
}

/// A fresh item with key `id`.
pub(crate) fn item(id: i32) -> LooseItem {
    LooseItem {
        id,
        value: 7_361_905,
        version: 0,
    }
}

/// A fresh line with key `(order_id, line_no)`.
pub(crate) fn line(order_id: i32, line_no: i32) -> LooseLine {
    LooseLine {
        order_id,
        line_no,
        quantity: 7_361_905,
        version: 0,
    }
}

/// `name` quoted as the backend quotes identifiers.
fn quoted(backend: Backend, name: &str) -> String {
    match backend {
        Backend::Mysql => format!("`{name}`"),
        Backend::Postgres | Backend::Sqlite => format!("\"{name}\""),
    }
}

/// The DDL the check names for `columns` of `table`: the primary key where the table
/// has none and the backend can add one, a unique index otherwise.
pub(crate) fn expected_fix(backend: Backend, table: &str, columns: &[&str], keyed: bool) -> String {
    let list: Vec<_> = columns.iter().map(|c| quoted(backend, c)).collect();
    let (list, quoted_table) = (list.join(", "), quoted(backend, table));
    if !keyed && backend != Backend::Sqlite {
        format!("ALTER TABLE {quoted_table} ADD PRIMARY KEY ({list})")
    } else {
        let index = quoted(backend, &format!("{table}_{}_key", columns.join("_")));
        format!("CREATE UNIQUE INDEX {index} ON {quoted_table} ({list})")
    }
}

/// Demands exactly one problem, the key `columns` of `table` not kept unique, named
/// with its fix in the message; returns it.
pub(crate) fn assert_unenforced(
    result: Result<(), Error>,
    table: &str,
    columns: &[&str],
) -> UnenforcedKey {
    let error = result.expect_err("a key without a unique index passed the schema check");
    let problems = error.as_schema_problems();
    let problems = problems.unwrap_or_else(|| panic!("expected schema problems, got {error:?}"));
    assert_eq!(problems.len(), 1, "{error}");
    let key = problems[0].as_unenforced_key();
    let key = key.unwrap_or_else(|| panic!("expected a key not kept unique, got {error}"));
    let key = key.clone();
    assert_eq!((key.table, key.columns), (table, columns), "{error}");
    let shown = error.to_string();
    let named = format!("{table} key ({})", columns.join(", "));
    assert!(shown.contains(&named), "the message names the key: {shown}");
    let fix_named = shown.contains(&key.fix);
    assert!(fix_named, "the message names the fix: {shown}");
    key
}

/// Asserts that neither `Display` nor `Debug` of the check's error shows the rows'
/// values or the catalog queries the check ran.
pub(crate) fn assert_no_values_or_queries(error: &Error) {
    let needles = "7361905 SELECT FROM information_schema STATISTICS pg_index pragma";
    for text in [error.to_string(), format!("{error:?} {error:#?}")] {
        for needle in needles.split(' ') {
            let shows = text.contains(needle);
            assert!(!shows, "{needle:?} shows in the error: {text}");
        }
    }
}

on_every_backend!(scenarios);
