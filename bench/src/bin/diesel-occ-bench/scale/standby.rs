//! The PostgreSQL primary and standby: `occ` reading on the primary against
//! `retry_with_standby` reading on the standby.

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ_bench::backend::{Backend, server_version};
use diesel_occ_bench::harness::{self, Held, OpResult, Worker};
use diesel_occ_bench::model::Stock;
use diesel_occ_bench::outcome::Seen;
use diesel_occ_bench::pg;
use diesel_occ_bench::strategies::blocking;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use super::options::{Args, Cluster};
use super::{ScaleRow, Way, play, row};

/// A worker's two connections.
pub(crate) struct Pair {
    primary: Held<pg::Conn>,
    standby: Held<pg::Conn>,
}

pub(crate) fn run(
    args: &Args,
    urls: &[String],
    keys: &[i32],
    summary: &mut Summary,
) -> Result<Vec<ScaleRow>, String> {
    let [primary, standby] = urls else {
        return Err(format!("pg-standby needs PRIMARY,STANDBY, got {urls:?}"));
    };
    summary.say(format!(
        "== pg-standby ({}; primary {primary}, standby {standby}): {} workers, keys {keys:?}, \
         {:?} per run, {} paired rounds; strategy occ: primary = read and save on the \
         primary (blocking::retry), standby = blocking::retry_with_standby: reads from the \
         standby, the checked save on the primary, reads on the primary after the \
         operation's first conflict",
        server_version(Backend::Postgres, primary),
        args.common.workers,
        args.common.duration,
        args.common.rounds,
    ));
    let policy = args.retry.policy(Strategy::Occ);
    play(
        Cluster::PgStandby,
        args,
        keys,
        &[Way::Plain(Strategy::Occ)],
        summary,
        |setup, way, count| {
            let Way::Plain(strategy) = way else {
                return Err("pg-standby runs occ only".into());
            };
            let mut admin = pg::Conn::connect(primary, Strategy::Atomic)?;
            admin.reset(count).map_err(|e| format!("reset: {e}"))?;
            wait_for_replay(&mut admin, standby)?;
            let (workers, duration) = (args.common.workers, args.common.duration);
            let measured = if setup == "primary" {
                harness::run_threads(
                    workers,
                    count,
                    duration,
                    policy.clone(),
                    |_| pg::Conn::connect(primary, strategy),
                    |held, worker, key| blocking::occ_on(held, &worker.policy, key),
                )?
            } else {
                harness::run_threads(
                    workers,
                    count,
                    duration,
                    policy.clone(),
                    |_| {
                        Ok(Pair {
                            primary: Held::new(pg::Conn::connect(primary, strategy)?),
                            standby: Held::new(pg::Conn::connect(standby, strategy)?),
                        })
                    },
                    |held, worker, key| occ_from_standby(&held.0.borrow(), worker, key),
                )?
            };
            row(
                Backend::Postgres,
                strategy.name(),
                workers,
                count,
                measured,
                &mut admin,
            )
        },
    )
}

/// One reservation through `retry_with_standby`: reads from the standby (possibly
/// stale), the checked save on the primary, and reads on the primary once the
/// operation met a conflict.
fn occ_from_standby(pair: &Pair, worker: &mut Worker, key: i32) -> Result<OpResult, String> {
    let seen = Seen::default();
    let result = diesel_occ::blocking::retry_with_standby(
        &pair.primary,
        &pair.standby,
        &worker.policy,
        |conns, attempt| {
            let result = (|| {
                let mut stock: Stock = attempt.find(conns.read()?, key)?;
                if !stock.take_one() {
                    return Ok(false);
                }
                stock.save_checked(conns.write()?)?;
                Ok(true)
            })();
            seen.track(&attempt, result)
        },
    );
    seen.finish(result)
}

/// Waits until the standby has replayed the primary's WAL up to now (the fresh
/// table), for at most 30 s.
fn wait_for_replay(primary: &mut pg::Conn, standby_url: &str) -> Result<(), String> {
    use diesel::dsl::sql;
    use diesel::sql_types::{Bool, Text};
    let lsn: String = diesel::select(sql::<Text>("pg_current_wal_lsn()::text"))
        .get_result(primary)
        .map_err(|e| e.to_string())?;
    let replayed = sql::<Bool>("COALESCE(pg_last_wal_replay_lsn() >= ")
        .bind::<Text, _>(lsn.clone())
        .sql("::pg_lsn, false)");
    let mut standby = pg::Conn::connect(standby_url, Strategy::Atomic)?;
    let began = std::time::Instant::now();
    while !diesel::select(replayed.clone())
        .get_result::<bool>(&mut standby)
        .map_err(|e| e.to_string())?
    {
        if began.elapsed() > std::time::Duration::from_secs(30) {
            return Err(format!("the standby has not replayed {lsn} after 30 s"));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(())
}
