// Shared by the race doctests (`# include!("doctest_setup.rs");`): a `concerts` table
// in a temporary SQLite file, with one concert (id 1) that has one seat left.
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

diesel::table! {
    concerts (id) {
        id -> Integer,
        seats_left -> Integer,
        version -> Integer,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, diesel_occ::Versioned)]
#[diesel(table_name = concerts)]
pub struct Concert {
    pub id: i32,
    pub seats_left: i32,
    #[occ(version)]
    pub version: i32,
}

/// The database's URL, and the directory that holds it until it is dropped.
#[allow(dead_code)]
fn concert_database() -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = dir.path().join("concerts.db").display().to_string();
    let mut conn = SqliteConnection::establish(&url).expect("create the database");
    diesel::sql_query(
        "CREATE TABLE concerts (id INTEGER PRIMARY KEY, \
         seats_left INTEGER NOT NULL CHECK (seats_left >= 0), version INTEGER NOT NULL)",
    )
    .execute(&mut conn)
    .expect("create table");
    diesel::sql_query("INSERT INTO concerts VALUES (1, 1, 1)")
        .execute(&mut conn)
        .expect("insert row");
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
