//! Running one strategy at one setting on the chosen backend: a fresh table, the
//! workers, then the units that left the table.

use diesel_async::pooled_connection::{AsyncDieselConnectionManager, PoolError};
use diesel_occ::blocking::Combiner;
use diesel_occ_bench::async_setup::Setup;
use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::database::Database;
use diesel_occ_bench::harness::{self, Limit};
use diesel_occ_bench::model::Stock;
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
    let mut admin = D::connect(url, Strategy::Atomic)?;
    admin.reset(keys).map_err(|e| format!("reset: {e}"))?;
    let measured = if strategy.is_asynchronous() {
        let combine = strategy == Strategy::OccCombineAsynchronous;
        let workers = setting.workers;
        asynchronous::run::<D>(url, workers, keys, setting.limit, policy, setup, combine)?
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
        )?
    };
    if let Some(error) = &measured.0.first_error {
        eprintln!("  {} failed: {error}", strategy.name());
    }
    let taken = admin.taken(keys).map_err(|e| format!("final state: {e}"))?;
    Ok(Row::new(
        setting.backend,
        strategy.name(),
        setting.workers,
        keys,
        measured,
        taken,
    ))
}
