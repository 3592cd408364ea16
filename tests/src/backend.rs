//! Backend selection from the environment: reachable, skipped or required.

use std::env;
use std::fmt;

/// One of the three database backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// PostgreSQL, through `OCC_POSTGRES_URL`.
    Postgres,
    /// MySQL or MariaDB, through `OCC_MYSQL_URL`.
    Mysql,
    /// SQLite, on a temporary file.
    Sqlite,
}

/// Environment variable holding the PostgreSQL URL.
pub const POSTGRES_URL_VAR: &str = "OCC_POSTGRES_URL";
/// Environment variable holding the MySQL/MariaDB URL.
pub const MYSQL_URL_VAR: &str = "OCC_MYSQL_URL";
/// Environment variable listing the backends that must run (comma separated).
pub const REQUIRE_VAR: &str = "OCC_REQUIRE";

impl Backend {
    /// Every backend, in the order the runner reports them.
    pub const ALL: [Backend; 3] = [Backend::Postgres, Backend::Mysql, Backend::Sqlite];

    /// The name used in `OCC_REQUIRE` and in SKIPPED lines.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Sqlite => "sqlite",
        }
    }

    /// The server URL: the environment variable, else (feature `testcontainers`) a
    /// container, else the local default. `None` for SQLite, which needs no server.
    pub fn server_url(self) -> Option<String> {
        let (var, default) = match self {
            Backend::Postgres => (POSTGRES_URL_VAR, "postgres://postgres@127.0.0.1:5432/test"),
            Backend::Mysql => (MYSQL_URL_VAR, "mysql://root@127.0.0.1:3306/test"),
            Backend::Sqlite => return None,
        };
        if let Ok(url) = env::var(var) {
            return Some(url);
        }
        #[cfg(feature = "testcontainers")]
        if let Some(url) = match self {
            Backend::Postgres => crate::containers::postgres_url(),
            _ => crate::containers::mysql_url(),
        } {
            return Some(url);
        }
        Some(default.to_owned())
    }

    /// True when `OCC_REQUIRE` names this backend.
    pub fn is_required(self) -> bool {
        env::var(REQUIRE_VAR).is_ok_and(|list| required_in(&list, self))
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn required_in(list: &str, backend: Backend) -> bool {
    named_in(list, backend.name()) || list.split(',').any(|item| item.trim() == "all")
}

/// True when the comma list `list` (an `OCC_REQUIRE` value) names `name`.
pub(crate) fn named_in(list: &str, name: &str) -> bool {
    list.split(',')
        .map(str::trim)
        .any(|item| item.eq_ignore_ascii_case(name))
}

/// The URL with its password replaced, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}")
            } else {
                format!("{scheme}://{user}@{host}")
            }
        }
        None => url.to_owned(),
    }
}

/// The same server URL pointing at another database (query string kept).
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let (scheme, rest) = base.split_once("://").unwrap_or(("", base));
    let authority = rest.split('/').next().unwrap_or(rest);
    let mut out = format!("{scheme}://{authority}/{database}");
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_list_is_parsed_leniently() {
        assert!(required_in("postgres, MYSQL", Backend::Mysql));
        assert!(required_in("all", Backend::Sqlite));
        assert!(!required_in("postgres", Backend::Mysql));
        assert!(!required_in("", Backend::Postgres));
    }

    #[test]
    fn urls_are_rewritten_and_redacted() {
        assert_eq!(
            with_database("postgres://u:p@h:5432/test?sslmode=disable", "occ_x"),
            "postgres://u:p@h:5432/occ_x?sslmode=disable"
        );
        assert_eq!(
            with_database("mysql://root@h:3306", "occ_y"),
            "mysql://root@h:3306/occ_y"
        );
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("mysql://root@h/db"), "mysql://root@h/db");
    }
}
