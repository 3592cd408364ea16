//! How a backend's results of `paired` are written: the table's header, the CSV file
//! (read back by `redraw`), the summary and the chart.

use diesel_occ_bench::backend::{Backend, server_version};
use diesel_occ_bench::row::Row;
use diesel_occ_bench::summary::Summary;

use crate::chart;
use crate::options::Args;

/// The table header's line: the backend, its version and the settings.
pub(crate) fn header(args: &Args, backend: Backend, url: &str) -> String {
    let retry = &args.retry;
    format!(
        "== {} ({}): {} workers, keys {:?}, {:?} per run, backoff {:?}..{:?}, {} attempts, \
         hot rows after {} conflicts in {:?}, escalate-op after {}",
        backend.name(),
        server_version(backend, url),
        args.common.workers,
        args.keys,
        args.common.duration,
        retry.backoff.0,
        retry.backoff.1,
        retry.max_attempts,
        retry.hot_rows.0,
        retry.hot_rows.1,
        retry.escalate_after
    )
}

/// The line that lists the runs that lost updates.
pub(crate) fn lost_updates(rows: &[Row]) -> String {
    let lost: Vec<String> = rows
        .iter()
        .filter(|r| r.lost != 0)
        .map(|r| format!(" {}@{}={}", r.strategy, r.keys, r.lost))
        .collect();
    let lost = if lost.is_empty() {
        " none".into()
    } else {
        lost.concat()
    };
    format!("lost updates (committed - units taken): {lost}")
}

/// Writes `<backend>.csv`, `<backend>-summary.txt` and the chart into `--out`.
pub(crate) fn write(
    args: &Args,
    backend: Backend,
    url: &str,
    rows: &[Row],
    summary: &Summary,
) -> Result<(), String> {
    let name = backend.name();
    let lines: Vec<String> = rows.iter().map(Row::csv).collect();
    let csv = args.common.save(
        &format!("{name}.csv"),
        &format!("{}\n{}\n", Row::CSV_HEADER, lines.join("\n")),
    )?;
    args.common
        .save(&format!("{name}-summary.txt"), summary.text())?;
    let version = server_version(backend, url);
    let svg = draw(args, backend, &version, args.common.workers, rows)?;
    println!("wrote {} and {svg}", csv.display());
    Ok(())
}

/// Draws a backend's chart again from its CSV file (the title from its summary);
/// returns the runs' worker count.
pub(crate) fn redraw(args: &Args, backend: Backend) -> Result<usize, String> {
    let read = |name: String| {
        let path = args.common.out.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let csv = read(format!("{}.csv", backend.name()))?;
    let rows: Vec<Row> = csv.lines().skip(1).filter_map(Row::parse).collect();
    let summary = read(format!("{}-summary.txt", backend.name())).unwrap_or_default();
    // `== <backend> (<version>): ...`
    let version = summary
        .lines()
        .next()
        .and_then(|l| Some(l.split_once('(')?.1.rsplit_once("):")?.0.to_owned()))
        .unwrap_or_else(|| "version unknown".into());
    let workers = rows.first().map_or(args.common.workers, |r| r.workers);
    println!("redrew {}", draw(args, backend, &version, workers, &rows)?);
    Ok(workers)
}

/// The chart of every strategy's throughput and p99 at each key count; the files drawn.
fn draw(
    args: &Args,
    backend: Backend,
    version: &str,
    workers: usize,
    rows: &[Row],
) -> Result<String, String> {
    let title = format!(
        "diesel-occ-bench: {} ({version}), {workers} workers",
        backend.name()
    );
    let points: Vec<chart::Point> = rows
        .iter()
        .map(|r| chart::Point {
            series: r.strategy.clone(),
            x: r.keys,
            throughput: r.ops_per_sec,
            p99_ms: r.p99_ms,
        })
        .collect();
    let base = args.common.out.join(backend.name());
    let png = chart::draw(&points, &title, &chart::HOT_KEYS, &base)?;
    let svg = base.with_extension("svg").display().to_string();
    Ok(match png {
        Some(png) => format!("{svg} and {}", png.display()),
        None => svg,
    })
}
