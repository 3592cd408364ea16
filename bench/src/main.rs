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

mod blocking;
mod chart;
mod harness;
mod model;
#[cfg(feature = "mysql")]
mod mysql;
mod nonblocking;
mod pg;
mod sqlite;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use diesel_occ::retry::RetryPolicy;

use crate::harness::{Limit, Tally, percentile};

/// A way to run the reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// Read, then `UPDATE SET available = <read - 1>` with no predicate: loses updates.
    Blind,
    /// The statements `save_checked` runs, written by hand with Diesel, same retry loop.
    Handwritten,
    /// diesel-occ `save_checked` in the blocking retry helper, no escalation.
    Occ,
    /// The same with `escalate_hot_rows`: a row that met 3 conflicts in the last second
    /// is read with `SELECT ... FOR UPDATE` from the first attempt of every operation.
    OccEscalate,
    /// The same with `escalate_after`: an operation locks after its own conflict.
    OccEscalateOp,
    /// diesel-occ's async `save_checked` in `asynchronous::retry` on a deadpool pool.
    OccAsync,
    /// `SELECT ... FOR UPDATE` in a transaction (SQLite: `BEGIN IMMEDIATE`).
    Pessimistic,
    /// A SERIALIZABLE transaction, retried on serialization failures and deadlocks.
    Serializable,
    /// `UPDATE SET available = available - 1 WHERE id = ? AND available > 0`.
    Atomic,
}

impl Strategy {
    const ALL: [Strategy; 9] = [
        Strategy::Blind,
        Strategy::Handwritten,
        Strategy::Occ,
        Strategy::OccEscalate,
        Strategy::OccEscalateOp,
        Strategy::OccAsync,
        Strategy::Pessimistic,
        Strategy::Serializable,
        Strategy::Atomic,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Strategy::Blind => "blind",
            Strategy::Handwritten => "handwritten",
            Strategy::Occ => "occ",
            Strategy::OccEscalate => "occ-escalate",
            Strategy::OccEscalateOp => "occ-escalate-op",
            Strategy::OccAsync => "occ-async",
            Strategy::Pessimistic => "pessimistic",
            Strategy::Serializable => "serializable",
            Strategy::Atomic => "atomic",
        }
    }

    fn parse(name: &str) -> Result<Strategy, String> {
        Strategy::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("unknown strategy {name:?}"))
    }
}

/// A database to run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Postgres,
    Mysql,
    Sqlite,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Sqlite => "sqlite",
        }
    }

    fn parse(name: &str) -> Result<Backend, String> {
        match name {
            "postgres" | "pg" | "postgresql" => Ok(Backend::Postgres),
            "mysql" | "mariadb" => Ok(Backend::Mysql),
            "sqlite" => Ok(Backend::Sqlite),
            _ => Err(format!("unknown backend {name:?}")),
        }
    }

    fn default_url(self) -> String {
        match self {
            Backend::Postgres => "postgres://postgres@127.0.0.1:5432/occ_bench".into(),
            Backend::Mysql => "mysql://root@127.0.0.1:3306/occ_bench".into(),
            Backend::Sqlite => std::env::temp_dir()
                .join("diesel-occ-bench.sqlite3")
                .display()
                .to_string(),
        }
    }
}

/// The command line.
#[derive(Debug, Clone)]
struct Args {
    backends: Vec<Backend>,
    urls: Vec<(Backend, String)>,
    workers: usize,
    keys: Vec<i32>,
    limit: Limit,
    strategies: Vec<Strategy>,
    initial_backoff: Duration,
    max_backoff: Duration,
    max_attempts: u32,
    escalate_after: u32,
    hot_rows: (u32, Duration),
    rounds: usize,
    pgbench: bool,
    out: PathBuf,
    smoke: bool,
    redraw: bool,
}

