//! `--batch`: the throughput of a batch save of N entities (`save_all_checked`) against
//! N single saves (`save_checked` one after the other, each in autocommit), blocking
//! and async, for N = 1, 10, 100 and 1000 (`--batch-sizes`).
//!
//! Each of `--workers` workers owns N rows of its own (no conflicts: this measures the
//! cost of the statements, not contention), keeps its N entities in memory, and, until
//! the run's time is up, changes every one of them and saves them: all N in one batch,
//! or one at a time. Throughput is entities saved per second over all workers.
//!
//! The ratio batch / single comes from paired rounds: in each round the two sides run
//! back to back (the side that goes first alternates), so that the drift of a shared
//! machine hits both alike. The statistic, fixed before the run and printed first: the
//! MEDIAN OF THE PER-ROUND RATIOS; the ratio of the medians is printed beside it.
//!
//! It also counts, with Diesel's instrumentation, the statements that 100 single saves
//! and one batch of 100 send. It writes `batch-<backend>.csv`,
//! `batch-<backend>-summary.txt` and a chart `batch-<backend>.svg` (and `.png` when
//! `rsvg-convert` is installed) to `--out`.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use diesel::connection::{Instrumentation, InstrumentationEvent};

use crate::backend::{Backend, ensure_database, server_version};
use crate::chart;
use crate::harness::{Limit, percentile};
use crate::options::Args;

/// Batch sizes measured by default.
pub(crate) const SIZES: [usize; 4] = [1, 10, 100, 1000];
/// The PostgreSQL target: a batch of this many saves ...
const TARGET_SIZE: usize = 100;
/// ... at least this many times the throughput of as many single saves.
const TARGET_RATIO: f64 = 5.0;

/// How N entities are saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// `save_checked` on each, one after the other.
    Single,
    /// One `save_all_checked`.
    Batch,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Single => "single",
            Side::Batch => "batch",
        }
    }
}

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

/// What the workers of one run did.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// Entities saved.
    pub(crate) saves: u64,
    /// From the first worker's start to the last worker's end.
    pub(crate) elapsed: Duration,
    /// Nanoseconds per operation (N saves).
    pub(crate) latencies: Vec<u64>,
}

impl Measured {
    /// Merges the workers' `(saves, started, ended, latencies)`.
    pub(crate) fn merge(workers: Vec<(u64, Instant, Instant, Vec<u64>)>) -> Measured {
        let mut measured = Measured::default();
        let first = workers.iter().map(|w| w.1).min();
        let last = workers.iter().map(|w| w.2).max();
        if let (Some(first), Some(last)) = (first, last) {
            measured.elapsed = last - first;
        }
        for (saves, _, _, latencies) in workers {
            measured.saves += saves;
            measured.latencies.extend(latencies);
        }
        measured.latencies.sort_unstable();
        measured
    }

