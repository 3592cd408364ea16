//! `cargo test-all`: the README's test command.
//!
//! 1. Probes PostgreSQL and MySQL/MariaDB (`OCC_POSTGRES_URL`, `OCC_MYSQL_URL`), the
//!    MySQL client library, and the replicated clusters of `tests/cluster/` (`galera`:
//!    the three nodes of `OCC_GALERA_URLS`; `pg-replicas`: `OCC_PG_PRIMARY_URL` and
//!    `OCC_PG_STANDBY_URL`), printing a `SKIPPED` line for each that cannot run, or
//!    failing when `OCC_REQUIRE` names it (`all` names the three backends, not the
//!    clusters, which need `tests/cluster/*.sh start` first).
//! 2. Runs the whole workspace's tests (with cargo-nextest when installed, else
//!    `cargo test`), then the doctests. Extra arguments go to the test command, as
//!    given; `--help` (as the first) prints the usage.

use std::env;
use std::net::{TcpStream, ToSocketAddrs};
use std::process::{Command, ExitCode};
use std::time::Duration;

const POSTGRES_DEFAULT: &str = "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_DEFAULT: &str = "mysql://root@127.0.0.1:3306/test";
const GALERA_DEFAULT: &str = "mysql://root@127.0.0.1:13306/test,mysql://root@127.0.0.1:13307/test,mysql://root@127.0.0.1:13308/test";
const PG_PRIMARY_DEFAULT: &str = "postgres://postgres@127.0.0.1:15432/test";
const PG_STANDBY_DEFAULT: &str = "postgres://postgres@127.0.0.1:15433/test";

const USAGE: &str = "\
usage: cargo test-all [ARGS...]
  Probes the database servers and clusters (OCC_POSTGRES_URL, OCC_MYSQL_URL,
  OCC_GALERA_URLS, OCC_PG_PRIMARY_URL, OCC_PG_STANDBY_URL), prints SKIPPED for each that
  cannot run (or fails when OCC_REQUIRE names it: postgres, mysql, sqlite, galera,
  pg-replicas, all), then runs the workspace's tests with cargo-nextest when installed,
  else cargo test. ARGS go to that test command as given.";

/// The arguments for the test command, as given; `None` when the first asks for help.
fn extra_args() -> Result<Option<Vec<String>>, String> {
    let mut parser = lexopt::Parser::from_env();
    let raw = parser.raw_args().map_err(|e| e.to_string())?;
    if matches!(raw.peek().and_then(|a| a.to_str()), Some("--help" | "-h")) {
        return Ok(None);
    }
    raw.map(|arg| {
        arg.into_string()
            .map_err(|arg| format!("argument {arg:?} is not UTF-8"))
    })
    .collect::<Result<_, _>>()
    .map(Some)
}

