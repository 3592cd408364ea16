//! diesel-occ's benchmark: one read-decide-write workload (reserve one unit of stock)
//! through every way of writing it, on PostgreSQL, MySQL/MariaDB (feature `mysql`) and
//! SQLite, and the studies around it, one subcommand each (`--help` lists them; each
//! takes `--help`). BENCHMARKS.md holds the claims and the commands behind them. It
//! reports; it asserts nothing about timings.

mod abba;
mod async_rounds;
mod batch;
mod chart;
mod hot_key;
mod http;
mod memory;
mod options;
mod pgbench;
mod report;
mod rounds;
mod run;
mod samples;
mod scale;

use clap::{Parser, Subcommand};
use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::for_backend;
use diesel_occ_bench::strategies::blocking;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::abba::MIN_ROUNDS;
use crate::options::Args;

/// diesel-occ's benchmarks: what each way of writing a read-decide-write costs, and
/// whether it loses updates.
#[derive(Debug, Parser)]
#[command(name = "diesel-occ-bench")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every strategy at every key count, then the paired rounds (the main run)
    ///
    /// Then paired rounds of the comparisons (the statement cache, the hot key,
    /// pgbench, async against blocking, the sqlx peer) and the statements of one save;
    /// writes <backend>.csv, <backend>-summary.txt and the charts.
    Paired {
        #[command(flatten)]
        args: Args,
        /// Skip the pgbench comparison
        #[arg(long)]
        no_pgbench: bool,
    },
    /// The library's own cost against the same code by hand, in ABBA rounds
    ///
    /// occ / handwritten-prepared and occ-async / handwritten-async at the most keys:
    /// the median of the per-round ratios with a 95 % bootstrap interval; writes
    /// <backend>-abba-summary.txt.
    Abba {
        #[command(flatten)]
        args: Args,
    },
    /// A batch save of N entities against N single saves
    ///
    /// Blocking and async, in paired rounds; writes batch-<backend>.csv,
    /// batch-<backend>-summary.txt and a chart.
    Batch {
        #[command(flatten)]
        args: Args,
        /// Entities per batch
        #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000", value_parser = diesel_occ_bench::cli::count)]
        sizes: Vec<usize>,
    },
    /// The ways to write one hot row, per worker count
    ///
    /// occ, pessimistic, occ-combine, occ-escalate and occ-combine-async in paired
    /// rounds; writes hot-key.csv and hot-key-summary.txt.
    HotKey {
        #[command(flatten)]
        args: Args,
        /// Worker counts
        #[arg(long, value_delimiter = ',', default_value = "4,16", value_parser = diesel_occ_bench::cli::count)]
        hot_workers: Vec<usize>,
    },
    /// Draws the charts of `paired` again from the files in --out
    Redraw {
        #[command(flatten)]
        args: Args,
    },
    /// The example HTTP service under load, on PostgreSQL
    ///
    /// put-if-match, patch-load-save and put-unconditional, over HTTP and without it;
    /// writes http.csv and http-summary.txt.
    Http(http::Args),
    /// Scale-out on the clusters of tests/cluster
    ///
    /// A 3-node Galera cluster (1 node against 3) and a PostgreSQL standby (reads on
    /// the standby against the primary); writes <cluster>.csv and -summary.txt.
    Scale(scale::Args),
    /// Bytes held per Tracked<T> and per retry::HotRows row
    Memory(memory::Args),
    /// The median of the ratios given and its 95 % bootstrap interval
    ///
    /// As every subcommand reports its per-round ratios; bench/compile-time.sh passes it
    /// the build-time ratios of the compile-time study.
    Interval {
        /// Per-round ratios
        #[arg(required = true)]
        ratios: Vec<f64>,
    },
}

fn main() {
    let outcome = match Cli::parse().command {
        Command::Paired {
            mut args,
            no_pgbench,
        } => {
            args.finish(3);
            each_backend(&args, |backend| {
                paired(&args, !no_pgbench && !args.common.smoke, backend)
            })
        }
        Command::Abba { mut args } => {
            args.finish(MIN_ROUNDS);
            each_backend(&args, |backend| abba_only(&args, backend))
        }
        Command::Batch {
            mut args,
            mut sizes,
        } => {
            args.finish(3);
            if args.common.smoke {
                sizes.retain(|&n| n <= 100);
            }
            each_backend(&args, |backend| batch::bench(&args, &sizes, backend))
        }
        Command::HotKey {
            mut args,
            hot_workers,
        } => {
            args.finish(3);
            hot_key::bench(&args, &hot_workers)
        }
        Command::Redraw { mut args } => {
            args.finish(3);
            each_backend(&args, |backend| report::redraw(&args, backend))
        }
        Command::Http(args) => http::main(args),
        Command::Scale(args) => scale::main(args),
        Command::Memory(args) => memory::main(&args),
        Command::Interval { ratios } => {
            println!("{}", diesel_occ_bench::stats::per_round(&ratios));
            Ok(())
        }
    };
    if let Err(message) = outcome {
        eprintln!("diesel-occ-bench: {message}");
        std::process::exit(1);
    }
}

/// Runs `bench` on every `--backend`, going on after a failure; fails if any failed.
fn each_backend(
    args: &Args,
    mut bench: impl FnMut(Backend) -> Result<(), String>,
) -> Result<(), String> {
    let failed: Vec<String> = args
        .backends
        .iter()
        .filter_map(|&backend| {
            bench(backend)
                .err()
                .map(|e| format!("{}: {e}", backend.name()))
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// `paired` on one backend: the table (every strategy at every key count), the paired
/// rounds, the statement count, then the results.
fn paired(args: &Args, pgbench: bool, backend: Backend) -> Result<(), String> {
    let url = args.url(backend);
    let setting = args.setting(backend, &url)?;
    let mut summary = Summary::default();
    summary.say(report::header(args, backend, &url));
    let mut rows = Vec::new();
    for &keys in &args.keys {
        for &strategy in &args.strategies {
            let row = run::run(&setting, strategy, keys)?;
            summary.say(row.line());
            rows.push(row);
        }
    }
    rounds::paired(&setting, args, pgbench, &mut summary)?;
    if args.strategies.contains(&Strategy::OccAsynchronous) {
        async_rounds::paired(&setting, args, &mut summary)?;
    }
    // The statements of 100 saves each way, on a fresh table.
    let statements = for_backend!(backend, D => {
        let mut conn = D::connect(&url, Strategy::Atomic)?;
        conn.reset(100).map_err(|e| e.to_string())?;
        blocking::statements(&mut conn, 100)
    })?;
    statements.into_iter().for_each(|line| summary.say(line));
    summary.say(report::lost_updates(&rows));
    report::write(args, backend, &url, &rows, &summary)
}

/// `abba` on one backend; writes `<backend>-abba-summary.txt`.
fn abba_only(args: &Args, backend: Backend) -> Result<(), String> {
    let url = args.url(backend);
    let setting = args.setting(backend, &url)?;
    let mut summary = Summary::default();
    summary.say(report::header(args, backend, &url));
    abba::rounds(&setting, args, &mut summary)?;
    let name = format!("{}-abba-summary.txt", backend.name());
    println!(
        "wrote {}",
        args.common.save(&name, summary.text())?.display()
    );
    Ok(())
}
