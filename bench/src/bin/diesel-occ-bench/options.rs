//! The options of the reservation benchmarks (`paired`, `abba`, `batch`, `hot-key`,
//! `redraw`): backends, keys, strategies, the shared options and the retry settings.

use diesel_occ_bench::backend::{Backend, ensure_database};
use diesel_occ_bench::cli::{self, Common};
use diesel_occ_bench::strategy::{RetryOptions, Strategy};

use crate::run::Setting;

/// The reservation benchmarks' options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// postgres, mysql (needs --features mysql), sqlite
    #[arg(long = "backend", value_delimiter = ',', default_value = "postgres")]
    pub(crate) backends: Vec<Backend>,
    /// A database URL (default: the local servers' database occ_bench)
    #[arg(long = "url", value_name = "BACKEND=URL", value_parser = backend_url)]
    pub(crate) urls: Vec<(Backend, String)>,
    /// Hot keys per setting
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,10000", value_parser = cli::keys)]
    pub(crate) keys: Vec<i32>,
    /// The strategies (default: all but handwritten-async); a comparison runs when two
    /// of its strategies are chosen
    #[arg(long, value_delimiter = ',')]
    pub(crate) strategies: Vec<Strategy>,
    #[command(flatten)]
    pub(crate) common: Common,
    #[command(flatten)]
    pub(crate) retry: RetryOptions,
}

/// `--url BACKEND=URL`.
fn backend_url(text: &str) -> Result<(Backend, String), String> {
    let (backend, url) = text.split_once('=').ok_or("expected BACKEND=URL")?;
    Ok((clap::ValueEnum::from_str(backend, false)?, url.to_owned()))
}

impl Args {
    /// Resolves the shared options and `--smoke` (keys 1 and 100), and the default
    /// strategies.
    pub(crate) fn finish(&mut self, default_rounds: usize) {
        self.common.finish(default_rounds);
        if self.strategies.is_empty() {
            self.strategies = Strategy::default_set();
        }
        if self.common.smoke {
            self.keys = vec![1, 100];
        }
    }

    /// The database URL for `backend`: the last `--url` given for it, or the default.
    pub(crate) fn url(&self, backend: Backend) -> String {
        self.urls
            .iter()
            .rev()
            .find(|(b, _)| *b == backend)
            .map_or_else(|| backend.default_url(), |(_, u)| u.clone())
    }

    /// The setting of the runs on `backend` at `url`, after creating its database.
    pub(crate) fn setting<'a>(
        &'a self,
        backend: Backend,
        url: &'a str,
    ) -> Result<Setting<'a>, String> {
        ensure_database(backend, url)?;
        Ok(Setting {
            backend,
            url,
            workers: self.common.workers,
            duration: self.common.duration,
            retry: &self.retry,
        })
    }

    /// The fewest and the most keys: the hot key and the overhead comparisons'.
    pub(crate) fn narrow_and_wide(&self) -> (i32, i32) {
        let narrow = self.keys.iter().copied().min().unwrap_or(1);
        (narrow, self.keys.iter().copied().max().unwrap_or(1))
    }
}
