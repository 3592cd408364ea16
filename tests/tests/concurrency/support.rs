//! What the concurrency tests share: a fresh database per test for async connections,
//! deadpool pools whose connections say who they are, and the per-backend SQL the
//! tests need.

use std::sync::atomic::{AtomicUsize, Ordering};

use diesel::{ConnectionError, ConnectionResult};
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{
    AsyncConnection, AsyncMigrationHarness, AsyncMysqlConnection, AsyncPgConnection,
};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use diesel_occ_tests::Backend;
use diesel_occ_tests::backend::{redact, with_database};

/// An async connection type the suite runs on.
pub(crate) trait AsyncTestConn:
    AsyncConnection + diesel_async::pooled_connection::PoolableConnection + Send + 'static
{
    /// Which backend this is.
    const BACKEND: Backend;
    /// The backend's migrations.
    const MIGRATIONS: EmbeddedMigrations;
    /// Statements every test connection runs first. Every connection also gets an
    /// identity the tests can read back with [`connection_id_sql`]: the server's own
    /// connection id, or on SQLite a random number in a TEMP table (one per connection).
    const SETUP: &'static str;
    /// The query that returns this connection's identity as a BIGINT.
    const CONNECTION_ID: &'static str;
    /// Makes this session give up on a row lock (or SQLite's write lock) quickly.
    const SHORT_LOCK_WAIT: &'static str;
    /// A statement the server works on for a while (about 300 ms or more).
    const SLOW_STATEMENT: &'static str;
}

impl AsyncTestConn for AsyncPgConnection {
    const BACKEND: Backend = Backend::Postgres;
    const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/postgres");
    const SETUP: &'static str = "SET lc_messages TO 'C'";
    const CONNECTION_ID: &'static str = "pg_backend_pid()::bigint";
    const SHORT_LOCK_WAIT: &'static str = "SET lock_timeout = '200ms'";
    const SLOW_STATEMENT: &'static str = "SELECT pg_sleep(0.3)";
}

impl AsyncTestConn for AsyncMysqlConnection {
    const BACKEND: Backend = Backend::Mysql;
    const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/mysql");
    const SETUP: &'static str = "SET SESSION innodb_lock_wait_timeout = 50";
    const CONNECTION_ID: &'static str = "CAST(CONNECTION_ID() AS SIGNED)";
    const SHORT_LOCK_WAIT: &'static str = "SET SESSION innodb_lock_wait_timeout = 1";
    const SLOW_STATEMENT: &'static str = "SELECT SLEEP(0.3)";
}

impl AsyncTestConn for SyncConnectionWrapper<diesel::SqliteConnection> {
    const BACKEND: Backend = Backend::Sqlite;
    const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/sqlite");
    const SETUP: &'static str = "PRAGMA busy_timeout = 10000; \
         CREATE TEMP TABLE occ_connection (id BIGINT NOT NULL); \
         INSERT INTO occ_connection VALUES (abs(random()))";
    const CONNECTION_ID: &'static str = "(SELECT id FROM occ_connection)";
    const SHORT_LOCK_WAIT: &'static str = "PRAGMA busy_timeout = 0";
    const SLOW_STATEMENT: &'static str = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL \
         SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c";
}

/// Opens a configured connection.
pub(crate) async fn connect<C: AsyncTestConn>(url: &str) -> ConnectionResult<C> {
    let mut conn = C::establish(url).await?;
    conn.batch_execute(C::SETUP)
        .await
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// One test's database, for async connections; dropped when the test ends.
pub(crate) struct AsyncDb<C: AsyncTestConn> {
    url: String,
    server: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
    _conn: std::marker::PhantomData<fn() -> C>,
}

impl<C: AsyncTestConn> AsyncDb<C> {
    /// A fresh migrated database; `None` after a SKIPPED line when the server is not
    /// reachable and not required. Call it on a multi-threaded runtime (the migrations
    /// block in place).
    pub(crate) async fn create(test: &str) -> Option<Self>
    where
        AsyncMigrationHarness<C>: MigrationHarness<C::Backend>,
    {
        interested_everywhere();
        let db = match C::BACKEND.server_url() {
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let path = dir.path().join(format!("{}.sqlite3", sanitize(test)));
                let url = path.to_str().expect("utf-8 temp path").to_owned();
                let mut conn = C::establish(&url).await.expect("open SQLite file");
                conn.batch_execute("PRAGMA journal_mode = WAL")
                    .await
                    .expect("WAL");
                AsyncDb {
                    url,
                    server: None,
                    _dir: Some(dir),
                    _conn: std::marker::PhantomData,
                }
            }
            Some(server) => {
                let mut admin = match C::establish(&server).await {
                    Ok(admin) => admin,
                    Err(error) if !C::BACKEND.is_required() => {
                        eprintln!(
                            "SKIPPED {} {test}: not reachable at {}: {error}",
                            C::BACKEND,
                            redact(&server)
                        );
                        return None;
                    }
                    Err(error) => panic!(
                        "{} is required (OCC_REQUIRE) but not reachable at {}: {error}",
                        C::BACKEND,
                        redact(&server)
                    ),
                };
                let name = database_name(test);
                admin
                    .batch_execute(&format!("CREATE DATABASE {name}"))
                    .await
                    .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
                AsyncDb {
                    url: with_database(&server, &name),
                    server: Some((server, name)),
                    _dir: None,
                    _conn: std::marker::PhantomData,
                }
            }
        };
        let conn = C::establish(&db.url).await.expect("connect to migrate");
        let mut harness = AsyncMigrationHarness::new(conn);
        harness
            .run_pending_migrations(C::MIGRATIONS)
            .unwrap_or_else(|e| panic!("{} migrations: {e}", C::BACKEND));
        Some(db)
    }

    /// A new configured connection.
    pub(crate) async fn conn(&self) -> C {
        connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", redact(&self.url)))
    }

    /// The database URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

impl<C: AsyncTestConn> Drop for AsyncDb<C> {
    fn drop(&mut self) {
        let Some((server, name)) = self.server.take() else {
            return;
        };
        let drop = match C::BACKEND {
            Backend::Postgres => format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            _ => format!("DROP DATABASE IF EXISTS {name}"),
        };
        // Best effort, on a thread of its own: Drop may run inside a runtime.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                if let Ok(mut admin) = C::establish(&server).await {
                    let _ = admin.batch_execute(&drop).await;
                }
            });
        })
        .join();
    }
}

fn database_name(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let mut stem = sanitize(test);
    stem.truncate(32);
    format!(
        "occ_c_{stem}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn sanitize(test: &str) -> String {
    test.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Installs, once per process, a global subscriber that is interested in every callsite
/// and keeps nothing.
///
/// `tracing` caches each callsite's interest process-wide. Without a global subscriber,
/// a span first hit by a test that captures nothing can be cached as "never" while
/// another test's capturing subscriber is being registered, and that test then sees
/// its events outside their `occ.attempt` span. With this one installed no callsite is
/// ever "never", so each thread's scoped subscriber alone decides what it records.
pub(crate) fn interested_everywhere() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Another global subscriber already keeps every callsite alive just as well.
        let _ = tracing::subscriber::set_global_default(Interested);
    });
}

/// The subscriber [`interested_everywhere`] installs.
struct Interested;

impl tracing::Subscriber for Interested {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::always()
    }

    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}
