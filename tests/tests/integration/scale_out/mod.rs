//! The guarantees on replicated engines: a 3-node MariaDB Galera cluster
//! (multi-primary, certification at commit) and a PostgreSQL primary with a streaming
//! hot standby, both started by `tests/cluster/*.sh`.
//!
//! - `galera`: writers on different nodes race on one row; a stale read from a lagging
//!   node (`wsrep_sync_wait = 0`) never becomes a lost update; increments through a
//!   multi-host source over the three nodes; a node killed under load and restarted.
//! - `pg_replicas`: a standby read is stale while its replay is paused; reads from the
//!   stale standby with checked saves on the primary lose no update and retry a bounded
//!   number of times.
//!
//! Each cluster writes its scenarios once, in `scenarios.rs`, compiled as modules
//! `blocking` and `asynchronous` against the cluster's connections as a subject's are
//! (`on_every_backend!`); what only one flavour runs says so with `#[flavour(..)]`.
//!
//! Each test gets a database of its own on the cluster (`diesel_occ_tests::GaleraDb`,
//! `PgReplicasDb`) and holds the cluster's test lock while it runs: shared, or
//! exclusive for the tests that kill a node, lock a node or pause the replay, which
//! therefore never disturb another test, under nextest or `cargo test`. Every
//! disturbance is undone by a guard, also when the test fails. Interleavings are forced
//! with barriers, lag with a lock or a paused replay, never with timing.
//!
//! The clusters are chosen with `OCC_GALERA_URLS`, `OCC_PG_PRIMARY_URL` and
//! `OCC_PG_STANDBY_URL` (`diesel_occ_tests::cluster`); without them running, every test
//! prints a SKIPPED line, or fails when `OCC_REQUIRE` names `galera` / `pg-replicas`.
//! The blocking Galera scenarios need the MySQL client library (feature `mysql`).

/// A fresh database on the Galera cluster for the calling test, with the cluster locked
/// for `$access`; returns from the test (after a SKIPPED line) when the cluster is
/// unreachable and not required.
macro_rules! galera_db {
    ($access:expr) => {
        match {
            crate::observe::interested_everywhere();
            diesel_occ_tests::GaleraDb::create(concat!(module_path!(), "_", line!()), $access)
        } {
            Some(db) => db,
            None => return,
        }
    };
}

/// [`galera_db!`] for the PostgreSQL primary and standby.
macro_rules! pg_replicas_db {
    ($access:expr) => {
        match {
            crate::observe::interested_everywhere();
            diesel_occ_tests::PgReplicasDb::create(concat!(module_path!(), "_", line!()), $access)
        } {
            Some(db) => db,
            None => return,
        }
    };
}

mod galera;
mod pg_replicas;
