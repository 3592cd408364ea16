//! A fresh, migrated database per test, dropped when the test ends: [`TestDb`] for
//! blocking connections, [`AsyncTestDb`] for diesel-async ones.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use diesel::connection::Connection;
use diesel::pg::PgConnection;
use diesel::sqlite::SqliteConnection;
use diesel::{ConnectionError, ConnectionResult, RunQueryDsl, sql_query};
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncMysqlConnection, AsyncPgConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::backend::{Backend, redact, with_database};

pub(crate) const POSTGRES_MIGRATIONS: EmbeddedMigrations =
    embed_migrations!("../migrations/postgres");
pub(crate) const MYSQL_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/mysql");
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/sqlite");

/// A connection type the suite runs on.
pub trait TestConnection: Connection + MigrationHarness<Self::Backend> + Send + 'static {
    /// Which backend this is.
    const BACKEND: Backend;
    /// This backend's migrations.
    const MIGRATIONS: EmbeddedMigrations;
    /// Statements that give a connection an identity [`TestConnection::CONNECTION_ID`]
    /// reads back: nothing on a server (it has its own ids), a random number in a TEMP
    /// table on SQLite (one per connection).
    const IDENTITY_SETUP: &'static str;
    /// The query that returns this connection's identity as a BIGINT.
    const CONNECTION_ID: &'static str;

    /// Per-connection settings every test connection gets.
    fn configure(&mut self) {}
}

impl TestConnection for PgConnection {
    const BACKEND: Backend = Backend::Postgres;
    const MIGRATIONS: EmbeddedMigrations = POSTGRES_MIGRATIONS;
    const IDENTITY_SETUP: &'static str = "SET application_name = 'diesel-occ-tests'";
    const CONNECTION_ID: &'static str = "pg_backend_pid()::bigint";

    fn configure(&mut self) {
        // Error assertions must not depend on the server's locale.
        sql_query("SET lc_messages TO 'C'")
            .execute(self)
            .expect("set lc_messages");
    }
}

#[cfg(feature = "mysql")]
impl TestConnection for diesel::mysql::MysqlConnection {
    const BACKEND: Backend = Backend::Mysql;
    const MIGRATIONS: EmbeddedMigrations = MYSQL_MIGRATIONS;
    const IDENTITY_SETUP: &'static str = "SET @occ_test = 1";
    const CONNECTION_ID: &'static str = "CAST(CONNECTION_ID() AS SIGNED)";
}

impl TestConnection for SqliteConnection {
    const BACKEND: Backend = Backend::Sqlite;
    const MIGRATIONS: EmbeddedMigrations = SQLITE_MIGRATIONS;
    const IDENTITY_SETUP: &'static str = "CREATE TEMP TABLE occ_connection (id BIGINT NOT NULL); \
         INSERT INTO occ_connection VALUES (abs(random()))";
    const CONNECTION_ID: &'static str = "(SELECT id FROM occ_connection)";

    fn configure(&mut self) {
        // Writers wait for the file lock instead of failing with SQLITE_BUSY at once.
        sql_query("PRAGMA busy_timeout = 10000")
            .execute(self)
            .expect("set busy_timeout");
    }
}

/// One test's database: a database on the server, or a SQLite file in a temp dir.
#[derive(Debug)]
pub struct TestDb<C: TestConnection> {
    url: String,
    server: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
    _conn: std::marker::PhantomData<fn() -> C>,
}

