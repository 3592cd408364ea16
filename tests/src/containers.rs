//! Feature `testcontainers`: PostgreSQL and MariaDB in Docker, started once per test
//! process, for machines that have Docker but no local servers.
//!
//! Used only when the backend's URL variable is unset. When Docker is unavailable the
//! local default URL is used, so the usual SKIPPED / required logic still applies.

use std::sync::OnceLock;

use testcontainers_modules::mariadb::Mariadb;
use testcontainers_modules::postgres::Postgres;
use testcontainers_modules::testcontainers::runners::SyncRunner;

/// A PostgreSQL container's URL, starting the container on first use.
pub fn postgres_url() -> Option<String> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        let container = Postgres::default().with_host_auth().start().ok()?;
        let url = format!(
            "postgres://postgres@{}:{}/postgres",
            container.get_host().ok()?,
            container.get_host_port_ipv4(5432).ok()?
        );
        // Kept for the whole process; testcontainers' reaper removes it afterwards.
        std::mem::forget(container);
        Some(url)
    })
    .clone()
}

/// A MariaDB container's URL (root, no password, database `test`).
pub fn mysql_url() -> Option<String> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        let container = Mariadb::default().start().ok()?;
        let url = format!(
            "mysql://root@{}:{}/test",
            container.get_host().ok()?,
            container.get_host_port_ipv4(3306).ok()?
        );
        std::mem::forget(container);
        Some(url)
    })
    .clone()
}
