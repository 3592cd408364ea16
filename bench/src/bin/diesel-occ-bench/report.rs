//! How a backend's results are written: the table's header, the CSV file (read back by
//! `--redraw`), the summary and the chart.

use std::fmt::Write as _;
use std::path::PathBuf;

use diesel_occ_bench::backend::{Backend, server_version};
use diesel_occ_bench::row::Row;
use diesel_occ_bench::summary::Summary;

use crate::chart;
use crate::options::Args;

/// The table header's line: the backend, its version and the settings.
pub(crate) fn header(args: &Args, backend: Backend, url: &str) -> String {
    format!(
        "== {} ({}): {} workers, keys {:?}, {:?} per run, backoff {:?}..{:?}, {} attempts, \
         hot rows after {} conflicts in {:?}, escalate-op after {}",
        backend.name(),
        server_version(backend, url),
        args.common.workers,
        args.keys,
        args.common.limit,
        args.retry.backoff.0,
        args.retry.backoff.1,
        args.retry.max_attempts,
        args.retry.hot_rows.0,
        args.retry.hot_rows.1,
        args.retry.escalate_after
    )
}

/// The line that lists the runs that lost updates.
pub(crate) fn lost_updates(rows: &[Row]) -> String {
    let mut lost = String::new();
    for row in rows.iter().filter(|r| r.lost != 0) {
        let _ = write!(lost, " {}@{}={}", row.strategy, row.keys, row.lost);
    }
    format!(
        "lost updates (committed - units taken): {}",
        if lost.is_empty() {
            " none".into()
        } else {
            lost
        }
    )
}

/// Writes `<backend>.csv`, `<backend>-summary.txt` and the chart into `--out`.
pub(crate) fn write(
    args: &Args,
    backend: Backend,
    url: &str,
    rows: &[Row],
    summary: &Summary,
) -> Result<(), String> {
    std::fs::create_dir_all(&args.common.out).map_err(|e| e.to_string())?;
    let base = args.common.out.join(backend.name());
    let mut csv = String::from(Row::CSV_HEADER);
    csv.push('\n');
    for row in rows {
        csv.push_str(&row.csv());
        csv.push('\n');
    }
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write(base.with_extension("csv"), &csv)?;
    write(
        args.common
            .out
            .join(format!("{}-summary.txt", backend.name())),
        summary.text(),
    )?;
    let title = format!(
        "diesel-occ-bench: {} ({}), {} workers",
        backend.name(),
        server_version(backend, url),
        args.common.workers
    );
    let png = chart::draw(&points(rows), &title, &chart::HOT_KEYS, &base)?;
    println!(
        "wrote {} and {}{}",
        base.with_extension("csv").display(),
        base.with_extension("svg").display(),
        png.map(|p| format!(" and {}", p.display()))
            .unwrap_or_default()
    );
    Ok(())
}

/// Draws a backend's chart again from its CSV file (the title from its summary);
/// returns the runs' worker count.
pub(crate) fn redraw(args: &Args, backend: Backend) -> Result<usize, String> {
    let base = args.common.out.join(backend.name());
    let csv = std::fs::read_to_string(base.with_extension("csv"))
        .map_err(|e| format!("{}: {e}", base.with_extension("csv").display()))?;
    let rows: Vec<Row> = csv.lines().skip(1).filter_map(Row::parse).collect();
    let summary = std::fs::read_to_string(
        args.common
            .out
            .join(format!("{}-summary.txt", backend.name())),
    )
    .unwrap_or_default();
    let version = summary
        .lines()
        .next()
        .and_then(|l| {
            l.split_once('(')?
                .1
                .rsplit_once("):")
                .map(|(v, _)| v.to_owned())
        })
        .unwrap_or_else(|| "version unknown".into());
    let workers = rows.first().map_or(args.common.workers, |r| r.workers);
    let title = format!(
        "diesel-occ-bench: {} ({version}), {workers} workers",
        backend.name()
    );
    let png = chart::draw(&points(&rows), &title, &chart::HOT_KEYS, &base)?;
    println!(
        "redrew {}{}",
        base.with_extension("svg").display(),
        png.map(|p| format!(" and {}", p.display()))
            .unwrap_or_default()
    );
    Ok(workers)
}

/// The chart's points: each strategy's throughput and p99 at each key count.
fn points(rows: &[Row]) -> Vec<chart::Point> {
    rows.iter()
        .map(|r| chart::Point {
            series: r.strategy.clone(),
            x: r.keys,
            throughput: r.ops_per_sec,
            p99_ms: r.p99_ms,
        })
        .collect()
}
