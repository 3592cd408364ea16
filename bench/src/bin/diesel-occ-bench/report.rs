//! How a backend's results of `paired` are written: the table's header, the CSV file,
//! the summary (read back by `redraw`) and the chart.

use diesel_occ_bench::backend::{Backend, server_version};
use diesel_occ_bench::row::Row;
use diesel_occ_bench::summary::Summary;

use crate::async_rounds;
use crate::chart;
use crate::options::Args;
use crate::samples::Samples;

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
    let lost: String = rows
        .iter()
        .filter(|r| r.lost != 0)
        .map(|r| format!(" {}@{}={}", r.strategy, r.keys, r.lost))
        .collect();
    let lost = if lost.is_empty() { " none" } else { &lost };
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
    let csv = format!("{}\n{}\n", Row::CSV_HEADER, lines.join("\n"));
    let csv = args.common.save(&format!("{name}.csv"), &csv)?;
    args.common
        .save(&format!("{name}-summary.txt"), summary.text())?;
    let points: Vec<chart::Point> = rows
        .iter()
        .map(|r| chart::Point {
            series: r.strategy.clone(),
            x: r.keys,
            y: r.ops_per_sec(),
        })
        .collect();
    let version = server_version(backend, url);
    let svg = draw(args, backend, &version, args.common.workers, &points)?;
    println!("wrote {} and {svg}", csv.display());
    Ok(())
}

/// `redraw`: draws both charts of `paired` again from `<backend>-summary.txt`: the
/// title from its first line, the main chart from the table's lines, the async chart
/// from the `async round` lines.
pub(crate) fn redraw(args: &Args, backend: Backend) -> Result<(), String> {
    let name = format!("{}-summary.txt", backend.name());
    let path = args.common.out.join(name);
    let summary = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    // `== <backend> (<version>): <workers> workers, ...`
    let header = summary.lines().next().and_then(|l| l.split_once(" ("));
    let (version, workers) = header
        .and_then(|(_, rest)| {
            let (version, rest) = rest.rsplit_once("): ")?;
            Some((version, rest.split_whitespace().next()?.parse().ok()?))
        })
        .ok_or_else(|| format!("{}: no header line", path.display()))?;
    let (mut rows, mut goodput) = (Vec::new(), Samples::default());
    for line in summary.lines() {
        // `[async round R: ]LABEL keys K OPS ops/s ...`
        let (round, rest) = match line.strip_prefix("async round ") {
            Some(rest) => rest
                .split_once(": ")
                .map_or((None, rest), |(r, rest)| (r.parse().ok(), rest)),
            None => (None, line),
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        if words.get(1) != Some(&"keys") || line.starts_with("round ") {
            continue;
        }
        let number = |i: usize| words.get(i).and_then(|w| w.parse::<f64>().ok());
        let (Some(keys), Some(ops)) = (number(2), number(3)) else {
            return Err(format!("{}: cannot read {line:?}", path.display()));
        };
        let (label, keys) = (words[0], keys as i32);
        match round {
            Some(round) => goodput.push(round, label, keys, ops),
            None => rows.push(chart::Point {
                series: label.to_owned(),
                x: keys,
                y: ops,
            }),
        }
    }
    println!("redrew {}", draw(args, backend, version, workers, &rows)?);
    if !goodput.0.is_empty() {
        let rounds = goodput.0.iter().map(|s| s.round).max().unwrap_or(1);
        let out = &args.common.out;
        let base = async_rounds::draw(backend, workers, rounds, &goodput, out)?;
        println!("redrew {}", base.with_extension("svg").display());
    }
    Ok(())
}

/// The chart of every strategy's throughput at each key count; the SVG's path.
fn draw(
    args: &Args,
    backend: Backend,
    version: &str,
    workers: usize,
    points: &[chart::Point],
) -> Result<String, String> {
    let title = format!(
        "diesel-occ-bench: {} ({version}), {workers} workers",
        backend.name()
    );
    let base = args.common.out.join(backend.name());
    chart::draw(points, &title, chart::HOT_KEYS, &base)?;
    Ok(base.with_extension("svg").display().to_string())
}
