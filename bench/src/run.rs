//! Running one strategy at one setting on the chosen backend: a fresh table, the
//! workers, then the units that left the table.

use diesel_occ::retry::RetryPolicy;

use crate::backend::Backend;
use crate::harness::{self, Limit};
#[cfg(feature = "mysql")]
use crate::mysql;
use crate::options::Args;
use crate::report::{Row, Summary};
use crate::strategy::Strategy;
use crate::{pg, sqlite};

/// Everything a backend needs to run one setting.
pub(crate) struct Setting<'a> {
    pub(crate) backend: Backend,
    pub(crate) url: &'a str,
    pub(crate) workers: usize,
    pub(crate) limit: Limit,
}

macro_rules! run_on {
    ($m:ident, $setting:expr, $strategy:expr, $keys:expr, $policy:expr, $after:expr) => {{
        let setting: &Setting<'_> = $setting;
        let (strategy, keys): (Strategy, i32) = ($strategy, $keys);
        let url = setting.url;
        let mut admin = $m::connect(url, Strategy::Atomic)?;
        $m::reset(&mut admin, keys).map_err(|e| format!("reset: {e}"))?;
        let measured = if strategy.is_asynchronous() {
            let combine = strategy == Strategy::OccCombineAsynchronous;
            let workers = setting.workers;
            $m::asynchronous::run(url, workers, keys, setting.limit, $policy, $after, combine)?
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
pub(crate) fn run(
    setting: &Setting<'_>,
    strategy: Strategy,
    keys: i32,
    args: &Args,
) -> Result<Row, String> {
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

/// The main table: every strategy at every key count, one line each.
pub(crate) fn sweep(
    setting: &Setting<'_>,
    args: &Args,
    summary: &mut Summary,
) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for &keys in &args.keys {
        for &strategy in &args.strategies {
            let row = run(setting, strategy, keys, args)?;
            summary.say(row.line());
            rows.push(row);
        }
    }
    Ok(rows)
}
