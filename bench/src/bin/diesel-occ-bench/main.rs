//! diesel-occ's benchmark: the same read-decide-write workload (reserve one unit of
//! stock) through a blind update, diesel-occ (blocking and async, with its retry
//! helper, with and without lock escalation), the same statements written by hand, a
//! pessimistic lock, a SERIALIZABLE transaction and an atomic conditional UPDATE, on
//! PostgreSQL, MySQL/MariaDB (feature `mysql`) and SQLite, from one hot key to many.
//!
//! ```text
//! cargo run --release -p diesel-occ-bench --features mysql -- \
//!     --backend postgres,mysql,sqlite --workers 4 --keys 1,10,100,10000 --duration 5s
//! ```
//!
//! It reports, per strategy and key count: committed operations per second, p50 and p99
//! latency, conflicts, aborts, retries and lost updates (committed operations minus the
//! units that left the table), then the overhead ratios and the hot-key goodput ratios,
//! and writes `bench/results/<backend>.csv`, `<backend>-summary.txt` and a chart
//! (`<backend>.svg`, and `<backend>.png` when `rsvg-convert` is installed). `--smoke`
//! runs every strategy for a fraction of a second. It asserts nothing about timings.
//!
//! With `occ-async` among the strategies, the paired async rounds set it against `occ`,
//! `handwritten-async` and, built with `--features sqlx`, the sqlx peer (`sqlx`: the same
//! optimistic locking hand-written on sqlx 0.9), printing `occ-async / sqlx` per key count.
//!
//! Then the two comparisons of the library's own cost (blocking and async)
//! in `--abba-rounds` ABBA rounds with a bootstrap interval and a verdict (`abba.rs`);
//! `--abba-only` runs those alone.
//!
//! `--hot-key` compares the hot-row policies on one row at 4 and 16 workers
//! (`hot_key.rs`).
//!
//! `--batch` runs the batch benchmark instead (`batch.rs`): a batch save of N entities
//! against N single saves, N = 1, 10, 100, 1000.
//!
//! The scale-out comparisons and the HTTP benchmark are the `bench-scale` and
//! `bench-http` binaries of this package.

mod abba;
mod async_rounds;
mod batch;
mod chart;
mod hot_key;
mod options;
mod pgbench;
mod report;
mod rounds;
mod run;
mod samples;
mod statements;

use diesel_occ_bench::async_setup::Setup;
use diesel_occ_bench::backend::{Backend, ensure_database};
use diesel_occ_bench::cli;
use diesel_occ_bench::row::Row;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::Setting;

/// Runs everything on one backend: the table, the paired rounds, the statement count,
/// then writes the results.
fn bench_backend(args: &Args, backend: Backend) -> Result<(), String> {
    let url = args.url(backend);
    ensure_database(backend, &url)?;
    let setting = Setting {
        backend,
        url: &url,
        workers: args.common.workers,
        limit: args.common.limit,
        retry: &args.retry,
    };
    let mut summary = Summary::default();
    summary.say(report::header(args, backend, &url));
    if args.abba_only {
        abba::rounds(&setting, args, &mut summary)?;
        return abba::write(args, backend, &summary);
    }
    let rows = sweep(&setting, args, &mut summary)?;
    rounds::paired(&setting, args, &mut summary)?;
    if args.strategies.contains(&Strategy::OccAsynchronous) {
        async_rounds::paired(&setting, args, &mut summary)?;
    }
    abba::rounds(&setting, args, &mut summary)?;
    let measured = statements::measure(backend, &url)?;
    statements::report(&mut summary, &measured);
    summary.say(report::lost_updates(&rows));
    report::write(args, backend, &url, &rows, &summary)
}

/// The main table: every strategy at every key count, one line each.
fn sweep(setting: &Setting<'_>, args: &Args, summary: &mut Summary) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for &keys in &args.keys {
        for &strategy in &args.strategies {
            let row = run::run(setting, strategy, keys, Setup::RECOMMENDED)?;
            summary.say(row.line());
            rows.push(row);
        }
    }
    Ok(rows)
}

fn main() {
    let args = match Args::parse() {
        Ok(args) => args,
        Err((message, help)) => cli::exit_with_usage(&message, help),
    };
    if args.hot_key {
        if let Err(message) = hot_key::bench(&args) {
            eprintln!("hot-key: {message}");
            std::process::exit(1);
        }
        return;
    }
    let mut failed = false;
    if args.redraw {
        for &backend in &args.backends {
            if let Err(message) = redraw(&args, backend) {
                eprintln!("{}: {message}", backend.name());
                failed = true;
            }
        }
        std::process::exit(i32::from(failed));
    }
    for &backend in &args.backends {
        let outcome = if args.batch {
            batch::bench(&args, backend)
        } else {
            bench_backend(&args, backend)
        };
        if let Err(message) = outcome {
            eprintln!("{}: {message}", backend.name());
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// `--redraw`: the backend's chart from its CSV file, and its async chart from the
/// summary's paired async rounds.
fn redraw(args: &Args, backend: Backend) -> Result<(), String> {
    let workers = report::redraw(args, backend)?;
    if let Some(base) = async_rounds::redraw_asynchronous(backend, workers, &args.common.out)? {
        println!("redrew {}", base.with_extension("svg").display());
    }
    Ok(())
}