impl<C: TestConnection> TestDb<C> {
    /// A fresh migrated database for `test`; `None` (after a SKIPPED line on stderr)
    /// when the backend's server is unreachable and not required.
    pub fn create(test: &str) -> Option<Self> {
        let db: Self = match C::BACKEND.server_url() {
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let path = dir.path().join(format!("{}.sqlite3", sanitize(test)));
                let url = path.to_str().expect("utf-8 temp path").to_owned();
                let mut conn = C::establish(&url).expect("open SQLite file");
                conn.batch_execute("PRAGMA journal_mode = WAL")
                    .expect("WAL mode");
                TestDb {
                    url,
                    server: None,
                    _dir: Some(dir),
                    _conn: std::marker::PhantomData,
                }
            }
            Some(server) => {
                let mut admin = admin_connection::<C>(&server, test)?;
                let name = database_name(test);
                admin
                    .batch_execute(&format!("CREATE DATABASE {name}"))
                    .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
                TestDb {
                    url: with_database(&server, &name),
                    server: Some((server, name)),
                    _dir: None,
                    _conn: std::marker::PhantomData,
                }
            }
        };
        let mut conn = db.conn();
        conn.run_pending_migrations(C::MIGRATIONS)
            .unwrap_or_else(|e| panic!("{} migrations: {e}", C::BACKEND));
        Some(db)
    }

    /// A new connection to this database.
    pub fn conn(&self) -> C {
        let mut conn = C::establish(&self.url)
            .unwrap_or_else(|e| panic!("connect to {}: {e}", redact(&self.url)));
        conn.configure();
        conn
    }

    /// The database URL (SQLite: the file path).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl<C: TestConnection> Drop for TestDb<C> {
    fn drop(&mut self) {
        let Some((server, name)) = &self.server else {
            return;
        };
        let drop = match C::BACKEND {
            Backend::Postgres => format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            _ => format!("DROP DATABASE IF EXISTS {name}"),
        };
        // Best effort: a failed drop leaves a database behind, never fails a test.
        if let Ok(mut admin) = C::establish(server) {
            let _ = admin.batch_execute(&drop);
        }
    }
}

