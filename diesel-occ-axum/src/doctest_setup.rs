// Shared by the doctests of this crate, included by an absolute path:
//
//     # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//
// It declares a `jobs` table and its entity `Job`, and a SQLite file holding job 1
// ("queued", version 3), opened by `blocking_source()` and, with feature `async`,
// `async_pool()`. The file lives as long as the process.
use diesel::prelude::*;

diesel::table! {
    jobs (id) {
        id -> Integer,
        status -> Text,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, diesel_occ::Versioned)]
#[diesel(table_name = jobs)]
pub struct Job {
    pub id: i32,
    pub status: String,
    #[occ(version)]
    pub version: i32,
}

/// A database file with job 1 at version 3; its URL.
#[allow(dead_code)]
fn jobs_database() -> String {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    let (_, path) = file.keep().expect("keep the file");
    let url = path.to_string_lossy().into_owned();
    let mut conn = SqliteConnection::establish(&url).expect("open the file");
    diesel::connection::SimpleConnection::batch_execute(
        &mut conn,
        "CREATE TABLE jobs (id INTEGER PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL);
         INSERT INTO jobs VALUES (1, 'queued', 3);",
    )
    .expect("the jobs table");
    url
}

/// A blocking connection source on a new jobs database.
#[allow(dead_code)]
fn blocking_source() -> impl Fn() -> ConnectionResult<SqliteConnection> {
    let url = jobs_database();
    move || SqliteConnection::establish(&url)
}

/// A deadpool of async connections on a new jobs database.
#[allow(dead_code)]
async fn async_pool() -> diesel_async::pooled_connection::deadpool::Pool<
    diesel_async::sync_connection_wrapper::SyncConnectionWrapper<SqliteConnection>,
> {
    let manager = diesel_async::pooled_connection::AsyncDieselConnectionManager::new(jobs_database());
    diesel_async::pooled_connection::deadpool::Pool::builder(manager)
        .max_size(2)
        .build()
        .expect("a pool")
}
