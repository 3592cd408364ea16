//! `batch`: a batch save of N entities (`save_all_checked`) against N single saves,
//! blocking and async, in paired rounds (the side that goes first alternates); the
//! statistic is the median of the per-round ratios with its interval. It also counts
//! the statements of 100 single saves and of one batch of 100, and writes
//! `batch-<backend>.csv`, `-summary.txt` and a chart. See `bench/results/method.md`.

use std::fmt::Write as _;

use diesel_occ_bench::backend::{Backend, ensure_database, server_version};
use diesel_occ_bench::harness::Limit;
use diesel_occ_bench::measures::{Counted, Side};
use diesel_occ_bench::model::Stock;
use diesel_occ_bench::stats::{median, per_round, verdict};
use diesel_occ_bench::strategies;
use diesel_occ_bench::strategies::database::Database;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;
use diesel_occ_bench::{pg, sqlite};

use crate::chart;
use crate::options::Args;

/// The PostgreSQL target: a batch of this many saves ...
const TARGET_SIZE: usize = 100;
/// ... at least this many times the throughput of as many single saves.
const TARGET_RATIO: f64 = 5.0;

/// The API measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    Blocking,
    Async,
}

impl Flavour {
    fn name(self) -> &'static str {
        match self {
            Flavour::Blocking => "blocking",
            Flavour::Async => "async",
        }
    }
}

