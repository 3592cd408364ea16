//! The command line: options, their defaults and the usage text.

use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::cli::{self, COMMON_USAGE, Common};
use diesel_occ_bench::strategy::{RETRY_USAGE, RetryOptions, Strategy};

/// `--batch` sizes measured by default.
const BATCH_SIZES: [usize; 4] = [1, 10, 100, 1000];

/// The command line.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) backends: Vec<Backend>,
    pub(crate) urls: Vec<(Backend, String)>,
    /// Workers, duration, rounds, output.
    pub(crate) common: Common,
    pub(crate) keys: Vec<i32>,
    pub(crate) strategies: Vec<Strategy>,
    pub(crate) retry: RetryOptions,
    pub(crate) pgbench: bool,
    pub(crate) redraw: bool,
    /// `--batch`: the batch benchmark (`batch.rs`) instead of the strategies.
    pub(crate) batch: bool,
    pub(crate) batch_sizes: Vec<usize>,
    /// `--hot-key`: the hot-row policies on one row (`hot_key.rs`).
    pub(crate) hot_key: bool,
    /// `--hot-workers`: the worker counts of `--hot-key`.
    pub(crate) hot_workers: Vec<usize>,
    /// `--abba-rounds`: the ABBA rounds of each comparison of the library's own cost (`abba.rs`).
    pub(crate) abba_rounds: usize,
    /// `--abba-only`: only those rounds, no table, paired rounds or statement count.
    pub(crate) abba_only: bool,
}

const USAGE_HEAD: &str = "\
usage: diesel-occ-bench [options]
  --backend LIST        postgres,mysql,sqlite (default postgres; mysql needs --features mysql);
                        the scale-out comparisons (galera, pg-standby) are the bench-scale
                        binary's, the HTTP benchmark the bench-http binary's
  --keys LIST           hot keys per setting (default 1,10,100,10000)
  --strategies LIST     default: all of blind,handwritten,handwritten-prepared,occ,
                        occ-escalate,occ-escalate-op,occ-combine,occ-async,
                        occ-combine-async,pessimistic,serializable,atomic";

const USAGE_TAIL: &str = "  --no-pgbench          skip the pgbench comparison
  --url BACKEND=URL     database URL (defaults: the local servers, database occ_bench)
  --redraw              only draw the charts again from the CSV files (and the async
                        chart from the summaries) in --out
  --batch               instead: a batch save of N entities against N single saves, blocking
                        and async (batch.rs), --rounds paired rounds per size
  --batch-sizes LIST    N for --batch (default 1,10,100,1000)
  --hot-key             instead: one row, occ, pessimistic, occ-combine (the recommended way
                        to write a hot row, blocking::Combiner) and occ-escalate
                        (escalate_hot_rows) in --rounds paired rounds per worker count;
                        writes hot-key.csv and hot-key-summary.txt
  --hot-workers LIST    worker counts for --hot-key (default 4,16)
  --abba-rounds N       ABBA rounds of occ / handwritten-prepared and occ-async /
                        handwritten-async at the most keys (default 21, then 10 more
                        while the interval straddles the threshold, up to 41; 0 skips them)
  --abba-only           only those ABBA rounds
  -h, --help            this text
The paired rounds alternate occ, occ-escalate, occ-escalate-op and pessimistic at the
fewest keys; handwritten, handwritten-prepared, occ, occ-escalate and pgbench at the most.
With occ-async, the paired async rounds add handwritten-async and, built with
--features sqlx, the sqlx peer (the same optimistic locking hand-written on sqlx).
--smoke also runs keys 1,100 without pgbench.";

/// The usage text.
pub(crate) fn usage() -> String {
    format!("{USAGE_HEAD}\n{COMMON_USAGE}\n{RETRY_USAGE}\n{USAGE_TAIL}")
}