const USAGE: &str = "\
usage: diesel-occ-bench [options]
  --backend LIST        postgres,mysql,sqlite (default postgres; mysql needs --features mysql)
  --workers N           concurrent workers (default 4)
  --keys LIST           hot keys per setting (default 1,10,100,10000)
  --duration D          per run, e.g. 5s or 500ms (default 5s)
  --ops N               per run, total operations instead of a duration
  --strategies LIST     default: all of blind,handwritten,occ,occ-escalate,occ-escalate-op,
                        occ-async,pessimistic,serializable,atomic
  --backoff A,B         retry backoff: first ceiling, maximum (default 1ms,50ms)
  --max-attempts N      retry attempts per operation (default 100)
  --hot-rows N,D        occ-escalate locks a row after N conflicts within D, for D
                        (default 3,1s)
  --escalate-after N    conflicts before occ-escalate-op locks (default 1)
  --rounds N            alternating rounds for the ratios (default 3): occ, occ-escalate,
                        occ-escalate-op and pessimistic at the fewest keys;
                        handwritten, occ, occ-escalate and pgbench at the most keys
  --no-pgbench          skip the pgbench comparison
  --url BACKEND=URL     database URL (defaults: the local servers, database occ_bench)
  --out DIR             results directory (default bench/results)
  --smoke               a fraction of a second per strategy, keys 1,100, 1 round, no pgbench,
                        results in the temp directory unless --out is given
  --redraw              only draw the charts again from the CSV files in --out";

fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (try 5s or 500ms)");
    if let Some(us) = text.strip_suffix("us") {
        return us.parse().map(Duration::from_micros).map_err(|_| bad());
    }
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    let secs = text.strip_suffix('s').unwrap_or(text);
    secs.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(bad)
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        backends: vec![Backend::Postgres],
        urls: Vec::new(),
        workers: 4,
        keys: vec![1, 10, 100, 10_000],
        limit: Limit::Time(Duration::from_secs(5)),
        strategies: Strategy::ALL.to_vec(),
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(50),
        max_attempts: 100,
        escalate_after: 1,
        hot_rows: (3, Duration::from_secs(1)),
        rounds: 3,
        pgbench: true,
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results"),
        smoke: false,
        redraw: false,
    };
    let mut out_given = false;
    let mut it = std::env::args().skip(1);
    let list = |v: String| -> Vec<String> { v.split(',').map(|s| s.trim().to_owned()).collect() };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--backend" | "--backends" => {
                args.backends = list(value()?)
                    .iter()
                    .map(|b| Backend::parse(b))
                    .collect::<Result<_, _>>()?;
            }
            "--workers" => {
                args.workers = value()?.parse().map_err(|e| format!("--workers: {e}"))?
            }
            "--keys" => {
                args.keys = list(value()?)
                    .iter()
                    .map(|k| k.replace('_', "").parse::<i32>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--keys: {e}"))?;
            }
            "--duration" => args.limit = Limit::Time(parse_duration(&value()?)?),
            "--ops" => {
                args.limit = Limit::Ops(value()?.parse().map_err(|e| format!("--ops: {e}"))?)
            }
            "--strategies" => {
                args.strategies = list(value()?)
                    .iter()
                    .map(|s| Strategy::parse(s))
                    .collect::<Result<_, _>>()?;
            }
            "--backoff" => {
                let parts = list(value()?);
                let [a, b] = parts.as_slice() else {
                    return Err("--backoff takes FIRST,MAX".into());
                };
                args.initial_backoff = parse_duration(a)?;
                args.max_backoff = parse_duration(b)?;
            }
            "--max-attempts" => {
                args.max_attempts = value()?
                    .parse()
                    .map_err(|e| format!("--max-attempts: {e}"))?;
            }
            "--hot-rows" => {
                let text = value()?;
                let (conflicts, window) = text
                    .split_once(',')
                    .ok_or_else(|| format!("--hot-rows {text:?}: expected N,D such as 3,1s"))?;
                let conflicts = conflicts
                    .trim()
                    .parse()
                    .map_err(|e| format!("--hot-rows: {e}"))?;
                args.hot_rows = (conflicts, parse_duration(window.trim())?);
            }
            "--escalate-after" => {
                args.escalate_after = value()?
                    .parse()
                    .map_err(|e| format!("--escalate-after: {e}"))?;
            }
            "--rounds" => args.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--no-pgbench" => args.pgbench = false,
            "--url" => {
                let v = value()?;
                let (b, url) = v.split_once('=').ok_or("--url takes BACKEND=URL")?;
                args.urls.push((Backend::parse(b)?, url.to_owned()));
            }
            "--out" => {
                args.out = PathBuf::from(value()?);
                out_given = true;
            }
            "--smoke" => args.smoke = true,
            "--redraw" => args.redraw = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    if args.smoke {
        // Smoke runs check that everything runs; they do not replace the results.
        if !out_given {
            args.out = std::env::temp_dir().join("diesel-occ-bench-smoke");
        }
        args.limit = Limit::Time(Duration::from_millis(200));
        args.keys = vec![1, 100];
        args.rounds = 1;
        args.pgbench = false;
    }
    if args.workers == 0 || args.keys.iter().any(|&k| k < 1) || args.rounds == 0 {
        return Err("--workers, --keys and --rounds must be at least 1".into());
    }
    Ok(args)
}

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
    fn new(
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

    const CSV_HEADER: &'static str = "backend,strategy,workers,keys,seconds,committed,failed,\
        ops_per_sec,p50_ms,p99_ms,conflicts,aborts,retries,lost_updates";

    fn csv(&self) -> String {
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

    fn line(&self) -> String {
        format!(
            "{:<13} keys {:>6}  {:>9.0} ops/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
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

/// What Diesel's instrumentation saw of successful saves.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    pub(crate) saves: usize,
    /// Statements diesel-occ's saves added to the prepared statement cache.
    pub(crate) cached: usize,
    /// The same for the hand-written statements.
    pub(crate) hand_cached: usize,
    pub(crate) statements: usize,
    pub(crate) occ_read: String,
    pub(crate) occ_update: String,
    pub(crate) handwritten_read: String,
    pub(crate) handwritten_update: String,
}

/// A query's text as instrumentation prints it, without the bind values.
pub(crate) fn strip_binds(sql: &str) -> String {
    sql.split(" -- binds:")
        .next()
        .unwrap_or(sql)
        .trim()
        .to_owned()
}

/// Everything a backend needs to run one setting.
struct Setting<'a> {
    backend: Backend,
    url: &'a str,
    workers: usize,
    limit: Limit,
}

macro_rules! run_on {
    ($m:ident, $setting:expr, $strategy:expr, $keys:expr, $policy:expr, $after:expr) => {{
        let setting: &Setting<'_> = $setting;
        let (strategy, keys): (Strategy, i32) = ($strategy, $keys);
        let url = setting.url;
        let mut admin = $m::connect(url, Strategy::Atomic)?;
        $m::reset(&mut admin, keys).map_err(|e| format!("reset: {e}"))?;
        let measured = if strategy == Strategy::OccAsync {
            $m::asynchronous::run_async(url, setting.workers, keys, setting.limit, $policy, $after)?
        } else {
            harness::run_threads(
                setting.workers,
                keys,
                setting.limit,
                $policy,
                || $m::connect(url, strategy),
                |held, worker, key| $m::op(strategy, held, worker, key),
            )?
        };
        if let Some(error) = &measured.0.first_error {
            eprintln!("  {} failed: {error}", strategy.name());
        }
        let taken = $m::taken(&mut admin, keys).map_err(|e| format!("final state: {e}"))?;
        Ok(Row::new(
            setting.backend,
            strategy.name(),
            setting.workers,
            keys,
            measured,
            taken,
        ))
    }};
}

/// Runs one strategy at one setting.
fn run(setting: &Setting<'_>, strategy: Strategy, keys: i32, args: &Args) -> Result<Row, String> {
    let base = RetryPolicy::new()
        .max_attempts(args.max_attempts)
        .backoff(args.initial_backoff, args.max_backoff)
        .never_escalate();
    let policy = match strategy {
        Strategy::OccEscalate => base.escalate_hot_rows(args.hot_rows.0, args.hot_rows.1),
        Strategy::OccEscalateOp => base.escalate_after(args.escalate_after),
        _ => base,
    };
    match setting.backend {
        Backend::Postgres => run_on!(pg, setting, strategy, keys, policy, ""),
        Backend::Sqlite => run_on!(sqlite, setting, strategy, keys, policy, sqlite::PRAGMAS),
        #[cfg(feature = "mysql")]
        Backend::Mysql => run_on!(mysql, setting, strategy, keys, policy, ""),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
    }
}

fn statements(backend: Backend, url: &str) -> Result<Statements, String> {
    macro_rules! measure {
        ($m:ident) => {{
            let mut conn = $m::connect(url, Strategy::Atomic)?;
            $m::reset(&mut conn, 100).map_err(|e| e.to_string())?;
            $m::statements(&mut conn, 100)
        }};
    }
    match backend {
        Backend::Postgres => measure!(pg),
        Backend::Sqlite => measure!(sqlite),
        #[cfg(feature = "mysql")]
        Backend::Mysql => measure!(mysql),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
    }
}

/// Creates the benchmark's database when it does not exist yet.
fn ensure_database(backend: Backend, url: &str) -> Result<(), String> {
    use diesel::{Connection, RunQueryDsl};
    let (server, name) = url.rsplit_once('/').ok_or("a URL ends with /DATABASE")?;
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    match backend {
        Backend::Sqlite => Ok(()),
        Backend::Postgres => {
            if diesel::PgConnection::establish(url).is_ok() {
                return Ok(());
            }
            if !valid {
                return Err(format!("cannot create database {name:?}"));
            }
            let mut conn = diesel::PgConnection::establish(&format!("{server}/postgres"))
                .map_err(|e| e.to_string())?;
            diesel::sql_query(format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        #[cfg(feature = "mysql")]
        Backend::Mysql => {
            if !valid {
                return Err(format!("cannot create database {name:?}"));
            }
            let mut conn = diesel::MysqlConnection::establish(&format!("{server}/mysql"))
                .map_err(|e| e.to_string())?;
            diesel::sql_query(format!("CREATE DATABASE IF NOT EXISTS {name}"))
                .execute(&mut conn)
                .map(drop)
                .map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
    }
}

/// pgbench's transactions per second for the equivalent SQL script, from
/// `bench/pgbench.sh` (None when pgbench is not installed).
fn pgbench(url: &str, clients: usize, seconds: u64, keys: i32) -> Result<Option<f64>, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pgbench.sh");
    let output = std::process::Command::new("bash")
        .arg(&script)
        .args([clients.to_string(), seconds.to_string(), keys.to_string()])
        .env("PGBENCH_URL", url)
        .env("PGBENCH_NO_INIT", "1")
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.code() == Some(3) {
        return Ok(None);
    }
    if !output.status.success() {
        return Err(format!(
            "pgbench failed: {}{}",
            stdout,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let tps = stdout
        .lines()
        .find(|l| l.starts_with("tps = ") && l.contains("without initial connection time"))
        .and_then(|l| l.trim_start_matches("tps = ").split_whitespace().next())
        .and_then(|v| v.parse().ok());
    tps.map(Some)
        .ok_or_else(|| format!("no tps in pgbench output:\n{stdout}"))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return f64::NAN;
    }
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() {
        format!("{:.3}", a / b)
    } else {
        "n/a".into()
    }
}

fn verdict(value: f64, target: f64) -> &'static str {
    if value >= target { "met" } else { "MISSED" }
}

fn bench_backend(args: &Args, backend: Backend) -> Result<(), String> {
    let url = args
        .urls
        .iter()
        .rev()
        .find(|(b, _)| *b == backend)
        .map_or_else(|| backend.default_url(), |(_, u)| u.clone());
    ensure_database(backend, &url)?;
    let setting = Setting {
        backend,
        url: &url,
        workers: args.workers,
        limit: args.limit,
    };
    let mut summary = String::new();
    let mut say = |line: String| {
        println!("{line}");
        summary.push_str(&line);
        summary.push('\n');
    };
    say(format!(
        "== {} ({}): {} workers, keys {:?}, {:?} per run, backoff {:?}..{:?}, {} attempts, \
         hot rows after {} conflicts in {:?}, escalate-op after {}",
        backend.name(),
        server_version(backend, &url),
        args.workers,
        args.keys,
        args.limit,
        args.initial_backoff,
        args.max_backoff,
        args.max_attempts,
        args.hot_rows.0,
        args.hot_rows.1,
        args.escalate_after
    ));

    let mut rows = Vec::new();
    for &keys in &args.keys {
        for &strategy in &args.strategies {
            let row = run(&setting, strategy, keys, args)?;
            say(row.line());
            rows.push(row);
        }
    }

    // The ratios: the strategies being compared run in alternation, round after round,
    // so that the shared machine's drift hits all of them alike; ratios of medians.
    let wide = *args.keys.iter().max().unwrap_or(&1);
    let narrow = *args.keys.iter().min().unwrap_or(&1);
    let seconds = match args.limit {
        Limit::Time(d) => d.as_secs().max(1),
        Limit::Ops(_) => 5,
    };
    say(format!(
        "-- paired rounds ({} rounds): hot key at {narrow} keys, overhead at {wide} keys",
        args.rounds
    ));
    let mut hot = [
        (Strategy::Occ, narrow),
        (Strategy::OccEscalate, narrow),
        (Strategy::OccEscalateOp, narrow),
        (Strategy::Pessimistic, narrow),
    ];
    let mut overhead = [
        (Strategy::Handwritten, wide),
        (Strategy::Occ, wide),
        (Strategy::OccEscalate, wide),
    ];
    let mut samples: Vec<(usize, &str, i32, f64)> = Vec::new();
    for round in 1..=args.rounds {
        // Each round starts with another strategy, so that none always runs first.
        if round > 1 {
            hot.rotate_left(1);
            overhead.rotate_left(1);
        }
        for (strategy, keys) in hot.into_iter().chain(overhead) {
            let row = run(&setting, strategy, keys, args)?;
            say(format!("round {round}: {}", row.line()));
            samples.push((round, strategy.name(), keys, row.ops_per_sec));
        }
        if backend == Backend::Postgres && args.pgbench {
            let mut conn = pg::connect(&url, Strategy::Atomic)?;
            pg::reset(&mut conn, wide).map_err(|e| e.to_string())?;
            match pgbench(&url, args.workers, seconds, wide)? {
                Some(tps) => {
                    say(format!(
                        "round {round}: pgbench        keys {wide:>6}  {tps:>9.0} tps (same SQL, {} clients)",
                        args.workers
                    ));
                    samples.push((round, "pgbench", wide, tps));
                }
                None => say("pgbench not found: skipped".into()),
            }
        }
    }
    let med = |label: &str, keys: i32| {
        median(
            samples
                .iter()
                .filter(|(_, l, k, _)| *l == label && *k == keys)
                .map(|(_, _, _, v)| *v)
                .collect(),
        )
    };
    // Each round's ratio, from two runs seconds apart: the drift of a shared machine
    // hits both sides alike, which the ratio of medians does not guarantee.
    let per_round = |(a, a_keys): (&str, i32), (b, b_keys): (&str, i32)| {
        let value = |round: usize, label: &str, keys: i32| {
            samples
                .iter()
                .find(|(r, l, k, _)| *r == round && *l == label && *k == keys)
                .map(|(_, _, _, v)| *v)
        };
        let ratios: Vec<f64> = (1..=args.rounds)
            .filter_map(|round| Some(value(round, a, a_keys)? / value(round, b, b_keys)?))
            .collect();
        let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        format!(
            "  per round, {a} / {b}: {} (median {:.3})",
            listed.join(" "),
            median(ratios)
        )
    };
    let (hand, occ) = (med("handwritten", wide), med("occ", wide));
    say(format!(
        "overhead: diesel-occ / hand-written Diesel = {} (medians {occ:.0} vs {hand:.0} ops/s at {wide} keys; target >= 0.97: {})",
        ratio(occ, hand),
        verdict(occ / hand, 0.97)
    ));
    let tps = med("pgbench", wide);
    if tps.is_finite() {
        say(format!(
            "overhead: diesel-occ / pgbench = {} (medians {occ:.0} ops/s vs {tps:.0} tps, {} clients; target >= 0.9: {})",
            ratio(occ, tps),
            args.workers,
            verdict(occ / tps, 0.9)
        ));
    }
    let (plain, escalate, per_operation, lock) = (
        med("occ", narrow),
        med("occ-escalate", narrow),
        med("occ-escalate-op", narrow),
        med("pessimistic", narrow),
    );
    say(format!(
        "hot key ({narrow} key, {} workers), medians: occ {plain:.0}, occ-escalate {escalate:.0}, \
         occ-escalate-op {per_operation:.0}, pessimistic {lock:.0} ops/s",
        args.workers
    ));
    say(format!(
        "  occ-escalate / pessimistic = {} (target >= 0.9: {}); occ-escalate-op / pessimistic = {}; \
         occ / pessimistic = {}",
        ratio(escalate, lock),
        verdict(escalate / lock, 0.9),
        ratio(per_operation, lock),
        ratio(plain, lock)
    ));
    let (plain, escalate) = (med("occ", wide), med("occ-escalate", wide));
    say(format!(
        "  at {wide} keys: occ-escalate / occ = {} (target >= 0.97: {})",
        ratio(escalate, plain),
        verdict(escalate / plain, 0.97)
    ));
    say(per_round(("occ", wide), ("handwritten", wide)));
    if tps.is_finite() {
        say(per_round(("occ", wide), ("pgbench", wide)));
    }
    say(per_round(("occ-escalate", narrow), ("pessimistic", narrow)));
    say(per_round(
        ("occ-escalate-op", narrow),
        ("pessimistic", narrow),
    ));
    say(per_round(("occ-escalate", wide), ("occ", wide)));

    let measured = statements(backend, &url)?;
    say(format!(
        "statements per successful save: {} ({} statements for {} saves, Diesel instrumentation)",
        ratio(measured.statements as f64, measured.saves as f64),
        measured.statements,
        measured.saves
    ));
    say(format!(
        "  statements prepared into the cache by {} saves: diesel-occ {} (its UPDATE, once, then reused), \
         hand-written {} (Diesel prepares its own UPDATE again for every execution)",
        measured.saves, measured.cached, measured.hand_cached
    ));
    say(format!("  diesel-occ read:    {}", measured.occ_read));
    say(format!(
        "  hand-written read:  {}",
        measured.handwritten_read
    ));
    say(format!("  diesel-occ update:  {}", measured.occ_update));
    say(format!(
        "  hand-written update: {}",
        measured.handwritten_update
    ));
    say(format!(
        "  same statements: {}",
        measured.occ_read == measured.handwritten_read
            && measured.occ_update == measured.handwritten_update
    ));

    let mut lost = String::new();
    for row in rows.iter().filter(|r| r.lost != 0) {
        let _ = write!(lost, " {}@{}={}", row.strategy, row.keys, row.lost);
    }
    say(format!(
        "lost updates (committed - units taken): {}",
        if lost.is_empty() {
            " none".into()
        } else {
            lost
        }
    ));

    std::fs::create_dir_all(&args.out).map_err(|e| e.to_string())?;
    let base = args.out.join(backend.name());
    let mut csv = String::from(Row::CSV_HEADER);
    csv.push('\n');
    for row in &rows {
        csv.push_str(&row.csv());
        csv.push('\n');
    }
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write(base.with_extension("csv"), &csv)?;
    write(
        args.out.join(format!("{}-summary.txt", backend.name())),
        &summary,
    )?;
    let title = format!(
        "diesel-occ-bench: {} ({}), {} workers",
        backend.name(),
        server_version(backend, &url),
        args.workers
    );
    let png = chart::draw(&rows, &title, &base)?;
    println!(
        "wrote {} and {}{}",
        base.with_extension("csv").display(),
        base.with_extension("svg").display(),
        png.map(|p| format!(" and {}", p.display()))
            .unwrap_or_default()
    );
    Ok(())
}

/// Draws a backend's chart again from its CSV file (the title from its summary).
fn redraw(args: &Args, backend: Backend) -> Result<(), String> {
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
    Ok(())
}

fn server_version(backend: Backend, url: &str) -> String {
    use diesel::{Connection, RunQueryDsl};
    diesel::define_sql_function!(fn version() -> diesel::sql_types::Text);
    let version: Option<String> = match backend {
        Backend::Postgres => diesel::PgConnection::establish(url)
            .ok()
            .and_then(|mut c| diesel::select(version()).get_result(&mut c).ok())
            .map(|v: String| v.split(" on ").next().unwrap_or(&v).to_owned()),
        #[cfg(feature = "mysql")]
        Backend::Mysql => diesel::MysqlConnection::establish(url)
            .ok()
            .and_then(|mut c| diesel::select(version()).get_result(&mut c).ok()),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => None,
        Backend::Sqlite => {
            diesel::define_sql_function!(fn sqlite_version() -> diesel::sql_types::Text);
            diesel::SqliteConnection::establish(":memory:")
                .ok()
                .and_then(|mut c| diesel::select(sqlite_version()).get_result(&mut c).ok())
                .map(|v: String| format!("SQLite {v}"))
        }
    };
    version.unwrap_or_else(|| "version unknown".into())
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
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
        if let Err(message) = bench_backend(&args, backend) {
            eprintln!("{}: {message}", backend.name());
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
