//! The apps on PostgreSQL (libpq is compiled in). A URL is `postgres://...`.
//!
//! The apps are the files of `src/apps/`, compiled here for PostgreSQL's connection
//! types; see [`crate::sqlite`].

use diesel::Connection;
use diesel::pg::PgConnection;
use diesel::r2d2::ConnectionManager;
use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

/// The blocking connection the apps use here.
pub type Conn = PgConnection;
/// The async connection of the HTTP service (pure-Rust driver).
pub type AsyncConn = AsyncPgConnection;
/// A pool of [`Conn`]: what `diesel_occ::blocking::retry` checks connections out of.
pub type Pool = diesel::r2d2::Pool<ConnectionManager<Conn>>;
/// A pool of [`AsyncConn`].
pub type AsyncPool = diesel_async::pooled_connection::deadpool::Pool<AsyncConn>;

/// The migrations of `migrations/postgres/`.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/postgres");

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

/// A pool of at most `max_size` async connections, set up as diesel-occ's async module
/// recommends: [`async_manager_config`], and the most recently returned connection
/// handed out first.
pub fn async_pool(url: &str, max_size: usize) -> crate::AppResult<AsyncPool> {
    async_pool_with(url, max_size, async_manager_config())
}

/// [`async_pool`] with the connections made by `config` (for instance, with
/// instrumentation added to [`async_manager_config`]'s).
pub fn async_pool_with(
    url: &str,
    max_size: usize,
    config: ManagerConfig<AsyncConn>,
) -> crate::AppResult<AsyncPool> {
    let manager = AsyncDieselConnectionManager::new_with_config(url, config);
    Ok(AsyncPool::builder(manager)
        .max_size(max_size)
        .queue_mode(deadpool::managed::QueueMode::Lifo)
        .build()?)
}

/// No test query at checkout (`RecyclingMethod::Fast`): diesel-async's default runs
/// `SELECT 1` at every checkout, one more round trip per request. A connection whose
/// socket is closed, or with an open or broken transaction, is still refused.
pub fn async_manager_config() -> ManagerConfig<AsyncConn> {
    let mut config = ManagerConfig::default();
    config.recycling_method = RecyclingMethod::Fast;
    config
}

// The same files for every backend, each time for this module's connection types.
#[allow(clippy::duplicate_mod)]
#[path = "apps/mod.rs"]
mod apps;

pub use apps::{claims, demo, http, inventory, seat, tracked};
