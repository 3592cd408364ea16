// Shared by every doctest of this crate and of its guide, included by an absolute path
// so that it does not matter where the doc comment lives:
//
//     # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//
// It declares three tables and their entities, and opens databases that hold them:
// - `stock`: id 1 (10 available) and id 2 (20 available), both at version 1, not
//   deleted; `available` may not go below zero;
// - `article` (tracked): id 1 ("Title", "Body", version 1);
// - `concerts`: id 1 with one seat left, version 1; `seats_left` may not go below zero.
//
// `connection()` opens a private in-memory database, `shared_database(name)` one that
// several connections share, `concert_database()` a temporary file for races.
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        deleted -> Bool,
        version -> Integer,
    }
}

diesel::table! {
    article (id) {
        id -> Integer,
        title -> Text,
        body -> Text,
        version -> Integer,
    }
}

diesel::table! {
    concerts (id) {
        id -> Integer,
        seats_left -> Integer,
        version -> Integer,
    }
}

#[derive(
    Debug, Clone, PartialEq, Queryable, Selectable, Identifiable, Insertable, diesel_occ::Versioned,
)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    pub deleted: bool,
    #[occ(version)]
    pub version: i32,
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

#[derive(Debug, Queryable, Selectable, Identifiable, diesel_occ::Versioned)]
#[diesel(table_name = concerts)]
pub struct Concert {
    pub id: i32,
    pub seats_left: i32,
    #[occ(version)]
    pub version: i32,
}

/// The tables and rows every database of the doctests starts with.
#[allow(dead_code)]
const SCHEMA: &str = "
    CREATE TABLE stock (id INTEGER PRIMARY KEY, \
        available INTEGER NOT NULL CHECK (available >= 0), \
        deleted BOOLEAN NOT NULL DEFAULT FALSE, version INTEGER NOT NULL);
    INSERT INTO stock VALUES (1, 10, FALSE, 1), (2, 20, FALSE, 1);
    CREATE TABLE article (id INTEGER PRIMARY KEY, title TEXT NOT NULL, \
        body TEXT NOT NULL, version INTEGER NOT NULL);
    INSERT INTO article VALUES (1, 'Title', 'Body', 1);
    CREATE TABLE concerts (id INTEGER PRIMARY KEY, \
        seats_left INTEGER NOT NULL CHECK (seats_left >= 0), version INTEGER NOT NULL);
    INSERT INTO concerts VALUES (1, 1, 1);
";

/// Opens `url` and creates the tables and rows of [`SCHEMA`] in it.
#[allow(dead_code)]
fn create_database(url: &str) -> SqliteConnection {
    let mut conn = SqliteConnection::establish(url).expect("open SQLite");
    diesel::connection::SimpleConnection::batch_execute(&mut conn, SCHEMA)
        .expect("create the tables");
    conn
}

/// A private in-memory database.
#[allow(dead_code)]
fn connection() -> SqliteConnection {
    create_database(":memory:")
}

/// The URL of an in-memory database that several connections share, and a connection
/// that keeps it alive until it is dropped.
#[allow(dead_code)]
fn shared_database(name: &str) -> (String, SqliteConnection) {
    let url = format!("file:{name}?mode=memory&cache=shared");
    let keeper = create_database(&url);
    (url, keeper)
}

/// The path of a database in a temporary file (races need connections that see each
/// other's commits), and the directory that holds it until it is dropped.
#[allow(dead_code)]
fn concert_database() -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = dir.path().join("concerts.db").display().to_string();
    drop(create_database(&url));
    (url, dir)
}

/// Makes an async SQLite connection wait for another writer's lock instead of failing
/// with "database is locked".
#[allow(dead_code)]
async fn busy_timeout(
    conn: &mut diesel_async::sync_connection_wrapper::SyncConnectionWrapper<SqliteConnection>,
) {
    diesel_async::RunQueryDsl::execute(diesel::sql_query("PRAGMA busy_timeout = 5000"), conn)
        .await
        .expect("set the busy timeout");
}
