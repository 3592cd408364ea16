//! The results of one run and how they are written: the table line, the CSV line
//! (read back by `--redraw`) and the backend's summary.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::backend::{Backend, server_version};
use crate::chart;
use crate::harness::{Tally, percentile};
use crate::options::Args;

/// One measured run of one strategy at one setting.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) backend: &'static str,
    pub(crate) strategy: String,
    pub(crate) workers: usize,
    pub(crate) keys: i32,
    pub(crate) seconds: f64,
    pub(crate) committed: u64,
    pub(crate) failed: u64,
    pub(crate) ops_per_sec: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) conflicts: u64,
    pub(crate) aborts: u64,
    pub(crate) retries: u64,
    pub(crate) lost: i64,
}

impl Row {
    pub(crate) fn new(
        backend: Backend,
        strategy: &str,
        workers: usize,
        keys: i32,
        (mut tally, elapsed): (Tally, Duration),
        taken: i64,
    ) -> Row {
        tally.latencies.sort_unstable();
        let seconds = elapsed.as_secs_f64();
        let ms = |nanos: u64| nanos as f64 / 1e6;
        Row {
            backend: backend.name(),
            strategy: strategy.to_owned(),
            workers,
            keys,
            seconds,
            committed: tally.committed,
            failed: tally.failed,
            ops_per_sec: tally.committed as f64 / seconds.max(1e-9),
            p50_ms: ms(percentile(&tally.latencies, 50.0)),
            p99_ms: ms(percentile(&tally.latencies, 99.0)),
            conflicts: tally.conflicts,
            aborts: tally.aborts,
            retries: tally.retries,
            lost: tally.committed as i64 - taken,
        }
    }

    /// Reads a line that [`Row::csv`] wrote.
    fn parse(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 14 {
            return None;
        }
        Some(Row {
            backend: Backend::parse(f[0]).ok()?.name(),
            strategy: f[1].to_owned(),
            workers: f[2].parse().ok()?,
            keys: f[3].parse().ok()?,
            seconds: f[4].parse().ok()?,
            committed: f[5].parse().ok()?,
            failed: f[6].parse().ok()?,
            ops_per_sec: f[7].parse().ok()?,
            p50_ms: f[8].parse().ok()?,
            p99_ms: f[9].parse().ok()?,
            conflicts: f[10].parse().ok()?,
            aborts: f[11].parse().ok()?,
            retries: f[12].parse().ok()?,
            lost: f[13].parse().ok()?,
        })
    }

    pub(crate) const CSV_HEADER: &'static str = "backend,strategy,workers,keys,seconds,committed,failed,\
        ops_per_sec,p50_ms,p99_ms,conflicts,aborts,retries,lost_updates";

    pub(crate) fn csv(&self) -> String {
        format!(
            "{},{},{},{},{:.3},{},{},{:.1},{:.3},{:.3},{},{},{},{}",
            self.backend,
            self.strategy,
            self.workers,
            self.keys,
            self.seconds,
            self.committed,
            self.failed,
            self.ops_per_sec,
            self.p50_ms,
            self.p99_ms,
            self.conflicts,
            self.aborts,
            self.retries,
            self.lost
        )
    }

    pub(crate) fn line(&self) -> String {
        format!(
            "{:<20} keys {:>6}  {:>9.0} ops/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             conflicts {:>7}  aborts {:>6}  retries {:>7}  failed {:>4}  lost {:>6}",
            self.strategy,
            self.keys,
            self.ops_per_sec,
            self.p50_ms,
            self.p99_ms,
            self.conflicts,
            self.aborts,
            self.retries,
            self.failed,
            self.lost
        )
    }
}

/// What a backend's run printed, kept for `<backend>-summary.txt`.
#[derive(Debug, Default)]
pub(crate) struct Summary(String);

impl Summary {
    /// Prints `line` and keeps it.
    pub(crate) fn say(&mut self, line: String) {
        println!("{line}");
        self.0.push_str(&line);
        self.0.push('\n');
    }

    /// Everything said so far.
    pub(crate) fn text(&self) -> &str {
        &self.0
    }
}

/// The table header's line: the backend, its version and the settings.
pub(crate) fn header(args: &Args, backend: Backend, url: &str) -> String {
    format!(
        "== {} ({}): {} workers, keys {:?}, {:?} per run, backoff {:?}..{:?}, {} attempts, \
         hot rows after {} conflicts in {:?}, escalate-op after {}",
        backend.name(),
        server_version(backend, url),
        args.workers,
        args.keys,
        args.limit,
        args.initial_backoff,
        args.max_backoff,
        args.max_attempts,
        args.hot_rows.0,
        args.hot_rows.1,
        args.escalate_after
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
    std::fs::create_dir_all(&args.out).map_err(|e| e.to_string())?;
    let base = args.out.join(backend.name());
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
        args.out.join(format!("{}-summary.txt", backend.name())),
        &summary.0,
    )?;
    let title = format!(
        "diesel-occ-bench: {} ({}), {} workers",
        backend.name(),
        server_version(backend, url),
        args.workers
    );
    let png = chart::draw(rows, &title, &base)?;
    println!(
        "wrote {} and {}{}",
        base.with_extension("csv").display(),
        base.with_extension("svg").display(),
        png.map(|p| format!(" and {}", p.display()))
            .unwrap_or_default()
    );
    Ok(())
}

/// Draws a backend's chart again from its CSV file (the title from its summary), and
/// its async chart from the summary's paired async rounds.
pub(crate) fn redraw(args: &Args, backend: Backend) -> Result<(), String> {
    let base = args.out.join(backend.name());
    let csv = std::fs::read_to_string(base.with_extension("csv"))
        .map_err(|e| format!("{}: {e}", base.with_extension("csv").display()))?;
    let rows: Vec<Row> = csv.lines().skip(1).filter_map(Row::parse).collect();
    let summary = std::fs::read_to_string(args.out.join(format!("{}-summary.txt", backend.name())))
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
    let workers = rows.first().map_or(args.workers, |r| r.workers);
    let title = format!(
        "diesel-occ-bench: {} ({version}), {workers} workers",
        backend.name()
    );
    let png = chart::draw(&rows, &title, &base)?;
    println!(
        "redrew {}{}",
        base.with_extension("svg").display(),
        png.map(|p| format!(" and {}", p.display()))
            .unwrap_or_default()
    );
    if let Some(base) = crate::rounds::redraw_asynchronous(backend, workers, &args.out)? {
        println!("redrew {}", base.with_extension("svg").display());
    }
    Ok(())
}
