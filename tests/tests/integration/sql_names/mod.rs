//! Tables and token columns are named by their SQL names, as `table!` declares them: a
//! `#[sql_name = "..."]` on the table or the token column, and a schema
//! (`occ_app.table`: a PostgreSQL schema, a MariaDB database, an attached SQLite
//! database). The start-up schema check reads those columns, and conflicts and the
//! hot-row memory name the table by its SQL name.

use diesel::prelude::{Queryable, Selectable};
use diesel_occ_tests::Backend;

diesel::table! {
    /// Both names differ from the SQL ones.
    #[sql_name = "occ_named_items"]
    named_items (id) {
        id -> Integer,
        #[sql_name = "row_version"]
        version -> BigInt,
    }
}

diesel::table! {
    /// The same SQL table under its own name: the same rows.
    occ_named_items (id) {
        id -> Integer,
        row_version -> BigInt,
    }
}

diesel::table! {
    /// A token column of the wrong kind, under other Rust names.
    #[sql_name = "occ_named_bad"]
    named_bad (id) {
        id -> Integer,
        #[sql_name = "row_version"]
        version -> BigInt,
    }
}

diesel::table! {
    /// A table in a schema; a table of the same name in the default schema has a token
    /// column of the wrong kind.
    occ_app.occ_schema_items (id) {
        id -> Integer,
        version -> BigInt,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = named_items)]
pub(crate) struct NamedItem {
    id: i32,
    #[occ(version)]
    version: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = occ_named_items)]
pub(crate) struct SameItem {
    id: i32,
    #[occ(version)]
    row_version: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = named_bad)]
pub(crate) struct BadItem {
    id: i32,
    #[occ(version)]
    version: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = occ_schema_items)]
pub(crate) struct SchemaItem {
    id: i32,
    #[occ(version)]
    version: i64,
}

/// The tables, on `backend`: the schema `occ_app` is a schema of the test's own
/// database on PostgreSQL, a database of the server on MariaDB (shared by the tests,
/// hence `IF NOT EXISTS`), and an attached in-memory database on SQLite.
pub(crate) fn create(backend: Backend) -> String {
    let tables = "CREATE TABLE occ_named_items (id INTEGER PRIMARY KEY, row_version BIGINT NOT NULL); \
         CREATE TABLE occ_named_bad (id INTEGER PRIMARY KEY, row_version VARCHAR(20) NOT NULL); \
         CREATE TABLE occ_schema_items (id INTEGER PRIMARY KEY, version VARCHAR(20) NOT NULL); \
         INSERT INTO occ_named_items VALUES (1, 1);";
    let schema = match backend {
        Backend::Postgres => "CREATE SCHEMA occ_app;",
        Backend::Mysql => "CREATE DATABASE IF NOT EXISTS occ_app;",
        Backend::Sqlite => "ATTACH DATABASE ':memory:' AS occ_app;",
    };
    format!(
        "{tables} {schema} CREATE TABLE IF NOT EXISTS occ_app.occ_schema_items \
         (id INTEGER PRIMARY KEY, version BIGINT NOT NULL);"
    )
}

/// What the start-up check reports: only the column of the wrong kind, by its SQL
/// names, with the DDL that changes it in the message. Returns that DDL.
pub(crate) fn assert_reported(result: Result<(), diesel_occ::Error>) -> String {
    let error = result.unwrap_err();
    let problems = error.as_schema_problems().expect("schema problems");
    assert_eq!(problems.len(), 1, "{error}");
    let problem = problems[0]
        .as_token_column()
        .unwrap_or_else(|| panic!("a token column problem: {error}"));
    let names = (problem.schema, problem.table, problem.column);
    assert_eq!(names, (None, "occ_named_bad", "row_version"), "{error}");
    assert!(problem.found.is_some(), "the column exists: {error}");
    let fix = problem.fix.clone().expect("a fix");
    let by_sql_names = fix.contains("occ_named_bad") && fix.contains("row_version");
    assert!(by_sql_names, "the fix names it by its SQL names: {fix}");
    let message = error.to_string();
    let names_the_fix = message.ends_with(&format!("; change it with: {fix}"));
    assert!(names_the_fix, "the message names the fix: {error}");
    fix
}

on_every_backend!(scenarios);
