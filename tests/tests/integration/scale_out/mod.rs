//! The guarantees on replicated engines: a 3-node MariaDB Galera cluster (multi-primary,
//! certification at commit, `galera`) and a PostgreSQL primary with a streaming hot
//! standby (`pg_replicas`), both started by `tests/cluster/*.sh`, each with its
//! scenarios in `scenarios.rs`, compiled in both flavours (`on_every_backend!`).
//!
//! Each test gets a database of its own on the cluster (`diesel_occ_tests::GaleraDb`,
//! `PgReplicasDb`) and holds the cluster's test lock: shared, or exclusive for the tests
//! that kill a node, lock a node or pause the replay, so that they never disturb another
//! test. Every disturbance is undone by a guard, also when the test fails. Interleavings
//! are forced with barriers, lag with a lock or a paused replay, never with timing.
//!
//! The clusters are chosen with `OCC_GALERA_URLS`, `OCC_PG_PRIMARY_URL` and
//! `OCC_PG_STANDBY_URL` (`diesel_occ_tests::cluster`); without them running, every test
//! prints a SKIPPED line, or fails when `OCC_REQUIRE` names `galera` / `pg-replicas`.
//! The blocking Galera scenarios need the MySQL client library (feature `mysql`).

/// A fresh database for the calling test on `$cluster` (`GaleraDb`, `PgReplicasDb`), with
/// the cluster locked for `$access`; returns from the test (after a SKIPPED line) when
/// the cluster is unreachable and not required.
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