fn main() -> ExitCode {
    let extra = match extra_args() {
        Ok(Some(extra)) => extra,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("test-all: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let required = env::var("OCC_REQUIRE").unwrap_or_default();
    let mut problems = Vec::new();
    let mut report = |name: &str, reason: Option<String>| match reason {
        None => eprintln!("test-all: {name}: ready"),
        Some(reason) if is_required(&required, name) => {
            eprintln!("test-all: {name} is REQUIRED (OCC_REQUIRE) but {reason}");
            problems.push(name.to_owned());
        }
        Some(reason) => eprintln!("SKIPPED {name}: {reason}"),
    };

    let postgres = env::var("OCC_POSTGRES_URL").unwrap_or_else(|_| POSTGRES_DEFAULT.into());
    report("postgres", unreachable(&postgres, 5432));

    let mysql = env::var("OCC_MYSQL_URL").unwrap_or_else(|_| MYSQL_DEFAULT.into());
    let mysql_client = has_mysql_client_library();
    let mysql_reason = if !mysql_client {
        Some(
            "the MySQL client library is not installed (Debian/Ubuntu: \
             apt-get install libmariadb-dev-compat; macOS: brew install mysql-client)"
                .to_owned(),
        )
    } else {
        unreachable(&mysql, 3306)
    };
    report("mysql", mysql_reason);
    report("sqlite", None);

    // The blocking Galera tests need the client library, as the blocking MySQL ones do.
    let galera = env::var("OCC_GALERA_URLS").unwrap_or_else(|_| GALERA_DEFAULT.into());
    let galera_nodes: Vec<&str> = galera
        .split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .collect();
    let galera_reason = if !mysql_client {
        Some("the MySQL client library is not installed (see mysql above)".to_owned())
    } else if galera_nodes.len() != 3 {
        Some(format!(
            "OCC_GALERA_URLS lists {} URLs, not 3",
            galera_nodes.len()
        ))
    } else {
        all_reachable(&galera_nodes, 3306)
    };
    report("galera", galera_reason);
    let primary = env::var("OCC_PG_PRIMARY_URL").unwrap_or_else(|_| PG_PRIMARY_DEFAULT.into());
    let standby = env::var("OCC_PG_STANDBY_URL").unwrap_or_else(|_| PG_STANDBY_DEFAULT.into());
    report("pg-replicas", all_reachable(&[&primary, &standby], 5432));

    if !problems.is_empty() {
        eprintln!(
            "test-all: required backends or clusters unavailable: {}",
            problems.join(", ")
        );
        return ExitCode::FAILURE;
    }

    let mut features = Vec::new();
    if mysql_client {
        features.push("diesel-occ-tests/mysql");
    }
    let steps = test_commands(&features, &extra);
    for mut step in steps {
        eprintln!("test-all: running {step:?}");
        match step.status() {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("test-all: failed ({status})");
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("test-all: cannot run cargo: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The test commands: nextest (one process per test) when installed, else cargo test;
/// nextest does not run doctests, so they get their own step.
fn test_commands(features: &[&str], extra: &[String]) -> Vec<Command> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let feature_args = |cmd: &mut Command| {
        if !features.is_empty() {
            cmd.arg("--features").arg(features.join(","));
        }
    };
    let has_nextest = Command::new(&cargo)
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if has_nextest {
        let mut unit = Command::new(&cargo);
        unit.args(["nextest", "run", "--workspace", "--no-fail-fast"]);
        feature_args(&mut unit);
        unit.args(extra);
        let mut doc = Command::new(&cargo);
        // `cargo test --doc` runs the derive crate's doctests although its manifest says
        // `doctest = false`; they can only run from the runtime crate, which runs them.
        doc.args([
            "test",
            "--workspace",
            "--doc",
            "--exclude",
            "diesel-occ-derive",
        ]);
        feature_args(&mut doc);
        vec![unit, doc]
    } else {
        let mut all = Command::new(&cargo);
        all.args(["test", "--workspace", "--no-fail-fast"]);
        feature_args(&mut all);
        all.args(extra);
        vec![all]
    }
}

/// `true` when `OCC_REQUIRE` (`required`) names `name`; `all` names the three backends
/// only.
fn is_required(required: &str, name: &str) -> bool {
    required.split(',').map(str::trim).any(|r| {
        r.eq_ignore_ascii_case(name)
            || (r == "all" && ["postgres", "mysql", "sqlite"].contains(&name))
    })
}

/// `None` when every URL's server accepts a TCP connection, else which do not.
fn all_reachable(urls: &[&str], default_port: u16) -> Option<String> {
    let down: Vec<String> = urls
        .iter()
        .filter_map(|url| unreachable(url, default_port))
        .collect();
    (!down.is_empty()).then(|| down.join("; "))
}

/// `None` when a TCP connection to the URL's host and port succeeds, else why not.
fn unreachable(url: &str, default_port: u16) -> Option<String> {
    let shown = redact(url);
    let Some((host, port)) = host_port(url, default_port) else {
        return Some(format!("cannot read a host from {shown}"));
    };
    let addrs = match (host.as_str(), port).to_socket_addrs() {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(error) => return Some(format!("cannot resolve {host}: {error}")),
    };
    let reachable = addrs
        .iter()
        .any(|addr| TcpStream::connect_timeout(addr, Duration::from_secs(3)).is_ok());
    (!reachable).then(|| format!("not reachable at {shown}"))
}

fn host_port(url: &str, default_port: u16) -> Option<(String, u16)> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    match host_port.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), port.parse().ok()?)),
        None if !host_port.is_empty() => Some((host_port.to_owned(), default_port)),
        None => None,
    }
}

fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((userinfo, host)) if userinfo.contains(':') => {
                let user = userinfo.split(':').next().unwrap_or_default();
                format!("{scheme}://{user}:***@{host}")
            }
            _ => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// Diesel's sync MySQL backend links libmysqlclient (or MariaDB's compatible library).
fn has_mysql_client_library() -> bool {
    if env::var_os("MYSQLCLIENT_LIB_DIR").is_some() {
        return true;
    }
    ["mysqlclient", "libmariadb"].iter().any(|lib| {
        Command::new("pkg-config")
            .args(["--exists", lib])
            .status()
            .is_ok_and(|s| s.success())
    }) || ["mysql_config", "mariadb_config"].iter().any(|tool| {
        Command::new(tool)
            .arg("--libs")
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_come_from_the_url() {
        assert_eq!(
            host_port("postgres://u:p@db.local:6543/x?y=1", 5432),
            Some(("db.local".into(), 6543))
        );
        assert_eq!(
            host_port("mysql://root@h/test", 3306),
            Some(("h".into(), 3306))
        );
        assert_eq!(host_port("nonsense", 1), None);
    }

    #[test]
    fn all_names_the_backends_not_the_clusters() {
        assert!(is_required("all", "mysql"));
        assert!(!is_required("all", "galera"));
        assert!(is_required("postgres, GALERA", "galera"));
        assert!(is_required("pg-replicas", "pg-replicas"));
        assert!(!is_required("", "sqlite"));
    }

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("mysql://root:hunter2@h/db"), "mysql://root:***@h/db");
    }
}
