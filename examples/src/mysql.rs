//! The apps on MySQL or MariaDB (feature `mysql`: needs the MySQL client library). A URL is `mysql://...`.
//!
//! The apps are the files of `src/apps/`, compiled here for MySQL's connection
//! types; see [`crate::sqlite`].

use diesel::Connection;
use diesel::mysql::MysqlConnection;
use diesel::r2d2::ConnectionManager;
use diesel_async::AsyncMysqlConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

/// The blocking connection the apps use here.
pub type Conn = MysqlConnection;
/// The async connection of the HTTP service (pure-Rust driver).
pub type AsyncConn = AsyncMysqlConnection;
/// A pool of [`Conn`]: what `diesel_occ::blocking::retry` checks connections out of.
pub type Pool = diesel::r2d2::Pool<ConnectionManager<Conn>>;
/// A pool of [`AsyncConn`].
pub type AsyncPool = diesel_async::pooled_connection::deadpool::Pool<AsyncConn>;

/// The migrations of `migrations/mysql/`.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/mysql");

/// Applies the migrations and checks the token columns.
pub fn migrate(url: &str) -> crate::AppResult {
    let mut conn = Conn::establish(url)?;
    conn.run_pending_migrations(MIGRATIONS)?;
    apps::check_token_columns(&mut conn)?;
    Ok(())
}

/// A pool of at most `max_size` connections.
pub fn pool(url: &str, max_size: u32) -> crate::AppResult<Pool> {
    Ok(diesel::r2d2::Pool::builder()
        .max_size(max_size)
        .min_idle(Some(0))
        .build(ConnectionManager::new(url))?)
}

/// A pool of at most `max_size` async connections, handing out the most recently
/// returned connection first. The checkout keeps its test query (`SELECT 1`): nothing
/// else sees that the server closed an idle `AsyncMysqlConnection`.
pub fn async_pool(url: &str, max_size: usize) -> crate::AppResult<AsyncPool> {
    let manager = AsyncDieselConnectionManager::new(url);
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
