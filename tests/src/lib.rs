//! Support for diesel-occ's integration tests: which backends to run, a fresh database
//! per test, the test schema and the entities many tests share, statement counting and
//! bounded waits.
//!
//! Backends are chosen with environment variables:
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `OCC_POSTGRES_URL` | `postgres://postgres@127.0.0.1:5432/test` | a PostgreSQL server and a database to connect to while creating per-test databases |
//! | `OCC_MYSQL_URL` | `mysql://root@127.0.0.1:3306/test` | the same for MySQL/MariaDB |
//! | `OCC_GALERA_URLS` | `mysql://root@127.0.0.1:13306/test,mysql://root@127.0.0.1:13307/test,mysql://root@127.0.0.1:13308/test` | the three nodes of a MariaDB Galera cluster (`tests/cluster/galera.sh`), for the scale-out tests |
//! | `OCC_PG_PRIMARY_URL` | `postgres://postgres@127.0.0.1:15432/test` | the primary of a PostgreSQL pair with a streaming standby (`tests/cluster/pg-replicas.sh`) |
//! | `OCC_PG_STANDBY_URL` | `postgres://postgres@127.0.0.1:15433/test` | that pair's hot standby |
//! | `OCC_CLUSTER_DIR` | `/tmp/occ-cluster` | the cluster scripts' state, where the cluster tests also keep their lock files; with the scripts' port variables it must be what the clusters were started with |
//! | `OCC_REQUIRE` | empty | comma list of `postgres`, `mysql`, `sqlite`, `galera`, `pg-replicas`: an unreachable required backend or cluster fails the tests instead of printing `SKIPPED`; `all` names the three backends, not the clusters |
//!
//! SQLite always runs, on a temporary file per test. The clusters are described in
//! [`cluster`] and `tests/cluster/README.md`.

pub mod adopt;
pub mod backend;
pub mod cluster;
pub mod db;
pub mod entities;
pub mod relay;
pub mod schema;
pub mod statements;
pub mod wait;

#[cfg(feature = "testcontainers")]
pub mod containers;

pub use backend::Backend;
pub use cluster::{Access, Cluster, GaleraDb, PairFailover, PgReplicasDb};
pub use db::{AsyncTestConnection, AsyncTestDb, TestConnection, TestDb, connect_async};
pub use relay::Relay;
pub use wait::{wait_until, wait_until_async};

/// The conflict of a checked write that must have conflicted.
///
/// # Panics
///
/// When `result` is anything but [`diesel_occ::Error::Conflict`].
pub fn expect_conflict<T: std::fmt::Debug>(
    result: Result<T, diesel_occ::Error>,
) -> diesel_occ::ConcurrencyConflict {
    match result {
        Err(diesel_occ::Error::Conflict(conflict)) => conflict,
        other => panic!("expected a concurrency conflict, got {other:?}"),
    }
}
