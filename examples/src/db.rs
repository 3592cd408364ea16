//! Where the apps' data lives: a database URL (or a SQLite file) turned into a migrated
//! connection on one of three backends.
//!
//! Every app runs its scenario through [`AnyConnection`], Diesel's
//! [`MultiConnection`](diesel::MultiConnection): the same typed queries and the same
//! checked saves run on PostgreSQL, MySQL/MariaDB (feature `mysql`) and SQLite.

use std::fmt;
use std::path::{Path, PathBuf};

use diesel::connection::SimpleConnection;
use diesel::{Connection, ConnectionError};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

/// The migrations of `migrations/postgres/`, foundation and examples alike.
pub const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/postgres");
/// The migrations of `migrations/mysql/`.
#[cfg(feature = "mysql")]
pub const MYSQL_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/mysql");
/// The migrations of `migrations/sqlite/`.
pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../migrations/sqlite");

/// [`AnyConnection`] and the backend type Diesel's `#[derive(MultiConnection)]`
/// generates for it.
pub mod multi {
    // The derive's generated items carry no docs.
    #![allow(missing_docs, missing_debug_implementations, unreachable_pub)]

    macro_rules! any_connection {
        ($($(#[$doc:meta])* $variant:ident($conn:ty),)*) => {
            /// A connection to any of the backends this build supports.
            ///
            /// Diesel's `#[derive(MultiConnection)]` gives it one backend type, so typed
            /// queries and `#[derive(Versioned)]` entities work on it unchanged.
            #[derive(diesel::MultiConnection)]
            pub enum AnyConnection {
                $($(#[$doc])* $variant($conn),)*
            }
        };
    }

    #[cfg(feature = "mysql")]
    any_connection! {
        /// PostgreSQL.
        Postgres(diesel::pg::PgConnection),
        /// MySQL or MariaDB.
        Mysql(diesel::mysql::MysqlConnection),
        /// SQLite.
        Sqlite(diesel::sqlite::SqliteConnection),
    }

    #[cfg(not(feature = "mysql"))]
    any_connection! {
        /// PostgreSQL.
        Postgres(diesel::pg::PgConnection),
        /// SQLite.
        Sqlite(diesel::sqlite::SqliteConnection),
    }
}

pub use multi::AnyConnection;

impl AnyConnection {
    /// `"PostgreSQL"`, `"MySQL/MariaDB"` or `"SQLite"`.
    pub fn backend_name(&self) -> &'static str {
        match self {
            AnyConnection::Postgres(_) => "PostgreSQL",
            #[cfg(feature = "mysql")]
            AnyConnection::Mysql(_) => "MySQL/MariaDB",
            AnyConnection::Sqlite(_) => "SQLite",
        }
    }

    /// Applies the pending migrations of this connection's backend.
    pub fn migrate(&mut self) -> Result<(), DbError> {
        let applied = match self {
            AnyConnection::Postgres(conn) => {
                conn.run_pending_migrations(POSTGRES_MIGRATIONS).map(drop)
            }
            #[cfg(feature = "mysql")]
            AnyConnection::Mysql(conn) => conn.run_pending_migrations(MYSQL_MIGRATIONS).map(drop),
            AnyConnection::Sqlite(conn) => conn.run_pending_migrations(SQLITE_MIGRATIONS).map(drop),
        };
        applied.map_err(|error| DbError::Migration(error.to_string()))
    }

    /// Checks that every app entity's token column can hold its tokens (it exists, is
    /// of the token's kind, keeps the precision the entity declares), so a schema that
    /// drifted fails at start-up instead of at the first save.
    pub fn check_token_columns(&mut self) -> Result<(), DbError> {
        use diesel_occ::schema::SchemaCheck;
        let check = SchemaCheck::new()
            .entity::<crate::inventory::Stock>()
            .entity::<crate::seat::Concert>()
            .entity::<crate::claims::WorkItem>()
            .entity::<crate::http::store::Article>();
        let checked = match self {
            AnyConnection::Postgres(conn) => check.run(conn),
            #[cfg(feature = "mysql")]
            AnyConnection::Mysql(conn) => check.run(conn),
            AnyConnection::Sqlite(conn) => check.run(conn),
        };
        checked.map_err(|error| DbError::Schema(error.to_string()))
    }
}

/// Where to find the database: a server URL or a SQLite file.
#[derive(Clone, PartialEq, Eq)]
pub enum Target {
    /// `postgres://` or `postgresql://`.
    Postgres(String),
    /// `mysql://` (MySQL or MariaDB).
    Mysql(String),
    /// A SQLite file, given as a path or a `sqlite://` URL.
    Sqlite(PathBuf),
}

impl Target {
    /// Reads a `--database-url` / `DATABASE_URL` value.
    pub fn parse(url: &str) -> Target {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Target::Postgres(url.to_owned())
        } else if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            Target::Mysql(url.replacen("mariadb://", "mysql://", 1))
        } else {
            let path = url
                .strip_prefix("sqlite://")
                .or_else(|| url.strip_prefix("sqlite:"))
                .unwrap_or(url);
            Target::Sqlite(PathBuf::from(path))
        }
    }

    /// The default for an app: `<temp dir>/diesel-occ-examples/<name>.sqlite3`.
    pub fn default_sqlite(name: &str) -> Target {
        Target::Sqlite(
            std::env::temp_dir()
                .join("diesel-occ-examples")
                .join(format!("{name}.sqlite3")),
        )
    }

    /// Opens a connection, creating the SQLite file (and its folder) if needed.
    pub fn connect(&self) -> Result<AnyConnection, DbError> {
        let connection = match self {
            Target::Postgres(url) => AnyConnection::Postgres(
                diesel::pg::PgConnection::establish(url).map_err(|e| DbError::connect(self, e))?,
            ),
            #[cfg(feature = "mysql")]
            Target::Mysql(url) => AnyConnection::Mysql(
                diesel::mysql::MysqlConnection::establish(url)
                    .map_err(|e| DbError::connect(self, e))?,
            ),
            #[cfg(not(feature = "mysql"))]
            Target::Mysql(_) => return Err(DbError::MysqlNotBuilt),
            Target::Sqlite(path) => {
                AnyConnection::Sqlite(open_sqlite(path).map_err(|e| DbError::connect(self, e))?)
            }
        };
        Ok(connection)
    }

    /// Opens a connection, applies the pending migrations and checks the token columns.
    pub fn connect_and_migrate(&self) -> Result<AnyConnection, DbError> {
        let mut conn = self.connect()?;
        conn.migrate()?;
        conn.check_token_columns()?;
        Ok(conn)
    }
}

/// A SQLite file set up for several writers: WAL, and a busy timeout so a writer waits
/// for the file lock instead of failing at once. The timeout comes first: switching to
/// WAL takes the file lock too, and a connection opened while another one writes must
/// wait for it rather than fail with "database is locked".
fn open_sqlite(path: &Path) -> Result<diesel::sqlite::SqliteConnection, ConnectionError> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            ConnectionError::BadConnection(format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    let text = path
        .to_str()
        .ok_or_else(|| ConnectionError::InvalidConnectionUrl("not a UTF-8 path".into()))?;
    let mut conn = diesel::sqlite::SqliteConnection::establish(text)?;
    conn.batch_execute(
        "PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;",
    )
    .map_err(|e| ConnectionError::BadConnection(format!("cannot configure SQLite: {e}")))?;
    Ok(conn)
}

/// Shows where the data is, with any password replaced by `***`.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Postgres(url) => write!(f, "PostgreSQL at {}", redact(url)),
            Target::Mysql(url) => write!(f, "MySQL/MariaDB at {}", redact(url)),
            Target::Sqlite(path) => write!(f, "SQLite file {}", path.display()),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The URL with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

/// Why the apps could not get a usable database.
#[derive(Debug)]
#[non_exhaustive]
pub enum DbError {
    /// The connection failed.
    Connect {
        /// Where we tried to connect (password redacted).
        target: String,
        /// The driver's reason.
        reason: String,
    },
    /// A `mysql://` URL, but this build has no MySQL driver.
    MysqlNotBuilt,
    /// A migration failed.
    Migration(String),
    /// A token column cannot hold its entity's tokens.
    Schema(String),
}

impl DbError {
    fn connect(target: &Target, error: ConnectionError) -> DbError {
        DbError::Connect {
            target: target.to_string(),
            reason: error.to_string(),
        }
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Connect { target, reason } => {
                write!(f, "cannot connect to {target}: {}", reason.trim())
            }
            DbError::MysqlNotBuilt => f.write_str(
                "this build has no MySQL/MariaDB driver: run it with `--features mysql` \
                 (the MySQL client library must be installed)",
            ),
            DbError::Migration(reason) => write!(f, "migrations failed: {reason}"),
            DbError::Schema(reason) => write!(f, "schema check failed: {reason}"),
        }
    }
}

impl std::error::Error for DbError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_pick_the_backend() {
        assert!(matches!(
            Target::parse("postgres://u@h/db"),
            Target::Postgres(_)
        ));
        assert!(matches!(
            Target::parse("postgresql://u@h/db"),
            Target::Postgres(_)
        ));
        assert_eq!(
            Target::parse("mariadb://root@h/db"),
            Target::Mysql("mysql://root@h/db".into())
        );
        assert_eq!(
            Target::parse("sqlite:///tmp/a.sqlite3"),
            Target::Sqlite("/tmp/a.sqlite3".into())
        );
        assert_eq!(Target::parse("./a.db"), Target::Sqlite("./a.db".into()));
    }

    #[test]
    fn passwords_never_show() {
        let target = Target::parse("postgres://app:secret@db:5432/shop");
        assert_eq!(
            target.to_string(),
            "PostgreSQL at postgres://app:***@db:5432/shop"
        );
        assert_eq!(redact("mysql://root@h/db"), "mysql://root@h/db");
    }
}