impl Default for Args {
    fn default() -> Self {
        Args {
            backends: vec![Backend::Postgres],
            urls: Vec::new(),
            common: Common::default(),
            keys: vec![1, 10, 100, 10_000],
            strategies: Strategy::ALL.to_vec(),
            retry: RetryOptions::default(),
            pgbench: true,
            redraw: false,
            batch: false,
            batch_sizes: BATCH_SIZES.to_vec(),
            hot_key: false,
            hot_workers: vec![4, 16],
            abba_rounds: crate::abba::DEFAULT_ROUNDS,
            abba_only: false,
        }
    }
}

impl Args {
    /// Reads the process's command line; `Err((text, true))` asks for the help.
    pub(crate) fn parse() -> Result<Args, (String, bool)> {
        let mut args = Args::default();
        let mut parser = lexopt::Parser::from_env();
        let fail = |message: String| (format!("{message}\n{}", usage()), false);
        while let Some(arg) = parser.next().map_err(|e| fail(e.to_string()))? {
            let flag = cli::flag(arg).map_err(fail)?;
            if flag == "-h" || flag == "--help" {
                return Err((usage(), true));
            }
            if !args.accept(&flag, &mut parser).map_err(fail)? {
                return Err(fail(format!("unknown option {flag}")));
            }
        }
        args.finish().map_err(fail)?;
        Ok(args)
    }

    /// Applies `flag`; `false` when it is not an option of this benchmark.
    fn accept(&mut self, flag: &str, parser: &mut lexopt::Parser) -> Result<bool, String> {
        if self.common.accept(flag, parser)? || self.retry.accept(flag, parser)? {
            return Ok(true);
        }
        match flag {
            "--no-pgbench" => self.pgbench = false,
            "--hot-key" => self.hot_key = true,
            "--redraw" => self.redraw = true,
            "--batch" => self.batch = true,
            "--abba-only" => self.abba_only = true,
            "--abba-rounds" => self.abba_rounds = cli::parsed(parser, flag)?,
            "--backend" | "--backends" => {
                self.backends = cli::list(&cli::value(parser, flag)?)
                    .iter()
                    .map(|name| match name.as_str() {
                        "galera" | "pg-standby" => Err(format!(
                            "--backend {name}: the scale-out comparison is its own binary: \
                             cargo run -p diesel-occ-bench --bin bench-scale -- --backend {name}"
                        )),
                        _ => Backend::parse(name),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--keys" => self.keys = cli::parsed_list(parser, flag)?,
            "--strategies" => {
                self.strategies = cli::list(&cli::value(parser, flag)?)
                    .iter()
                    .map(|s| Strategy::parse(s))
                    .collect::<Result<_, _>>()?;
            }
            "--url" => {
                let value = cli::value(parser, flag)?;
                let (backend, url) = value.split_once('=').ok_or("--url takes BACKEND=URL")?;
                self.urls.push((Backend::parse(backend)?, url.to_owned()));
            }
            "--batch-sizes" => self.batch_sizes = cli::parsed_list(parser, flag)?,
            "--hot-workers" => self.hot_workers = cli::parsed_list(parser, flag)?,
            "--http" | "--articles" => {
                return Err(format!(
                    "{flag}: the HTTP benchmark is its own binary: \
                     cargo run -p diesel-occ-bench --bin bench-http -- --help"
                ));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Applies `--smoke` and checks the numbers.
    fn finish(&mut self) -> Result<(), String> {
        self.common.finish("diesel-occ-bench-smoke")?;
        if self.common.smoke {
            self.keys = vec![1, 100];
            self.pgbench = false;
            self.abba_rounds = self.abba_rounds.min(1);
            if self.batch {
                self.batch_sizes.retain(|&n| n <= 100);
            }
        }
        if self.batch_sizes.contains(&0) {
            return Err("--batch-sizes must be at least 1".into());
        }
        if self.keys.iter().any(|&k| k < 1) || self.hot_workers.contains(&0) {
            return Err("--keys and --hot-workers must be at least 1".into());
        }
        Ok(())
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
