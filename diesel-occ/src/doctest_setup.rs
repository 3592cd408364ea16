// Shared by the doctests (`# include!("doctest_setup.rs");`): an in-memory SQLite
// database with one `stock` row (id 1, 10 available, version 1).
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Identifiable, diesel_occ::Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    #[occ(version)]
    pub version: i32,
}

#[allow(dead_code)]
fn connection() -> SqliteConnection {
    let mut conn = SqliteConnection::establish(":memory:").expect("in-memory SQLite");
    diesel::sql_query(
        "CREATE TABLE stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL \
         CHECK (available >= 0), version INTEGER NOT NULL)",
    )
    .execute(&mut conn)
    .expect("create table");
    diesel::sql_query("INSERT INTO stock VALUES (1, 10, 1)")
        .execute(&mut conn)
        .expect("insert row");
    conn
}
