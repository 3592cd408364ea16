//! Where the apps' data lives: a database URL, or a SQLite file by default.
//!
//! The binaries read `--database-url` (or `DATABASE_URL`) into a [`Target`] and run the
//! apps of the matching backend module: [`crate::postgres`], `crate::mysql` (feature
//! `mysql`) or [`crate::sqlite`].

use std::fmt;
use std::path::PathBuf;

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

/// A `mysql://` URL, but this build has no MySQL driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MysqlNotBuilt;

impl fmt::Display for MysqlNotBuilt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "this build has no MySQL/MariaDB driver: run it with `--features mysql` \
             (the MySQL client library must be installed)",
        )
    }
}

impl std::error::Error for MysqlNotBuilt {}

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