    fn saves_per_sec(&self) -> f64 {
        self.saves as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn ms(&self, p: f64) -> f64 {
        percentile(&self.latencies, p) as f64 / 1e6
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

/// What the batch benchmark printed, kept for `batch-<backend>-summary.txt`.
#[derive(Debug, Default)]
struct Summary(String);

impl Summary {
    /// Prints `line` and keeps it.
    fn say(&mut self, line: String) {
        println!("{line}");
        self.0.push_str(&line);
        self.0.push('\n');
    }
}

/// Counts the statements a connection starts (Diesel's instrumentation).
#[derive(Debug, Clone, Default)]
pub(crate) struct StatementLog(Arc<Mutex<Vec<String>>>);

impl StatementLog {
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Instrumentation for StatementLog {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::StartQuery { query, .. } = event {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(query.to_string());
        }
    }
}

/// The statements that 100 single saves and one batch of 100 started.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    pub(crate) single: Vec<String>,
    pub(crate) batch: Vec<String>,
}

/// The batch benchmark on one backend.
pub(crate) fn bench(args: &Args, backend: Backend) -> Result<(), String> {
    let url = args.url(backend);
    ensure_database(backend, &url)?;
    let duration = match args.limit {
        Limit::Time(duration) => duration,
        Limit::Ops(_) => return Err("--batch runs for a --duration, not --ops".into()),
    };
    let sizes = &args.batch_sizes;
    let largest = sizes.iter().copied().max().unwrap_or(1);
    // At least 100 rows for the statement count.
    let rows = i32::try_from((largest * args.workers).max(100)).map_err(|e| e.to_string())?;
    let version = server_version(backend, &url);
    let mut summary = Summary::default();
    summary.say(format!(
        "-- batch saves on {} ({version}): {} workers, each owning N rows; sizes {sizes:?}; \
         {} paired rounds of {duration:?} per side",
        backend.name(),
        args.workers,
        args.rounds,
    ));
    summary.say(
        "   statistic (fixed before the run): saves/s = entities saved per second over all \
         workers; ratio = batch saves/s / single saves/s of the same round (the two sides \
         run back to back, the first alternating); the verdict uses the MEDIAN OF THE \
         PER-ROUND RATIOS, the ratio of the medians is printed beside it"
            .into(),
    );
    reset(backend, &url, rows)?;
    for flavour in [Flavour::Blocking, Flavour::Async] {
        let counted = count(backend, &url, flavour)?;
        say_counted(&mut summary, flavour, &counted);
    }
    let mut samples = Vec::new();
    for flavour in [Flavour::Blocking, Flavour::Async] {
        for &size in sizes {
            for round in 1..=args.rounds {
                let sides = if round % 2 == 1 {
                    [Side::Single, Side::Batch]
                } else {
                    [Side::Batch, Side::Single]
                };
                for side in sides {
                    let measured = run(backend, &url, flavour, side, size, args.workers, duration)?;
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
    table(&mut summary, backend, sizes, args.rounds, &samples);
    write(args, backend, &version, &samples, &summary)
}

/// Drops and creates the table with `rows` rows.
fn reset(backend: Backend, url: &str, rows: i32) -> Result<(), String> {
    use crate::strategy::Strategy;
    match backend {
        Backend::Postgres => {
            let mut conn = crate::pg::connect(url, Strategy::Occ)?;
            crate::pg::reset(&mut conn, rows).map_err(|e| e.to_string())
        }
        #[cfg(feature = "mysql")]
        Backend::Mysql => {
            let mut conn = crate::mysql::connect(url, Strategy::Occ)?;
            crate::mysql::reset(&mut conn, rows).map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
        Backend::Sqlite => {
            let mut conn = crate::sqlite::connect(url, Strategy::Occ)?;
            crate::sqlite::reset(&mut conn, rows).map_err(|e| e.to_string())
        }
    }
}

/// One run of one side, on the backend's module.
fn run(
    backend: Backend,
    url: &str,
    flavour: Flavour,
    side: Side,
    size: usize,
    workers: usize,
    duration: Duration,
) -> Result<Measured, String> {
    macro_rules! on {
        ($module:ident) => {
            match flavour {
                Flavour::Blocking => $module::blocking(url, side, size, workers, duration),
                Flavour::Async => $module::asynchronous(url, side, size, workers, duration),
            }
        };
    }
    match backend {
        Backend::Postgres => on!(pg),
        #[cfg(feature = "mysql")]
        Backend::Mysql => on!(mysql),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
        Backend::Sqlite => on!(sqlite),
    }
}

/// The statements of 100 single saves and of one batch of 100.
fn count(backend: Backend, url: &str, flavour: Flavour) -> Result<Counted, String> {
    macro_rules! on {
        ($module:ident) => {
            match flavour {
                Flavour::Blocking => $module::count_blocking(url),
                Flavour::Async => $module::count_asynchronous(url),
            }
        };
    }
    match backend {
        Backend::Postgres => on!(pg),
        #[cfg(feature = "mysql")]
        Backend::Mysql => on!(mysql),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
        Backend::Sqlite => on!(sqlite),
    }
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

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
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
fn per_round(samples: &[Sample], flavour: Flavour, size: usize, rounds: usize) -> Vec<f64> {
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
        "| flavour | N | single saves/s | batch saves/s | batch / single (median of rounds) | ratio of medians | per round | single p50 ms | batch p50 ms |"
    );
    let _ = write!(text, "|---|---:|---:|---:|---:|---:|---|---:|---:|");
    let mut verdicts = Vec::new();
    for flavour in [Flavour::Blocking, Flavour::Async] {
        for &size in sizes {
            let (single, single_p50, _) = medians(samples, flavour, size, Side::Single);
            let (batch, batch_p50, _) = medians(samples, flavour, size, Side::Batch);
            let ratios = per_round(samples, flavour, size, rounds);
            let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            let of_rounds = median(ratios);
            let _ = write!(
                text,
                "\n| {} | {size} | {single:.0} | {batch:.0} | **{of_rounds:.2}** | {:.2} | {} | {single_p50:.2} | {batch_p50:.2} |",
                flavour.name(),
                batch / single,
                listed.join(" "),
            );
            if backend == Backend::Postgres && size == TARGET_SIZE {
                verdicts.push(format!(
                    "target ({}, PostgreSQL): a batch of {TARGET_SIZE} >= {TARGET_RATIO}x the throughput of {TARGET_SIZE} single saves: {of_rounds:.2}x (median of rounds; ratio of medians {:.2}x): {}",
                    flavour.name(),
                    batch / single,
                    if of_rounds >= TARGET_RATIO { "met" } else { "below target" }
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
    backend: Backend,
    version: &str,
    samples: &[Sample],
    summary: &Summary,
) -> Result<(), String> {
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let base = args.out.join(format!("batch-{}", backend.name()));
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
        .out
        .join(format!("batch-{}-summary.txt", backend.name()));
    std::fs::write(&summary_path, &summary.0)
        .map_err(|e| format!("{}: {e}", summary_path.display()))?;

    let mut points = Vec::new();
    for flavour in [Flavour::Blocking, Flavour::Async] {
        for side in [Side::Single, Side::Batch] {
            for &size in &args.batch_sizes {
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
        args.workers
    );
    let labels = chart::Labels {
        throughput: "entities saved per second (median of rounds)",
        latency: "p99 ms per operation of N saves (log scale)",
        x: "N (entities per operation)",
    };
    let png = chart::draw_points(&points, &title, &labels, &base)?;
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

/// The workers of one backend, for its blocking `Conn` and its `AsyncConn`.
macro_rules! batch_workers {
    ($module:ident, $backend:path, $after_connect:expr) => {
        mod $module {
            use std::sync::Barrier;
            use std::time::{Duration, Instant};

            use diesel::prelude::*;

            use super::{Counted, Measured, Side, StatementLog};
            use crate::model::{Stock, bench_stock};
            use crate::strategy::Strategy;
            use $backend::{AsyncConn, Conn, connect};

            type Worker = (u64, Instant, Instant, Vec<u64>);

            /// Rows `index * size + 1 ..= (index + 1) * size`.
            fn range(index: usize, size: usize) -> (i32, i32) {
                let first = i32::try_from(index * size + 1).unwrap_or(i32::MAX);
                let last = i32::try_from((index + 1) * size).unwrap_or(i32::MAX);
                (first, last)
            }

            fn load(conn: &mut Conn, (first, last): (i32, i32)) -> Result<Vec<Stock>, String> {
                bench_stock::table
                    .filter(bench_stock::id.between(first, last))
                    .order(bench_stock::id)
                    .select(Stock::as_select())
                    .load(conn)
                    .map_err(|e| e.to_string())
            }

            fn save(conn: &mut Conn, side: Side, stocks: &mut [Stock]) -> Result<(), String> {
                use diesel_occ::prelude::*;
                for stock in stocks.iter_mut() {
                    stock.available -= 1;
                }
                match side {
                    Side::Single => {
                        for stock in stocks.iter_mut() {
                            stock.save_checked(conn).map_err(|e| e.to_string())?;
                        }
                        Ok(())
                    }
                    Side::Batch => stocks.save_all_checked(conn).map_err(|e| e.to_string()),
                }
            }

            pub(super) fn blocking(
                url: &str,
                side: Side,
                size: usize,
                workers: usize,
                duration: Duration,
            ) -> Result<Measured, String> {
                let mut held = Vec::with_capacity(workers);
                for index in 0..workers {
                    let mut conn = connect(url, Strategy::Occ)?;
                    let stocks = load(&mut conn, range(index, size))?;
                    held.push((conn, stocks));
                }
                let start = Barrier::new(workers);
                let results: Vec<Result<Worker, String>> = std::thread::scope(|scope| {
                    let handles: Vec<_> = held
                        .into_iter()
                        .map(|(mut conn, mut stocks)| {
                            let start = &start;
                            scope.spawn(move || {
                                start.wait();
                                let began = Instant::now();
                                let mut saves = 0;
                                let mut latencies = Vec::new();
                                while began.elapsed() < duration {
                                    let op = Instant::now();
                                    save(&mut conn, side, &mut stocks)?;
                                    latencies.push(op.elapsed().as_nanos() as u64);
                                    saves += stocks.len() as u64;
                                }
                                Ok((saves, began, Instant::now(), latencies))
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or_else(|_| Err("worker panicked".into())))
                        .collect()
                });
                Ok(Measured::merge(
                    results.into_iter().collect::<Result<_, _>>()?,
                ))
            }

            async fn connect_async(url: &str) -> Result<AsyncConn, String> {
                use diesel_async::{AsyncConnection, SimpleAsyncConnection};
                let mut conn = AsyncConn::establish(url).await.map_err(|e| e.to_string())?;
                let after_connect: &str = $after_connect;
                if !after_connect.is_empty() {
                    conn.batch_execute(after_connect)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok(conn)
            }

            async fn load_async(
                conn: &mut AsyncConn,
                (first, last): (i32, i32),
            ) -> Result<Vec<Stock>, String> {
                diesel_async::RunQueryDsl::load(
                    bench_stock::table
                        .filter(bench_stock::id.between(first, last))
                        .order(bench_stock::id)
                        .select(Stock::as_select()),
                    conn,
                )
                .await
                .map_err(|e| e.to_string())
            }

            async fn save_async(
                conn: &mut AsyncConn,
                side: Side,
                stocks: &mut [Stock],
            ) -> Result<(), String> {
                use diesel_occ::asynchronous::prelude::*;
                for stock in stocks.iter_mut() {
                    stock.available -= 1;
                }
                match side {
                    Side::Single => {
                        for stock in stocks.iter_mut() {
                            stock.save_checked(conn).await.map_err(|e| e.to_string())?;
                        }
                        Ok(())
                    }
                    Side::Batch => stocks
                        .save_all_checked(conn)
                        .await
                        .map_err(|e| e.to_string()),
                }
            }

            fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
                let threads = std::thread::available_parallelism().map_or(2, usize::from);
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads.min(workers).max(1))
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
            }

            pub(super) fn asynchronous(
                url: &str,
                side: Side,
                size: usize,
                workers: usize,
                duration: Duration,
            ) -> Result<Measured, String> {
                runtime(workers)?.block_on(async move {
                    let mut held = Vec::with_capacity(workers);
                    for index in 0..workers {
                        let mut conn = connect_async(url).await?;
                        let stocks = load_async(&mut conn, range(index, size)).await?;
                        held.push((conn, stocks));
                    }
                    let tasks: Vec<_> = held
                        .into_iter()
                        .map(|(mut conn, mut stocks)| {
                            tokio::spawn(async move {
                                let began = Instant::now();
                                let mut saves = 0;
                                let mut latencies = Vec::new();
                                while began.elapsed() < duration {
                                    let op = Instant::now();
                                    save_async(&mut conn, side, &mut stocks).await?;
                                    latencies.push(op.elapsed().as_nanos() as u64);
                                    saves += stocks.len() as u64;
                                }
                                Ok::<Worker, String>((saves, began, Instant::now(), latencies))
                            })
                        })
                        .collect();
                    let mut results = Vec::with_capacity(workers);
                    for task in tasks {
                        results.push(task.await.map_err(|e| e.to_string())??);
                    }
                    Ok(Measured::merge(results))
                })
            }

            pub(super) fn count_blocking(url: &str) -> Result<Counted, String> {
                let mut conn = connect(url, Strategy::Occ)?;
                let log = StatementLog::default();
                conn.set_instrumentation(log.clone());
                let mut stocks = load(&mut conn, range(0, 100))?;
                log.take();
                save(&mut conn, Side::Single, &mut stocks)?;
                let single = log.take();
                save(&mut conn, Side::Batch, &mut stocks)?;
                Ok(Counted {
                    single,
                    batch: log.take(),
                })
            }

            pub(super) fn count_asynchronous(url: &str) -> Result<Counted, String> {
                runtime(1)?.block_on(async move {
                    use diesel_async::AsyncConnection;
                    let mut conn = connect_async(url).await?;
                    let log = StatementLog::default();
                    conn.set_instrumentation(log.clone());
                    let mut stocks = load_async(&mut conn, range(0, 100)).await?;
                    log.take();
                    save_async(&mut conn, Side::Single, &mut stocks).await?;
                    let single = log.take();
                    save_async(&mut conn, Side::Batch, &mut stocks).await?;
                    Ok(Counted {
                        single,
                        batch: log.take(),
                    })
                })
            }
        }
    };
}

batch_workers!(pg, crate::pg, "");
#[cfg(feature = "mysql")]
batch_workers!(mysql, crate::mysql, "");
batch_workers!(sqlite, crate::sqlite, crate::sqlite::PRAGMAS);