/// Connects to the server, or decides between SKIPPED and a failure.
fn admin_connection<C: TestConnection>(server: &str, test: &str) -> Option<C> {
    static UNREACHABLE: [OnceLock<String>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = &UNREACHABLE[C::BACKEND as usize];
    if slot.get().is_none() {
        match C::establish(server) {
            Ok(conn) => return Some(conn),
            Err(error) => {
                let _ = slot.set(format!("not reachable at {}: {error}", redact(server)));
            }
        }
    }
    let reason = slot.get().expect("set above");
    if C::BACKEND.is_required() {
        panic!("{} is required (OCC_REQUIRE) but {reason}", C::BACKEND);
    }
    eprintln!("SKIPPED {} {test}: {reason}", C::BACKEND);
    None
}

pub(crate) fn database_name(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let mut stem = sanitize(test);
    stem.truncate(32);
    format!(
        "occ_{stem}_{}_{}",
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

/// An async (diesel-async) connection type the suite runs on.
pub trait AsyncTestConnection:
    diesel_async::AsyncConnection + diesel_async::pooled_connection::PoolableConnection + Send + 'static
{
    /// Which backend this is.
    const BACKEND: Backend;
    /// The backend's migrations.
    const MIGRATIONS: EmbeddedMigrations;
    /// Statements every test connection runs first. Every connection also gets an
    /// identity the tests can read back with [`AsyncTestConnection::CONNECTION_ID`]: the
    /// server's own connection id, or on SQLite a random number in a TEMP table.
    const SETUP: &'static str;
    /// The query that returns this connection's identity as a BIGINT.
    const CONNECTION_ID: &'static str;
    /// Makes this session give up on a row lock (or SQLite's write lock) quickly.
    const SHORT_LOCK_WAIT: &'static str;
    /// A statement the server works on for a while (about 300 ms or more).
    const SLOW_STATEMENT: &'static str;
}

impl AsyncTestConnection for AsyncPgConnection {
    const BACKEND: Backend = Backend::Postgres;
    const MIGRATIONS: EmbeddedMigrations = POSTGRES_MIGRATIONS;
    const SETUP: &'static str = "SET lc_messages TO 'C'";
    const CONNECTION_ID: &'static str = "pg_backend_pid()::bigint";
    const SHORT_LOCK_WAIT: &'static str = "SET lock_timeout = '200ms'";
    const SLOW_STATEMENT: &'static str = "SELECT pg_sleep(0.3)";
}

impl AsyncTestConnection for AsyncMysqlConnection {
    const BACKEND: Backend = Backend::Mysql;
    const MIGRATIONS: EmbeddedMigrations = MYSQL_MIGRATIONS;
    const SETUP: &'static str = "SET SESSION innodb_lock_wait_timeout = 50";
    const CONNECTION_ID: &'static str = "CAST(CONNECTION_ID() AS SIGNED)";
    const SHORT_LOCK_WAIT: &'static str = "SET SESSION innodb_lock_wait_timeout = 1";
    const SLOW_STATEMENT: &'static str = "SELECT SLEEP(0.3)";
}

impl AsyncTestConnection for SyncConnectionWrapper<SqliteConnection> {
    const BACKEND: Backend = Backend::Sqlite;
    const MIGRATIONS: EmbeddedMigrations = SQLITE_MIGRATIONS;
    const SETUP: &'static str = "PRAGMA busy_timeout = 10000; \
         CREATE TEMP TABLE occ_connection (id BIGINT NOT NULL); \
         INSERT INTO occ_connection VALUES (abs(random()))";
    const CONNECTION_ID: &'static str = "(SELECT id FROM occ_connection)";
    const SHORT_LOCK_WAIT: &'static str = "PRAGMA busy_timeout = 0";
    const SLOW_STATEMENT: &'static str = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL \
         SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c";
}

/// Opens an async connection and runs the backend's [`AsyncTestConnection::SETUP`].
pub async fn connect_async<C: AsyncTestConnection>(url: &str) -> ConnectionResult<C> {
    let mut conn = C::establish(url).await?;
    conn.batch_execute(C::SETUP)
        .await
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// One test's database for async connections: a database on the server, or a SQLite
/// file in a temp dir; dropped when the test ends.
#[derive(Debug)]
pub struct AsyncTestDb<C: AsyncTestConnection> {
    url: String,
    server: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
    _conn: std::marker::PhantomData<fn() -> C>,
}

impl<C: AsyncTestConnection> AsyncTestDb<C> {
    /// A fresh migrated database for `test`; `None` (after a SKIPPED line on stderr)
    /// when the backend's server is unreachable and not required. Call it on a
    /// runtime of either flavour (the migrations run on a thread of their own).
    pub async fn create(test: &str) -> Option<Self>
    where
        AsyncConnectionWrapper<C>: MigrationHarness<C::Backend>,
    {
        let db = match C::BACKEND.server_url() {
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let path = dir.path().join(format!("{}.sqlite3", sanitize(test)));
                let url = path.to_str().expect("utf-8 temp path").to_owned();
                let mut conn = C::establish(&url).await.expect("open SQLite file");
                conn.batch_execute("PRAGMA journal_mode = WAL")
                    .await
                    .expect("WAL mode");
                AsyncTestDb {
                    url,
                    server: None,
                    _dir: Some(dir),
                    _conn: std::marker::PhantomData,
                }
            }
            Some(server) => {
                let mut admin = match C::establish(&server).await {
                    Ok(admin) => admin,
                    Err(error) => {
                        let reason = format!("not reachable at {}: {error}", redact(&server));
                        if C::BACKEND.is_required() {
                            panic!("{} is required (OCC_REQUIRE) but {reason}", C::BACKEND);
                        }
                        eprintln!("SKIPPED {} {test}: {reason}", C::BACKEND);
                        return None;
                    }
                };
                let name = database_name(test);
                admin
                    .batch_execute(&format!("CREATE DATABASE {name}"))
                    .await
                    .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
                AsyncTestDb {
                    url: with_database(&server, &name),
                    server: Some((server, name)),
                    _dir: None,
                    _conn: std::marker::PhantomData,
                }
            }
        };
        // Through a blocking wrapper on a thread of its own, so that any runtime flavour
        // can create a database.
        let url = db.url.clone();
        std::thread::spawn(move || {
            let mut conn = AsyncConnectionWrapper::<C>::establish(&url)
                .unwrap_or_else(|e| panic!("connect to {}: {e}", redact(&url)));
            conn.run_pending_migrations(C::MIGRATIONS)
                .map(drop)
                .unwrap_or_else(|e| panic!("{} migrations: {e}", C::BACKEND));
        })
        .join()
        .expect("migrations panicked");
        Some(db)
    }

    /// A new connection to this database, set up with [`AsyncTestConnection::SETUP`].
    pub async fn conn(&self) -> C {
        connect_async(&self.url)
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", redact(&self.url)))
    }

    /// The database URL (SQLite: the file path).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl<C: AsyncTestConnection> Drop for AsyncTestDb<C> {
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
