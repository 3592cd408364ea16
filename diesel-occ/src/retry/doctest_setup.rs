// Shared by the retry doctests (`# include!("doctest_setup.rs");`): a `stock` table in a
// named in-memory SQLite database that several connections share, with one row
// (id 1, 10 available, version 1).
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable, diesel_occ::Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    #[occ(version)]
    pub version: i32,
}

/// The database's URL, and a connection that keeps it alive until it is dropped.
#[allow(dead_code)]
fn shared_database(name: &str) -> (String, SqliteConnection) {
    let url = format!("file:{name}?mode=memory&cache=shared");
    let mut keeper = SqliteConnection::establish(&url).expect("shared in-memory SQLite");
    diesel::sql_query(
        "CREATE TABLE stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL \
         CHECK (available >= 0), version INTEGER NOT NULL)",
    )
    .execute(&mut keeper)
    .expect("create table");
    diesel::sql_query("INSERT INTO stock VALUES (1, 10, 1)")
        .execute(&mut keeper)
        .expect("insert row");
    (url, keeper)
}
