//! The command line: options, their defaults and the usage text.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::backend::Backend;
use crate::harness::Limit;
use crate::scale::Cluster;
use crate::strategy::Strategy;

/// The command line.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) backends: Vec<Backend>,
    pub(crate) urls: Vec<(Backend, String)>,
    /// `--backend galera` / `pg-standby`: the scale-out comparisons.
    pub(crate) clusters: Vec<Cluster>,
    /// `--url galera=U1,U2,U3` / `--url pg-standby=PRIMARY,STANDBY`.
    pub(crate) cluster_urls: Vec<(Cluster, String)>,
    pub(crate) workers: usize,
    pub(crate) keys: Vec<i32>,
    pub(crate) limit: Limit,
    pub(crate) strategies: Vec<Strategy>,
    pub(crate) initial_backoff: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) escalate_after: u32,
    pub(crate) hot_rows: (u32, Duration),
    pub(crate) rounds: usize,
    pub(crate) pgbench: bool,
    pub(crate) out: PathBuf,
    pub(crate) smoke: bool,
    pub(crate) redraw: bool,
    /// `--batch`: the batch benchmark (`batch.rs`) instead of the strategies.
    pub(crate) batch: bool,
    pub(crate) batch_sizes: Vec<usize>,
    /// `--http`: the HTTP load generator instead of the reservation workload.
    pub(crate) http: bool,
    /// `--articles`: how many articles the HTTP clients share, per setting.
    pub(crate) articles: Vec<usize>,
    /// `--hot-key`: the hot-row policies on one row (`hot_key.rs`).
    pub(crate) hot_key: bool,
    /// `--hot-workers`: the worker counts of `--hot-key`.
    pub(crate) hot_workers: Vec<usize>,
}

pub(crate) const USAGE: &str = "\
usage: diesel-occ-bench [options]
  --backend LIST        postgres,mysql,sqlite (default postgres; mysql needs --features mysql),
                        and the scale-out comparisons: galera (1 node vs 3, needs --features
                        mysql; URLs from --url galera=U1,U2,U3 or OCC_GALERA_URLS) and
                        pg-standby (reads on the standby vs the primary; --url
                        pg-standby=PRIMARY,STANDBY or OCC_PG_PRIMARY_URL, OCC_PG_STANDBY_URL);
                        they run keys 1,10000 unless --keys is given
  --workers N           concurrent workers (default 4)
  --keys LIST           hot keys per setting (default 1,10,100,10000)
  --duration D          per run, e.g. 5s or 500ms (default 5s)
  --ops N               per run, total operations instead of a duration
  --strategies LIST     default: all of blind,handwritten,handwritten-prepared,occ,
                        occ-escalate,occ-escalate-op,occ-combine,occ-async,pessimistic,
                        serializable,atomic
  --backoff A,B         retry backoff: first ceiling, maximum (default 1ms,50ms)
  --max-attempts N      retry attempts per operation (default 100)
  --hot-rows N,D        occ-escalate locks a row after N conflicts within D, for D
                        (default 3,1s)
  --escalate-after N    conflicts before occ-escalate-op locks (default 1)
  --rounds N            alternating rounds for the ratios (default 3): occ, occ-escalate,
                        occ-escalate-op and pessimistic at the fewest keys;
                        handwritten, handwritten-prepared, occ, occ-escalate and pgbench
                        at the most keys
  --no-pgbench          skip the pgbench comparison
  --url BACKEND=URL     database URL (defaults: the local servers, database occ_bench)
  --out DIR             results directory (default bench/results)
  --smoke               a fraction of a second per strategy, keys 1,100, 1 round, no pgbench,
                        results in the temp directory unless --out is given
  --redraw              only draw the charts again from the CSV files (and the async
                        chart from the summaries) in --out
  --batch               instead: a batch save of N entities against N single saves, blocking
                        and async (bench/src/batch.rs), --rounds paired rounds per size
  --batch-sizes LIST    N for --batch (default 1,10,100,1000)
  --http                the HTTP load generator against the example service on PostgreSQL
                        (--workers clients): put-if-match, patch-load-save, put-unconditional;
                        writes http.csv and http-summary.txt
  --articles LIST       articles the HTTP clients share (default: one per client, then 1);
                        the paired rounds use the first
  --hot-key             instead: one row, occ, pessimistic, occ-combine (the recommended way
                        to write a hot row, blocking::Combiner) and occ-escalate
                        (escalate_hot_rows) in --rounds paired rounds per worker count;
                        writes hot-key.csv and hot-key-summary.txt
  --hot-workers LIST    worker counts for --hot-key (default 4,16)";

impl Default for Args {
    fn default() -> Self {
        Args {
            backends: vec![Backend::Postgres],
            urls: Vec::new(),
            clusters: Vec::new(),
            cluster_urls: Vec::new(),
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
            batch: false,
            batch_sizes: crate::batch::SIZES.to_vec(),
            http: false,
            articles: Vec::new(),
            hot_key: false,
            hot_workers: vec![4, 16],
        }
    }
}