/// One run of one side.
#[derive(Debug, Clone)]
struct Sample {
    flavour: Flavour,
    size: usize,
    side: Side,
    round: usize,
    saves_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// The batch benchmark on one backend.
pub(crate) fn bench(args: &Args, sizes: &[usize], backend: Backend) -> Result<(), String> {
    match backend {
        Backend::Postgres => bench_on::<pg::Db>(args, sizes),
        #[cfg(feature = "mysql")]
        Backend::Mysql => bench_on::<diesel_occ_bench::mysql::Db>(args, sizes),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
        Backend::Sqlite => bench_on::<sqlite::Db>(args, sizes),
    }
}

/// [`bench`] on one backend.
fn bench_on<D: Database>(args: &Args, sizes: &[usize]) -> Result<(), String>
where
    [Stock]:
        diesel_occ::blocking::BatchDsl<D::Conn> + diesel_occ::asynchronous::BatchDsl<D::AsyncConn>,
{
    let backend = D::BACKEND;
    let url = args.url(backend);
    ensure_database(backend, &url)?;
    let Limit::Time(duration) = args.common.limit;
    let largest = sizes.iter().copied().max().unwrap_or(1);
    // At least 100 rows for the statement count.
    let rows =
        i32::try_from((largest * args.common.workers).max(100)).map_err(|e| e.to_string())?;
    let version = server_version(backend, &url);
    let mut summary = Summary::default();
    summary.say(format!(
        "-- batch saves on {} ({version}): {} workers, each owning N rows; sizes {sizes:?}; \
         {} paired rounds of {duration:?} per side",
        backend.name(),
        args.common.workers,
        args.common.rounds,
    ));
    summary.say(
        "   statistic (fixed before the run): saves/s = entities saved per second over all \
         workers; ratio = batch saves/s / single saves/s of the same round (the two sides \
         run back to back, the first alternating); the verdict uses the MEDIAN OF THE \
         PER-ROUND RATIOS, the ratio of the medians is printed beside it"
            .into(),
    );
    let mut conn = D::connect(&url, Strategy::Occ)?;
    conn.reset(rows).map_err(|e| e.to_string())?;
    drop(conn);
    for flavour in [Flavour::Blocking, Flavour::Async] {
        let counted = match flavour {
            Flavour::Blocking => strategies::batch::count_blocking::<D>(&url)?,
            Flavour::Async => strategies::batch::count_asynchronous::<D>(&url)?,
        };
        say_counted(&mut summary, flavour, &counted);
    }
    let mut samples = Vec::new();
    for flavour in [Flavour::Blocking, Flavour::Async] {
        for &size in sizes {
            for round in 1..=args.common.rounds {
                let sides = if round % 2 == 1 {
                    [Side::Single, Side::Batch]
                } else {
                    [Side::Batch, Side::Single]
                };
                for side in sides {
                    let workers = args.common.workers;
                    let measured = match flavour {
                        Flavour::Blocking => {
                            strategies::batch::blocking::<D>(&url, side, size, workers, duration)?
                        }
                        Flavour::Async => strategies::batch::asynchronous::<D>(
                            &url, side, size, workers, duration,
                        )?,
                    };
                    let sample = Sample {
                        flavour,
                        size,
                        side,
                        round,
                        saves_per_sec: measured.saves_per_sec(),
                        p50_ms: measured.ms(50.0),
                        p99_ms: measured.ms(99.0),
                    };
                    summary.say(format!(
                        "round {round}: {:<8} N={size:<5} {:<6} {:>9.0} saves/s  \
                         p50 {:>8.2} ms  p99 {:>8.2} ms per {size} saves ({} saves in {:.2} s)",
                        flavour.name(),
                        side.name(),
                        sample.saves_per_sec,
                        sample.p50_ms,
                        sample.p99_ms,
                        measured.saves,
                        measured.elapsed.as_secs_f64(),
                    ));
                    samples.push(sample);
                }
            }
        }
    }
    table(&mut summary, backend, sizes, args.common.rounds, &samples);
    write(args, sizes, backend, &version, &samples, &summary)
}

fn say_counted(summary: &mut Summary, flavour: Flavour, counted: &Counted) {
    let short = |sql: &String| {
        let sql = sql.split("-- binds").next().unwrap_or(sql).trim();
        if sql.len() > 60 {
            format!(
                "{}... ({} UPDATEs)",
                &sql[..60],
                sql.matches("UPDATE ").count()
            )
        } else {
            sql.to_owned()
        }
    };
    let batch: Vec<String> = counted.batch.iter().map(short).collect();
    let shown = if batch.len() <= 5 {
        batch.join(" | ")
    } else {
        format!(
            "{} | {} | ... | {}",
            batch[0],
            batch[1],
            batch[batch.len() - 1]
        )
    };
    summary.say(format!(
        "statements ({}, Diesel instrumentation): 100 single saves = {}; one batch of 100 = {}: {shown}",
        flavour.name(),
        counted.single.len(),
        counted.batch.len(),
    ));
}

/// The medians per flavour, size and side.
fn medians(samples: &[Sample], flavour: Flavour, size: usize, side: Side) -> (f64, f64, f64) {
    let of = |field: fn(&Sample) -> f64| {
        median(
            samples
                .iter()
                .filter(|s| s.flavour == flavour && s.size == size && s.side == side)
                .map(field)
                .collect(),
        )
    };
    (of(|s| s.saves_per_sec), of(|s| s.p50_ms), of(|s| s.p99_ms))
}

/// Each round's batch / single ratio.
fn round_ratios(samples: &[Sample], flavour: Flavour, size: usize, rounds: usize) -> Vec<f64> {
    (1..=rounds)
        .filter_map(|round| {
            let of = |side| {
                samples
                    .iter()
                    .find(|s| {
                        s.flavour == flavour && s.size == size && s.side == side && s.round == round
                    })
                    .map(|s| s.saves_per_sec)
            };
            Some(of(Side::Batch)? / of(Side::Single)?)
        })
        .collect()
}

/// The table of medians and ratios, and the verdict on PostgreSQL's target.
fn table(
    summary: &mut Summary,
    backend: Backend,
    sizes: &[usize],
    rounds: usize,
    samples: &[Sample],
) {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "| flavour | N | single saves/s | batch saves/s | batch / single (median of rounds) | ratio of medians | per round -> median [95 % CI] | single p50 ms | batch p50 ms |"
    );
    let _ = write!(text, "|---|---:|---:|---:|---:|---:|---|---:|---:|");
    let mut verdicts = Vec::new();
    for flavour in [Flavour::Blocking, Flavour::Async] {
        for &size in sizes {
            let (single, single_p50, _) = medians(samples, flavour, size, Side::Single);
            let (batch, batch_p50, _) = medians(samples, flavour, size, Side::Batch);
            let ratios = round_ratios(samples, flavour, size, rounds);
            let listed = per_round(&ratios);
            let of_rounds = median(ratios);
            let _ = write!(
                text,
                "\n| {} | {size} | {single:.0} | {batch:.0} | **{of_rounds:.2}** | {:.2} | {} | {single_p50:.2} | {batch_p50:.2} |",
                flavour.name(),
                batch / single,
                listed,
            );
            if backend == Backend::Postgres && size == TARGET_SIZE {
                verdicts.push(format!(
                    "target ({}, PostgreSQL): a batch of {TARGET_SIZE} >= {TARGET_RATIO}x the throughput of {TARGET_SIZE} single saves: {of_rounds:.2}x (median of rounds; ratio of medians {:.2}x): {}",
                    flavour.name(),
                    batch / single,
                    verdict(of_rounds, TARGET_RATIO)
                ));
            }
        }
    }
    summary.say(text);
    for verdict in verdicts {
        summary.say(verdict);
    }
}

