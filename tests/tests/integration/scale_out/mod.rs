//! The guarantees on replicated engines: a 3-node MariaDB Galera cluster (multi-primary,
//! certification at commit) and a PostgreSQL primary with a streaming hot standby, started
//! by `tests/cluster/*.sh`, with scenarios in both flavours (`scenarios.rs`).
//!
//! Each test gets a database of its own on the cluster (`GaleraDb`, `PgReplicasDb`) and holds
//! the cluster's test lock: exclusive for the tests that kill or lock a node or pause the
//! replay, which a guard undoes, also on failure. Interleavings are forced with barriers, lag
//! with a lock or a paused replay, never with timing.
//!
//! `OCC_GALERA_URLS`, `OCC_PG_PRIMARY_URL`, `OCC_PG_STANDBY_URL` choose the clusters; without
//! them every test prints SKIPPED, or fails when `OCC_REQUIRE` names `galera` / `pg-replicas`.
//! The blocking Galera scenarios need the feature `mysql`.

/// A fresh database for the calling test on `$cluster`, locked for `$access`; returns from
/// the test (after a SKIPPED line) when the cluster is unreachable and not required.
macro_rules! cluster_db {
    ($cluster:ident, $access:expr) => {
        match {
            crate::observe::interested_everywhere();
            diesel_occ_tests::$cluster::create(concat!(module_path!(), "_", line!()), $access)
        } {
            Some(db) => db,
            None => return,
        }
    };
}

mod galera;
mod pg_replicas;
