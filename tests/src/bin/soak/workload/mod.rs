//! The write paths, one workload each, written once for the connection type `Conn`
//! of the backend module that includes this folder (`postgres.rs`, `mysql.rs`,
//! `sqlite.rs`).
//!
//! `retried/` is the example apps' mix through the retry helper (the only path that
//! also runs on the Galera cluster). Every other path runs on the `counters` test table
//! through `runner.rs`: each acknowledged change adds 1 to a row's counter, and the
//! check (`check/counters.rs`) finds a row that lost one or took one twice. Each path
//! has a sabotage twin (`--sabotage`): the same write without the token check, which
//! the check must catch.
//!
//! `asynchronous/` has the async flavour of the counters paths (`async_<name>`), each
//! the twin of its blocking file here with the same reads, writes and twin, run on a
//! diesel-async connection by one adaptor that also drops some writes' futures.

mod asynchronous;
mod batch;
mod bulk_update;
mod bypass_guard;
mod combiner;
mod counter;
mod delete;
mod force_increment;
mod retried;
mod retry;
mod runner;
mod save_checked;
mod soft_delete;
mod timestamp_now;
mod tracked;
mod transaction;
mod update_by_key;
mod upsert;
mod versionless;

// What `retried/` takes from the backend module.
use super::{AsyncConn, Conn, FAULT_KIND, connect, connect_for_check, examples, fault, schema};
use diesel_occ_tests::{TestConnection, TestDb};

use crate::options::Args;
use crate::report::Report;
pub(crate) use runner::Site;

/// Runs `path` on this backend; `None` when it could not run (no server).
pub(crate) fn run(args: &Args, path: &'static str) -> Option<Report> {
    if path == "retried" {
        return retried::run(args);
    }
    let db = TestDb::<Conn>::create(&format!("soak_{path}"))?;
    let site = Site {
        backend: Conn::BACKEND.name(),
        url: db.url(),
        standby_url: db.url(),
        wait_replayed: &|| {},
        beside: None,
    };
    Some(run_on(args, path, &site))
}

/// Runs `path`, a path on the `counters` table, in `site`'s fresh database.
pub(crate) fn run_on(args: &Args, path: &'static str, site: &Site<'_>) -> Report {
    use asynchronous::Async;
    use runner::run as on;
    match path {
        "save_checked" => on(args, path, &save_checked::Plain, site),
        "save_checked_where" => on(args, path, &save_checked::Where, site),
        "update_by_key" => on(args, path, &update_by_key::UpdateByKey, site),
        "upsert" => on(args, path, &upsert::Upsert, site),
        "delete_checked" => on(args, path, &delete::Delete::Checked, site),
        "delete_by_key" => on(args, path, &delete::Delete::ByKey, site),
        "tracked" => on(args, path, &tracked::Save, site),
        "save_merging" => on(args, path, &tracked::Merging, site),
        "save_all_checked" => on(args, path, &batch::SaveAll, site),
        "bulk_update" => on(args, path, &bulk_update::BulkUpdate, site),
        "force_increment" => on(args, path, &force_increment::ForceIncrement, site),
        "soft_delete_checked" => on(args, path, &soft_delete::SoftDelete, site),
        "transaction" => on(args, path, &transaction::Transaction, site),
        "bypass_guard" => on(args, path, &bypass_guard::Bypass, site),
        "timestamp_now" => on(args, path, &timestamp_now::TimestampNow, site),
        "combiner" => on(args, path, &combiner::Combiner::default(), site),
        "retry_escalated" => on(args, path, &retry::Escalated, site),
        "retry_with_standby" => on(args, path, &retry::WithStandby, site),
        "versionless" => on(args, path, &versionless::Save, site),
        "async_save_checked" => on(args, path, &Async(asynchronous::Plain), site),
        "async_save_checked_where" => on(args, path, &Async(asynchronous::Where), site),
        "async_update_by_key" => on(args, path, &Async(asynchronous::UpdateByKey), site),
        "async_upsert" => on(args, path, &Async(asynchronous::Upsert), site),
        "async_delete_checked" => on(args, path, &Async(asynchronous::Delete::Checked), site),
        "async_delete_by_key" => on(args, path, &Async(asynchronous::Delete::ByKey), site),
        "async_tracked" => on(args, path, &Async(asynchronous::TrackedSave), site),
        "async_save_merging" => on(args, path, &Async(asynchronous::Merging), site),
        "async_save_all_checked" => on(args, path, &Async(asynchronous::SaveAll), site),
        "async_bulk_update" => on(args, path, &Async(asynchronous::BulkUpdate), site),
        "async_force_increment" => on(args, path, &Async(asynchronous::ForceIncrement), site),
        "async_soft_delete_checked" => on(args, path, &Async(asynchronous::SoftDelete), site),
        "async_transaction" => on(args, path, &Async(asynchronous::Transaction), site),
        "async_combiner" => on(args, path, &asynchronous::Combined::default(), site),
        "async_retry_escalated" => on(args, path, &Async(asynchronous::RetryEscalated), site),
        "async_retry_with_standby" => on(args, path, &Async(asynchronous::RetryWithStandby), site),
        "async_versionless" => on(args, path, &Async(asynchronous::VersionlessSave), site),
        other => unreachable!("--path {other} is refused by the option parser"),
    }
}
