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
mod runner;
mod save_checked;
mod soft_delete;
mod timestamp_now;
mod tracked;
mod transaction;
mod update_by_key;

// What `retried/` takes from the backend module.
use super::{AsyncConn, Conn, FAULT_KIND, connect, connect_for_check, examples, fault, schema};
use crate::options::Args;
use crate::report::Report;

/// Runs `path` on this backend; `None` when it could not run (no server).
pub(crate) fn run(args: &Args, path: &'static str) -> Option<Report> {
    use asynchronous::Async;
    use runner::run as on;
    match path {
        "retried" => retried::run(args),
        "save_checked" => on(args, path, &save_checked::Plain),
        "save_checked_where" => on(args, path, &save_checked::Where),
        "update_by_key" => on(args, path, &update_by_key::UpdateByKey),
        "delete_checked" => on(args, path, &delete::Delete::Checked),
        "delete_by_key" => on(args, path, &delete::Delete::ByKey),
        "tracked" => on(args, path, &tracked::Save),
        "save_merging" => on(args, path, &tracked::Merging),
        "save_all_checked" => on(args, path, &batch::SaveAll),
        "bulk_update" => on(args, path, &bulk_update::BulkUpdate),
        "force_increment" => on(args, path, &force_increment::ForceIncrement),
        "soft_delete_checked" => on(args, path, &soft_delete::SoftDelete),
        "transaction" => on(args, path, &transaction::Transaction),
        "bypass_guard" => on(args, path, &bypass_guard::Bypass),
        "timestamp_now" => on(args, path, &timestamp_now::TimestampNow),
        "combiner" => on(args, path, &combiner::Combiner::default()),
        "async_save_checked" => on(args, path, &Async(asynchronous::Plain)),
        "async_save_checked_where" => on(args, path, &Async(asynchronous::Where)),
        "async_update_by_key" => on(args, path, &Async(asynchronous::UpdateByKey)),
        "async_delete_checked" => on(args, path, &Async(asynchronous::Delete::Checked)),
        "async_delete_by_key" => on(args, path, &Async(asynchronous::Delete::ByKey)),
        "async_tracked" => on(args, path, &Async(asynchronous::TrackedSave)),
        "async_save_merging" => on(args, path, &Async(asynchronous::Merging)),
        "async_save_all_checked" => on(args, path, &Async(asynchronous::SaveAll)),
        "async_bulk_update" => on(args, path, &Async(asynchronous::BulkUpdate)),
        "async_force_increment" => on(args, path, &Async(asynchronous::ForceIncrement)),
        "async_soft_delete_checked" => on(args, path, &Async(asynchronous::SoftDelete)),
        "async_transaction" => on(args, path, &Async(asynchronous::Transaction)),
        "async_combiner" => on(args, path, &asynchronous::Combined::default()),
        other => unreachable!("--path {other} is refused by the option parser"),
    }
}
