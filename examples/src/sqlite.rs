//! The apps on SQLite, embedded: nothing to install. A URL is a file path.
//!
//! Every app below is written for one connection type, [`Conn`] (and [`AsyncConn`] for
//! the HTTP service), as an application is. The same files are compiled for
//! [`crate::postgres`] and `crate::mysql`, so the tests run them on every backend.

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection};
use diesel::sqlite::SqliteConnection;
use diesel::{Connection, ConnectionError};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

/// The blocking connection the apps use here.
pub type Conn = SqliteConnection;
/// The async connection of the HTTP service: Diesel's SQLite driver on a blocking thread.
pub type AsyncConn = SyncConnectionWrapper<SqliteConnection>;
/// A pool of [`Conn`]: what `diesel_occ::blocking::retry` checks connections out of.
pub type Pool = diesel::r2d2::Pool<ConnectionManager<Conn>>;
/// A pool of [`AsyncConn`].
pub type AsyncPool = diesel_async::pooled_connection::deadpool::Pool<AsyncConn>;

/// The migrations of `migrations/sqlite/`.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/sqlite");

/// What every connection runs first: writers wait for the file lock instead of failing
/// at once with "database is locked".
const SETUP: &str = "PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;";

/// Creates the file (and its folder), switches it to WAL so readers and one writer run
/// side by side, applies the migrations and checks the token columns.
pub fn migrate(path: &str) -> crate::AppResult {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut conn = Conn::establish(path)?;
    conn.batch_execute(SETUP)?;
    conn.batch_execute("PRAGMA journal_mode = WAL;")?;
    conn.run_pending_migrations(MIGRATIONS)?;
    apps::check_token_columns(&mut conn)?;
    Ok(())
}

/// A pool of at most `max_size` connections to the file at `path`.
pub fn pool(path: &str, max_size: u32) -> crate::AppResult<Pool> {
    Ok(diesel::r2d2::Pool::builder()
        .max_size(max_size)
        .min_idle(Some(0))
        .connection_customizer(Box::new(Setup))
        .build(ConnectionManager::new(path))?)
}

#[derive(Debug)]
struct Setup;

impl CustomizeConnection<Conn, diesel::r2d2::Error> for Setup {
    fn on_acquire(&self, conn: &mut Conn) -> Result<(), diesel::r2d2::Error> {
        conn.batch_execute(SETUP)
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// A pool of at most `max_size` async connections to the file at `path`, set up as
/// diesel-occ's async module recommends: no test query at checkout, the most recently
/// returned connection handed out first.
pub fn async_pool(path: &str, max_size: usize) -> crate::AppResult<AsyncPool> {
    let mut config = ManagerConfig::<AsyncConn>::default();
    config.recycling_method = RecyclingMethod::Fast;
    config.custom_setup = Box::new(|url| {
        let url = url.to_owned();
        Box::pin(async move {
            let mut conn = AsyncConn::establish(&url).await?;
            conn.batch_execute(SETUP)
                .await
                .map_err(ConnectionError::CouldntSetupConfiguration)?;
            Ok(conn)
        })
    });
    let manager = AsyncDieselConnectionManager::new_with_config(path, config);
    Ok(AsyncPool::builder(manager)
        .max_size(max_size)
        .queue_mode(deadpool::managed::QueueMode::Lifo)
        .build()?)
}

// The same files for every backend, each time for this module's connection types.
#[allow(clippy::duplicate_mod)]
#[path = "apps/mod.rs"]
mod apps;

pub use apps::{claims, demo, http, inventory, seat, tracked};
