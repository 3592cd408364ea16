//! The databases the benchmark runs against: their names, default URLs, creating the
//! benchmark's database and reading the server's version.

/// A database to run against, by its name on the command line or an alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// PostgreSQL.
    #[value(alias = "pg", alias = "postgresql")]
    Postgres,
    /// MySQL or MariaDB (feature `mysql`).
    #[value(alias = "mariadb")]
    Mysql,
    /// SQLite, on a file.
    Sqlite,
}

impl Backend {
    /// The name the command line takes and the results use.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Sqlite => "sqlite",
        }
    }

    /// The local server's benchmark database (`occ_bench`), or a temp SQLite file.
    pub fn default_url(self) -> String {
        match self {
            Backend::Postgres => "postgres://postgres@127.0.0.1:5432/occ_bench".into(),
            Backend::Mysql => "mysql://root@127.0.0.1:3306/occ_bench".into(),
            Backend::Sqlite => std::env::temp_dir()
                .join("diesel-occ-bench.sqlite3")
                .display()
                .to_string(),
        }
    }
}

/// Creates the benchmark's database when it does not exist yet.
pub fn ensure_database(backend: Backend, url: &str) -> Result<(), String> {
    use diesel::{Connection, RunQueryDsl};
    let (server, name) = url.rsplit_once('/').ok_or("a URL ends with /DATABASE")?;
    if backend == Backend::Sqlite
        || (backend == Backend::Postgres && diesel::PgConnection::establish(url).is_ok())
    {
        return Ok(());
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("cannot create database {name:?}"));
    }
    match backend {
        Backend::Postgres => {
            // PostgreSQL has no IF NOT EXISTS here: it failed to connect to it.
            let mut conn = diesel::PgConnection::establish(&format!("{server}/postgres"))
                .map_err(|e| e.to_string())?;
            diesel::sql_query(format!("CREATE DATABASE {name}")).execute(&mut conn)
        }
        #[cfg(feature = "mysql")]
        Backend::Mysql => {
            let mut conn = diesel::MysqlConnection::establish(&format!("{server}/mysql"))
                .map_err(|e| e.to_string())?;
            diesel::sql_query(format!("CREATE DATABASE IF NOT EXISTS {name}")).execute(&mut conn)
        }
        _ => return Err("MySQL needs `--features mysql`".into()),
    }
    .map(drop)
    .map_err(|e| e.to_string())
}

/// The server's version for the tables' headers and the charts' titles.
pub fn server_version(backend: Backend, url: &str) -> String {
    use diesel::{Connection, RunQueryDsl};
    diesel::define_sql_function!(fn version() -> diesel::sql_types::Text);
    let version: Option<String> = match backend {
        Backend::Postgres => diesel::PgConnection::establish(url)
            .ok()
            .and_then(|mut c| diesel::select(version()).get_result(&mut c).ok())
            .map(|v: String| v.split(" on ").next().unwrap_or(&v).to_owned()),
        #[cfg(feature = "mysql")]
        Backend::Mysql => diesel::MysqlConnection::establish(url)
            .ok()
            .and_then(|mut c| diesel::select(version()).get_result(&mut c).ok()),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => None,
        Backend::Sqlite => {
            diesel::define_sql_function!(fn sqlite_version() -> diesel::sql_types::Text);
            diesel::SqliteConnection::establish(":memory:")
                .ok()
                .and_then(|mut c| diesel::select(sqlite_version()).get_result(&mut c).ok())
                .map(|v: String| format!("SQLite {v}"))
        }
    };
    version.unwrap_or_else(|| "version unknown".into())
}
