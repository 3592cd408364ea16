//! `batch`: a batch save of N entities (`save_all_checked`) against N single saves,
//! blocking and async, in paired rounds (the side that goes first alternates); each
//! ratio is the median of the per-round ratios with its interval. It also counts the
//! statements of 100 single saves and of one batch of 100, and writes
//! `batch-<backend>.csv`, `-summary.txt` and a chart. See `bench/results/method.md`.

use std::fmt::Write as _;

use diesel_occ_bench::backend::{Backend, ensure_database, server_version};
use diesel_occ_bench::for_backend;
use diesel_occ_bench::stats::{median, per_round, percentile};
use diesel_occ_bench::strategies::batch;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::chart;
use crate::options::Args;
use crate::samples::Samples;

/// The API measured, by `asynchronous`.
const FLAVOURS: [(bool, &str); 2] = [(false, "blocking"), (true, "async")];
/// How N entities are saved, by `batch`: `save_checked` on each, or one
/// `save_all_checked`.
const SIDES: [(bool, &str); 2] = [(false, "single"), (true, "batch")];

/// The batch benchmark on one backend.
pub(crate) fn bench(args: &Args, sizes: &[usize], backend: Backend) -> Result<(), String> {
    for_backend!(backend, D => bench_on::<D>(args, sizes))
}

/// [`bench`] on one backend.
fn bench_on<D: StockSql>(args: &Args, sizes: &[usize]) -> Result<(), String> {
    let (backend, workers, duration) = (D::BACKEND, args.common.workers, args.common.duration);
    let url = args.url(backend);
    ensure_database(backend, &url)?;
    let largest = sizes.iter().copied().max().unwrap_or(1);
    // At least 100 rows for the statement count.
    let rows = i32::try_from((largest * workers).max(100)).map_err(|e| e.to_string())?;
    let version = server_version(backend, &url);
    let mut summary = Summary::default();
    summary.say(format!(
        "-- batch saves on {} ({version}): {workers} workers, each owning N rows; sizes \
         {sizes:?}; {} paired rounds of {duration:?} per side; saves/s = entities saved per \
         second over all workers; ratio = batch saves/s / single saves/s of the same round",
        backend.name(),
        args.common.rounds,
    ));
    D::connect(&url, Strategy::Occ)?
        .reset(rows)
        .map_err(|e| e.to_string())?;
    for (asynchronous, flavour) in FLAVOURS {
        let [single, batch] = batch::count::<D>(&url, asynchronous)?;
        let short = |sql: &String| {
            let sql = sql.split("-- binds").next().unwrap_or(sql).trim();
            match sql.get(..60).filter(|_| sql.len() > 60) {
                Some(start) => format!("{start}... ({} UPDATEs)", sql.matches("UPDATE ").count()),
                None => sql.to_owned(),
            }
        };
        let shown: Vec<String> = batch.iter().map(short).collect();
        let shown = if shown.len() <= 5 {
            shown.join(" | ")
        } else {
            format!(
                "{} | {} | ... | {}",
                shown[0],
                shown[1],
                shown[shown.len() - 1]
            )
        };
        summary.say(format!(
            "statements ({flavour}, Diesel instrumentation): 100 single saves = {}; one batch \
             of 100 = {}: {shown}",
            single.len(),
            batch.len(),
        ));
    }
    // Every run's figures, labelled `<flavour> <side>`, the size as the key count.
    let (mut saves_per_sec, mut p50_ms) = (Samples::default(), Samples::default());
    let mut csv = String::from("backend,flavour,size,side,round,saves_per_sec,p50_ms,p99_ms\n");
    for (asynchronous, flavour) in FLAVOURS {
        for &size in sizes {
            for round in 1..=args.common.rounds {
                let mut sides = SIDES;
                if round % 2 == 0 {
                    sides.reverse();
                }
                for (is_batch, side) in sides {
                    let (mut tally, elapsed) =
                        batch::run::<D>(&url, asynchronous, is_batch, size, workers, duration)?;
                    tally.latencies.sort_unstable();
                    let ms = |p| percentile(&tally.latencies, p) as f64 / 1e6;
                    let (p50, p99) = (ms(50.0), ms(99.0));
                    let saves = tally.committed * size as u64;
                    let seconds = elapsed.as_secs_f64();
                    let per_sec = saves as f64 / seconds.max(1e-9);
                    summary.say(format!(
                        "round {round}: {flavour:<8} N={size:<5} {side:<6} {per_sec:>9.0} saves/s  \
                         p50 {p50:>8.2} ms  p99 {p99:>8.2} ms per {size} saves ({saves} saves in \
                         {seconds:.2} s)",
                    ));
                    let name = backend.name();
                    let _ = writeln!(
                        csv,
                        "{name},{flavour},{size},{side},{round},{per_sec:.1},{p50:.3},{p99:.3}"
                    );
                    let (label, keys) = (format!("{flavour} {side}"), size as i32);
                    saves_per_sec.push(round, &label, keys, per_sec);
                    p50_ms.push(round, &label, keys, p50);
                }
            }
        }
    }
    summary.say(table(sizes, args.common.rounds, &saves_per_sec, &p50_ms));
    let name = format!("batch-{}", backend.name());
    let mut written = vec![
        args.common.save(&format!("{name}.csv"), &csv)?,
        args.common
            .save(&format!("{name}-summary.txt"), summary.text())?,
    ];
    let mut points = Vec::new();
    for (_, flavour) in FLAVOURS {
        for (_, side) in SIDES {
            for &size in sizes {
                let (label, keys) = (format!("{flavour} {side}"), size as i32);
                points.push(chart::Point {
                    y: saves_per_sec.median(&label, keys),
                    series: label,
                    x: keys,
                });
            }
        }
    }
    let title = format!("{version}: batch of N saves vs N single saves ({workers} workers)");
    let axes = (
        "N (entities per operation)",
        "entities saved per second (median of rounds)",
    );
    let base = args.common.out.join(&name);
    written.push(base.with_extension("svg"));
    written.extend(chart::draw(&points, &title, axes, &base)?);
    let written: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", written.join(", "));
    Ok(())
}

/// The table of medians and per-round ratios.
fn table(sizes: &[usize], rounds: usize, saves_per_sec: &Samples, p50_ms: &Samples) -> String {
    let mut text = String::from(
        "| flavour | N | single saves/s | batch saves/s | batch / single (median of rounds) | \
         ratio of medians | per round -> median [95 % CI] | single p50 ms | batch p50 ms |\n\
         |---|---:|---:|---:|---:|---:|---|---:|---:|",
    );
    for (_, flavour) in FLAVOURS {
        for &size in sizes {
            let (single, batch) = (format!("{flavour} single"), format!("{flavour} batch"));
            let keys = size as i32;
            let saves = |label| saves_per_sec.median(label, keys);
            let p50 = |label| p50_ms.median(label, keys);
            let ratios = saves_per_sec.ratios(rounds, (&batch, keys), (&single, keys));
            let _ = write!(
                text,
                "\n| {flavour} | {size} | {:.0} | {:.0} | **{:.2}** | {:.2} | {} | {:.2} | {:.2} |",
                saves(&single),
                saves(&batch),
                median(ratios.clone()),
                saves(&batch) / saves(&single),
                per_round(&ratios),
                p50(&single),
                p50(&batch),
            );
        }
    }
    text
}
