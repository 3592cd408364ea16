//! Running one strategy at one setting on the chosen backend: a fresh table, the
//! workers, then the units that left the table.

use diesel_async::pooled_connection::{AsyncDieselConnectionManager, PoolError};
use diesel_occ::blocking::Combiner;
use diesel_occ_bench::async_setup::Setup;
use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::harness::{self, Limit};
use diesel_occ_bench::model::Stock;
use diesel_occ_bench::strategies::database::Database;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategies::{asynchronous, blocking};
use diesel_occ_bench::strategy::{RetryOptions, Strategy};
use diesel_occ_bench::{pg, sqlite};

use diesel_occ_bench::row::Row;

/// Everything a backend needs to run one setting.
#[derive(Debug)]
pub(crate) struct Setting<'a> {
    pub(crate) backend: Backend,
    pub(crate) url: &'a str,
    pub(crate) workers: usize,
    pub(crate) limit: Limit,
    pub(crate) retry: &'a RetryOptions,
}

/// Runs one strategy at one setting; an asynchronous one as `setup` says.
pub(crate) fn run(
    setting: &Setting<'_>,
    strategy: Strategy,
    keys: i32,
    setup: Setup,
) -> Result<Row, String> {
    match setting.backend {
        Backend::Postgres => run_on::<pg::Db>(setting, strategy, keys, setup),
        Backend::Sqlite => run_on::<sqlite::Db>(setting, strategy, keys, setup),
        #[cfg(feature = "mysql")]
        Backend::Mysql => run_on::<diesel_occ_bench::mysql::Db>(setting, strategy, keys, setup),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
    }
}

/// [`run`] on one backend.
fn run_on<D: Database>(
    setting: &Setting<'_>,
    strategy: Strategy,
    keys: i32,
    setup: Setup,
) -> Result<Row, String>
where
    Stock: diesel_occ::blocking::Combinable<D::Conn>
        + diesel_occ::asynchronous::Combinable<D::AsyncConn>,
    AsyncDieselConnectionManager<D::AsyncConn>:
        deadpool::managed::Manager<Type = D::AsyncConn, Error = PoolError>,
    for<'a> asynchronous::Ping: diesel_async::methods::LoadQuery<'a, D::AsyncConn, i32>,
{
    let url = setting.url;
    let policy = setting.retry.policy(strategy);
    on_fresh_table::<D>(setting, strategy.name(), keys, || {
        if strategy.is_asynchronous() {
            let combine = strategy == Strategy::OccCombineAsynchronous;
            let workers = setting.workers;
            asynchronous::run::<D>(url, workers, keys, setting.limit, policy, setup, combine)
        } else {
            // Shared by the run's workers, for occ-combine.
            let combiner = Combiner::new();
            harness::run_threads(
                setting.workers,
                keys,
                setting.limit,
                policy,
                || D::connect(url, strategy),
                |held, worker, key| blocking::op(strategy, held, worker, key, &combiner),
            )
        }
    })
}

/// The sqlx peer (`sqlx_peer`) at one setting, with `occ-async`'s retry policy.
#[cfg(feature = "sqlx")]
pub(crate) fn run_sqlx(setting: &Setting<'_>, keys: i32) -> Result<Row, String> {
    use diesel_occ_bench::strategies::sqlx_peer;
    let policy = setting.retry.policy(Strategy::OccAsynchronous);
    let measure = || {
        let workers = setting.workers;
        sqlx_peer::run(
            setting.backend,
            setting.url,
            workers,
            keys,
            setting.limit,
            policy,
        )
    };
    match setting.backend {
        Backend::Postgres => on_fresh_table::<pg::Db>(setting, "sqlx", keys, measure),
        Backend::Sqlite => on_fresh_table::<sqlite::Db>(setting, "sqlx", keys, measure),
        #[cfg(feature = "mysql")]
        Backend::Mysql => {
            on_fresh_table::<diesel_occ_bench::mysql::Db>(setting, "sqlx", keys, measure)
        }
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
    }
}

/// Without feature `sqlx` there is no peer to run.
#[cfg(not(feature = "sqlx"))]
pub(crate) fn run_sqlx(_setting: &Setting<'_>, _keys: i32) -> Result<Row, String> {
    Err("the sqlx peer needs `--features sqlx`".into())
}

/// Resets the table to `keys` rows, runs `measure`, then counts the units that left the
/// table: the row of `name` at this setting.
fn on_fresh_table<D: Database>(
    setting: &Setting<'_>,
    name: &str,
    keys: i32,
    measure: impl FnOnce() -> Result<(harness::Tally, std::time::Duration), String>,
) -> Result<Row, String> {
    let mut admin = D::connect(setting.url, Strategy::Atomic)?;
    admin.reset(keys).map_err(|e| format!("reset: {e}"))?;
    let measured = measure()?;
    if let Some(error) = &measured.0.first_error {
        eprintln!("  {name} failed: {error}");
    }
    let taken = admin.taken(keys).map_err(|e| format!("final state: {e}"))?;
    Ok(Row::new(
        setting.backend,
        name,
        setting.workers,
        keys,
        measured,
        taken,
    ))
}