/// `batch-<backend>.csv`, `batch-<backend>-summary.txt` and the chart.
fn write(
    args: &Args,
    sizes: &[usize],
    backend: Backend,
    version: &str,
    samples: &[Sample],
    summary: &Summary,
) -> Result<(), String> {
    std::fs::create_dir_all(&args.common.out)
        .map_err(|e| format!("{}: {e}", args.common.out.display()))?;
    let base = args.common.out.join(format!("batch-{}", backend.name()));
    let mut csv = String::from("backend,flavour,size,side,round,saves_per_sec,p50_ms,p99_ms\n");
    for s in samples {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{:.1},{:.3},{:.3}",
            backend.name(),
            s.flavour.name(),
            s.size,
            s.side.name(),
            s.round,
            s.saves_per_sec,
            s.p50_ms,
            s.p99_ms
        );
    }
    let csv_path = base.with_extension("csv");
    std::fs::write(&csv_path, csv).map_err(|e| format!("{}: {e}", csv_path.display()))?;
    let summary_path = args
        .common
        .out
        .join(format!("batch-{}-summary.txt", backend.name()));
    std::fs::write(&summary_path, summary.text())
        .map_err(|e| format!("{}: {e}", summary_path.display()))?;

    let mut points = Vec::new();
    for flavour in [Flavour::Blocking, Flavour::Async] {
        for side in [Side::Single, Side::Batch] {
            for &size in sizes {
                let (saves, _, p99) = medians(samples, flavour, size, side);
                points.push(chart::Point {
                    series: format!("{} {}", flavour.name(), side.name()),
                    x: i32::try_from(size).unwrap_or(i32::MAX),
                    throughput: saves,
                    p99_ms: p99,
                });
            }
        }
    }
    let title = format!(
        "{version}: batch of N saves vs N single saves ({} workers)",
        args.common.workers
    );
    let labels = chart::Labels {
        throughput: "entities saved per second (median of rounds)",
        latency: "p99 ms per operation of N saves (log scale)",
        x: "N (entities per operation)",
    };
    let png = chart::draw(&points, &title, &labels, &base)?;
    let mut written = vec![
        csv_path.display().to_string(),
        summary_path.display().to_string(),
    ];
    written.push(base.with_extension("svg").display().to_string());
    if let Some(png) = png {
        written.push(png.display().to_string());
    }
    println!("wrote {}", written.join(", "));
    Ok(())
}
