//! The command line: the clusters, their URLs, and the options the benchmarks share.

use diesel_occ_bench::cli::{self, COMMON_USAGE, Common};
use diesel_occ_bench::strategy::{RETRY_USAGE, RetryOptions, Strategy};

const USAGE_HEAD: &str = "\
usage: bench-scale [options]
  --backend LIST        galera (1 node vs 3, needs --features mysql; URLs from
                        --url galera=U1,U2,U3 or OCC_GALERA_URLS) and pg-standby (reads on
                        the standby vs the primary; --url pg-standby=PRIMARY,STANDBY or
                        OCC_PG_PRIMARY_URL, OCC_PG_STANDBY_URL); default galera,pg-standby
  --url CLUSTER=URLS    the cluster's nodes, comma-separated
  --keys LIST           hot keys per setting (default 1,10000)
  --strategies LIST     galera's strategies (default blind,occ,occ-multihost,pessimistic,
                        atomic); pg-standby runs occ";

/// The command line.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) clusters: Vec<Cluster>,
    /// `--url galera=U1,U2,U3` / `--url pg-standby=PRIMARY,STANDBY`.
    pub(crate) cluster_urls: Vec<(Cluster, String)>,
    pub(crate) common: Common,
    pub(crate) keys: Vec<i32>,
    /// `--strategies`, when given.
    pub(crate) strategies: Option<Vec<Strategy>>,
    pub(crate) retry: RetryOptions,
}

impl Args {
    /// Reads the process's command line; `Err((text, true))` asks for the help.
    pub(crate) fn parse() -> Result<Args, (String, bool)> {
        let usage = format!("{USAGE_HEAD}\n{COMMON_USAGE}\n{RETRY_USAGE}");
        let fail = |message: String| (format!("{message}\n{usage}"), false);
        let mut args = Args {
            clusters: vec![Cluster::Galera, Cluster::PgStandby],
            cluster_urls: Vec::new(),
            common: Common::default(),
            keys: vec![1, 10_000],
            strategies: None,
            retry: RetryOptions::default(),
        };
        let mut parser = lexopt::Parser::from_env();
        while let Some(arg) = parser.next().map_err(|e| fail(e.to_string()))? {
            let flag = cli::flag(arg).map_err(fail)?;
            if flag == "-h" || flag == "--help" {
                return Err((usage.clone(), true));
            }
            if !args.accept(&flag, &mut parser).map_err(fail)? {
                return Err(fail(format!("unknown option {flag}")));
            }
        }
        args.common.finish("diesel-occ-bench-smoke").map_err(fail)?;
        if args.common.smoke {
            args.keys = vec![1, 100];
        }
        if args.keys.iter().any(|&k| k < 1) {
            return Err(fail("--keys must be at least 1".into()));
        }
        Ok(args)
    }

    /// Applies `flag`; `false` when it is not an option of this benchmark.
    fn accept(&mut self, flag: &str, parser: &mut lexopt::Parser) -> Result<bool, String> {
        if self.common.accept(flag, parser)? || self.retry.accept(flag, parser)? {
            return Ok(true);
        }
        match flag {
            "--backend" | "--backends" => {
                self.clusters = cli::list(&cli::value(parser, flag)?)
                    .iter()
                    .map(|name| Cluster::parse(name).ok_or(format!("unknown cluster {name:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--url" => {
                let value = cli::value(parser, flag)?;
                let (name, urls) = value.split_once('=').ok_or("--url takes CLUSTER=URLS")?;
                let cluster = Cluster::parse(name).ok_or(format!("unknown cluster {name:?}"))?;
                self.cluster_urls.push((cluster, urls.to_owned()));
            }
            "--keys" => self.keys = cli::parsed_list(parser, flag)?,
            "--strategies" => {
                let names = cli::list(&cli::value(parser, flag)?);
                let strategies = names.iter().map(|s| Strategy::parse(s));
                self.strategies = Some(strategies.collect::<Result<_, _>>()?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The URLs given for a cluster with `--url`, comma-separated.
    pub(crate) fn cluster_url(&self, cluster: Cluster) -> Option<&str> {
        self.cluster_urls
            .iter()
            .rev()
            .find(|(c, _)| *c == cluster)
            .map(|(_, u)| u.as_str())
    }
}

/// A replicated set-up the benchmark can run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cluster {
    /// A 3-node MariaDB Galera cluster.
    Galera,
    /// A PostgreSQL primary with a streaming standby.
    PgStandby,
}

impl Cluster {
    pub(crate) fn parse(name: &str) -> Option<Cluster> {
        match name {
            "galera" => Some(Cluster::Galera),
            "pg-standby" | "postgres-standby" | "standby" => Some(Cluster::PgStandby),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Cluster::Galera => "galera",
            Cluster::PgStandby => "pg-standby",
        }
    }

    /// The nodes' URLs: `--url galera=U1,U2,U3` / `--url pg-standby=PRIMARY,STANDBY`,
    /// else the environment of `tests/cluster` (`OCC_GALERA_URLS`, `OCC_PG_PRIMARY_URL`
    /// and `OCC_PG_STANDBY_URL`), else the scripts' default ports.
    pub(crate) fn urls(self, given: Option<&str>) -> Vec<String> {
        let split = |text: &str| -> Vec<String> {
            text.split(',')
                .map(|u| u.trim().to_owned())
                .filter(|u| !u.is_empty())
                .collect()
        };
        if let Some(given) = given {
            return split(given);
        }
        match self {
            Cluster::Galera => std::env::var("OCC_GALERA_URLS").map_or_else(
                |_| {
                    (13306..=13308)
                        .map(|port| format!("mysql://root@127.0.0.1:{port}/test"))
                        .collect()
                },
                |urls| split(&urls),
            ),
            Cluster::PgStandby => vec![
                std::env::var("OCC_PG_PRIMARY_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:15432/test".into()),
                std::env::var("OCC_PG_STANDBY_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:15433/test".into()),
            ],
        }
    }
}