impl Args {
    /// Reads the process's command line.
    pub(crate) fn parse() -> Result<Args, String> {
        let mut args = Args::default();
        let mut out_given = false;
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--no-pgbench" => args.pgbench = false,
                "--smoke" => args.smoke = true,
                "--hot-key" => args.hot_key = true,
                "--redraw" => args.redraw = true,
                "--batch" => args.batch = true,
                "--http" => args.http = true,
                "-h" | "--help" => return Err(USAGE.into()),
                _ => {
                    out_given |= flag == "--out";
                    if !args.set(&flag, it.next())? {
                        return Err(format!("unknown option {flag}\n{USAGE}"));
                    }
                }
            }
        }
        args.finish(out_given)
    }

    /// Applies an option that takes a value; `false` when `flag` is not one.
    fn set(&mut self, flag: &str, value: Option<String>) -> Result<bool, String> {
        let value = || value.clone().ok_or_else(|| format!("{flag} needs a value"));
        match flag {
            "--backend" | "--backends" => {
                let names = list(value()?);
                self.clusters = names.iter().filter_map(|b| Cluster::parse(b)).collect();
                self.backends = names
                    .iter()
                    .filter(|b| Cluster::parse(b).is_none())
                    .map(|b| Backend::parse(b))
                    .collect::<Result<_, _>>()?;
            }
            "--workers" => self.workers = number(flag, &value()?)?,
            "--keys" => {
                self.keys = list(value()?)
                    .iter()
                    .map(|k| k.replace('_', "").parse::<i32>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--keys: {e}"))?;
            }
            "--duration" => self.limit = Limit::Time(parse_duration(&value()?)?),
            "--ops" => self.limit = Limit::Ops(number(flag, &value()?)?),
            "--strategies" => {
                self.strategies = list(value()?)
                    .iter()
                    .map(|s| Strategy::parse(s))
                    .collect::<Result<_, _>>()?;
            }
            "--backoff" => {
                let parts = list(value()?);
                let [a, b] = parts.as_slice() else {
                    return Err("--backoff takes FIRST,MAX".into());
                };
                self.initial_backoff = parse_duration(a)?;
                self.max_backoff = parse_duration(b)?;
            }
            "--max-attempts" => self.max_attempts = number(flag, &value()?)?,
            "--hot-rows" => self.hot_rows = parse_hot_rows(&value()?)?,
            "--escalate-after" => self.escalate_after = number(flag, &value()?)?,
            "--rounds" => self.rounds = number(flag, &value()?)?,
            "--url" => {
                let v = value()?;
                let (b, url) = v.split_once('=').ok_or("--url takes BACKEND=URL")?;
                match Cluster::parse(b) {
                    Some(cluster) => self.cluster_urls.push((cluster, url.to_owned())),
                    None => self.urls.push((Backend::parse(b)?, url.to_owned())),
                }
            }
            "--out" => self.out = PathBuf::from(value()?),
            "--batch-sizes" => {
                self.batch_sizes = list(value()?)
                    .iter()
                    .map(|n| number::<usize>(flag, n))
                    .collect::<Result<_, _>>()?;
            }
            "--articles" => {
                self.articles = list(value()?)
                    .iter()
                    .map(|a| a.parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--articles: {e}"))?;
            }
            "--hot-workers" => {
                self.hot_workers = list(value()?)
                    .iter()
                    .map(|n| number::<usize>(flag, n))
                    .collect::<Result<_, _>>()?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Applies `--smoke` and checks the numbers.
    fn finish(mut self, out_given: bool) -> Result<Args, String> {
        if self.smoke {
            // Smoke runs check that everything runs; they do not replace the results.
            if !out_given {
                self.out = std::env::temp_dir().join("diesel-occ-bench-smoke");
            }
            self.limit = Limit::Time(Duration::from_millis(200));
            self.keys = vec![1, 100];
            self.rounds = 1;
            self.pgbench = false;
        }
        if self.smoke && self.batch {
            self.batch_sizes.retain(|&n| n <= 100);
        }
        if self.batch_sizes.iter().any(|&n| n < 1) {
            return Err("--batch-sizes must be at least 1".into());
        }
        if self.workers == 0
            || self.keys.iter().any(|&k| k < 1)
            || self.articles.contains(&0)
            || self.rounds == 0
        {
            return Err("--workers, --keys, --articles and --rounds must be at least 1".into());
        }
        Ok(self)
    }

    /// The URLs given for a cluster with `--url`, comma-separated.
    pub(crate) fn cluster_url(&self, cluster: Cluster) -> Option<&str> {
        self.cluster_urls
            .iter()
            .rev()
            .find(|(c, _)| *c == cluster)
            .map(|(_, u)| u.as_str())
    }

    /// The database URL for `backend`: the last `--url` given for it, or the default.
    pub(crate) fn url(&self, backend: Backend) -> String {
        self.urls
            .iter()
            .rev()
            .find(|(b, _)| *b == backend)
            .map_or_else(|| backend.default_url(), |(_, u)| u.clone())
    }
}

fn list(value: String) -> Vec<String> {
    value.split(',').map(|s| s.trim().to_owned()).collect()
}

fn number<T: FromStr>(flag: &str, value: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e| format!("{flag}: {e}"))
}

fn parse_hot_rows(text: &str) -> Result<(u32, Duration), String> {
    let (conflicts, window) = text
        .split_once(',')
        .ok_or_else(|| format!("--hot-rows {text:?}: expected N,D such as 3,1s"))?;
    let conflicts = conflicts
        .trim()
        .parse()
        .map_err(|e| format!("--hot-rows: {e}"))?;
    Ok((conflicts, parse_duration(window.trim())?))
}

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
