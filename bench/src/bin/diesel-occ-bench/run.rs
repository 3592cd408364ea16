//! Running one strategy at one setting on the chosen backend: a fresh table, the
//! workers, then the units that left the table.

use std::time::Duration;

use diesel_occ::blocking::Combiner;
use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::for_backend;
use diesel_occ_bench::harness::{self, Tally};
use diesel_occ_bench::row::Row;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategies::{asynchronous, blocking};
use diesel_occ_bench::strategy::{RetryOptions, Strategy};

/// Everything a backend needs to run one setting.
#[derive(Debug)]
pub(crate) struct Setting<'a> {
    pub(crate) backend: Backend,
    pub(crate) url: &'a str,
    pub(crate) workers: usize,
    pub(crate) duration: Duration,
    pub(crate) retry: &'a RetryOptions,
}

/// Runs one strategy at one setting.
pub(crate) fn run(setting: &Setting<'_>, strategy: Strategy, keys: i32) -> Result<Row, String> {
    for_backend!(setting.backend, D => run_on::<D>(setting, strategy, keys))
}

/// [`run`] on one backend.
fn run_on<D: StockSql>(
    setting: &Setting<'_>,
    strategy: Strategy,
    keys: i32,
) -> Result<Row, String> {
    let (url, workers, duration) = (setting.url, setting.workers, setting.duration);
    let policy = setting.retry.policy(strategy);
    on_fresh_table::<D>(setting, strategy.name(), keys, || {
        if strategy.is_asynchronous() {
            asynchronous::run::<D>(url, workers, keys, duration, policy, strategy)
        } else {
            // Shared by the run's workers, for occ-combine.
            let combiner = Combiner::new();
            harness::run_threads(
                workers,
                keys,
                duration,
                policy,
                |_| D::connect(url, strategy),
                |held, worker, key| blocking::op(strategy, held, worker, key, &combiner),
            )
        }
    })
}

/// The sqlx peer (`sqlx_peer`, feature `sqlx`) at one setting, with `occ-async`'s
/// retry policy.
pub(crate) fn run_sqlx(setting: &Setting<'_>, keys: i32) -> Result<Row, String> {
    #[cfg(feature = "sqlx")]
    let measure = || {
        let policy = setting.retry.policy(Strategy::OccAsynchronous);
        let (url, workers, duration) = (setting.url, setting.workers, setting.duration);
        let backend = setting.backend;
        diesel_occ_bench::strategies::sqlx_peer::run(backend, url, workers, keys, duration, policy)
    };
    #[cfg(not(feature = "sqlx"))]
    let measure = || Err("the sqlx peer needs `--features sqlx`".to_owned());
    for_backend!(setting.backend, D => on_fresh_table::<D>(setting, "sqlx", keys, measure))
}

/// Resets the table to `keys` rows, runs `measure`, then counts the units that left the
/// table: the row of `name` at this setting.
fn on_fresh_table<D: StockSql>(
    setting: &Setting<'_>,
    name: &str,
    keys: i32,
    measure: impl FnOnce() -> Result<(Tally, Duration), String>,
) -> Result<Row, String> {
    let mut admin = D::connect(setting.url, Strategy::Atomic)?;
    admin.reset(keys).map_err(|e| format!("reset: {e}"))?;
    let measured = measure()?;
    if let Some(error) = &measured.0.first_error {
        eprintln!("  {name} failed: {error}");
    }
    let taken = admin.taken(keys).map_err(|e| format!("final state: {e}"))?;
    let (backend, workers) = (setting.backend, setting.workers);
    Ok(Row::new(backend, name, workers, keys, measured, taken))
}
