// Shared by the doctests of the tracked, batch and aggregate APIs
// (`# include!("tracked_doctest_setup.rs");`): an in-memory SQLite database with
// `article` 1 ("Title", "Body", version 1) and `stock` 1 (10 available, version 1).
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

diesel::table! {
    article (id) {
        id -> Integer,
        title -> Text,
        body -> Text,
        version -> Integer,
    }
}

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        deleted -> Bool,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = article)]
#[occ(track)]
pub struct Article {
    pub id: i32,
    pub title: String,
    pub body: String,
    #[occ(version)]
    pub version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    pub deleted: bool,
    #[occ(version)]
    pub version: i32,
}

#[allow(dead_code)]
fn connection() -> SqliteConnection {
    let mut conn = SqliteConnection::establish(":memory:").expect("in-memory SQLite");
    diesel::connection::SimpleConnection::batch_execute(
        &mut conn,
        "CREATE TABLE article (id INTEGER PRIMARY KEY, title TEXT NOT NULL, \
             body TEXT NOT NULL, version INTEGER NOT NULL);
         INSERT INTO article VALUES (1, 'Title', 'Body', 1);
         CREATE TABLE stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL, \
             deleted BOOLEAN NOT NULL DEFAULT FALSE, version INTEGER NOT NULL);
         INSERT INTO stock VALUES (1, 10, FALSE, 1), (2, 20, FALSE, 1);",
    )
    .expect("create tables");
    conn
}
