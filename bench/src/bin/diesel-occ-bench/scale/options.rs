//! The command line: the clusters, their URLs, and the options the benchmarks share.

use diesel_occ_bench::cli::{self, Common};
use diesel_occ_bench::strategy::{RetryOptions, Strategy};

/// `scale`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// galera (1 node against 3, needs --features mysql) and pg-standby (reads on the
    /// standby against the primary)
    #[arg(
        long = "backend",
        value_delimiter = ',',
        default_value = "galera,pg-standby"
    )]
    pub(crate) clusters: Vec<Cluster>,
    /// The cluster's nodes, comma-separated [default: OCC_GALERA_URLS, or
    /// OCC_PG_PRIMARY_URL and OCC_PG_STANDBY_URL, else tests/cluster's ports]
    #[arg(long = "url", value_name = "CLUSTER=URLS", value_parser = cluster_urls)]
    pub(crate) cluster_urls: Vec<(Cluster, String)>,
    /// Hot keys per setting
    #[arg(long, value_delimiter = ',', default_value = "1,10000", value_parser = cli::keys)]
    pub(crate) keys: Vec<i32>,
    /// Galera's strategies [default: blind,occ,occ-multihost,pessimistic,atomic];
    /// pg-standby runs occ
    #[arg(long, value_delimiter = ',')]
    pub(crate) strategies: Option<Vec<Strategy>>,
    #[command(flatten)]
    pub(crate) common: Common,
    #[command(flatten)]
    pub(crate) retry: RetryOptions,
}

/// `--url CLUSTER=URLS`.
fn cluster_urls(text: &str) -> Result<(Cluster, String), String> {
    let (name, urls) = text.split_once('=').ok_or("expected CLUSTER=URLS")?;
    Ok((clap::ValueEnum::from_str(name, false)?, urls.to_owned()))
}

impl Args {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Cluster {
    /// A 3-node MariaDB Galera cluster.
    Galera,
    /// A PostgreSQL primary with a streaming standby.
    #[value(alias = "postgres-standby", alias = "standby")]
    PgStandby,
}

impl Cluster {
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
