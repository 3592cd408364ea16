//! Galera: one node against three, and `occ-multihost` (`MultiHost` over a connection
//! to each node as the retry helper's source).

use diesel::prelude::*;
use diesel_occ::blocking::Combiner;
use diesel_occ::multi_host::MultiHost;
use diesel_occ_bench::backend::{Backend, server_version};
use diesel_occ_bench::harness::{self, Held};
use diesel_occ_bench::mysql;
use diesel_occ_bench::strategies::blocking;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use super::options::{Args, Cluster};
use super::{ScaleRow, Way, play, row};

/// The strategies compared on Galera unless `--strategies` names others.
const DEFAULT: [Way; 5] = [
    Way::Plain(Strategy::Blind),
    Way::Plain(Strategy::Occ),
    Way::MultiHost,
    Way::Plain(Strategy::Pessimistic),
    Way::Plain(Strategy::Atomic),
];

pub(crate) fn run(
    args: &Args,
    urls: &[String],
    keys: &[i32],
    summary: &mut Summary,
) -> Result<Vec<ScaleRow>, String> {
    if urls.len() < 2 {
        return Err(format!("galera needs the URLs of its nodes, got {urls:?}"));
    }
    let strategies: Vec<Way> = match &args.strategies {
        None => DEFAULT.to_vec(),
        Some(strategies) => strategies.iter().map(|&s| Way::Plain(s)).collect(),
    };
    summary.say(format!(
        "== galera ({}, {} nodes: {}): {} workers, keys {keys:?}, {:?} per run, \
         {} paired rounds; 1 node = every worker on node 1, {} nodes = worker i on node \
         i % {}, except occ-multihost: every worker's attempts go round the nodes \
         (diesel_occ::multi_host::MultiHost over a connection to each node, the retry \
         helper's source); wsrep_sync_wait = 0",
        server_version(Backend::Mysql, &urls[0]),
        urls.len(),
        urls.join(" "),
        args.common.workers,
        args.common.duration,
        args.common.rounds,
        urls.len(),
        urls.len(),
    ));
    let policy = args.retry.policy(Strategy::Occ);
    play(
        Cluster::Galera,
        args,
        keys,
        &strategies,
        summary,
        |setup, strategy, count| {
            let nodes = if setup == "1 node" { &urls[..1] } else { urls };
            let mut admin = causal(&urls[0])?;
            admin.reset(count).map_err(|e| format!("reset: {e}"))?;
            // Every node has the fresh rows, all their stock left, before the clock starts.
            for url in urls {
                let taken = causal(url)?
                    .taken(count)
                    .map_err(|e| format!("{url}: {e}"))?;
                if taken != 0 {
                    return Err(format!("{url}: {taken} units missing after the reset"));
                }
            }
            let (workers, duration) = (args.common.workers, args.common.duration);
            // Shared by the run's workers, for occ-combine.
            let combiner = Combiner::new();
            let measured = match strategy {
                Way::Plain(strategy) => harness::run_threads(
                    workers,
                    count,
                    duration,
                    policy.clone(),
                    |index| mysql::Conn::connect(&nodes[index % nodes.len()], strategy),
                    |held, worker, key| blocking::op(strategy, held, worker, key, &combiner),
                )?,
                Way::MultiHost => harness::run_threads(
                    workers,
                    count,
                    duration,
                    policy.clone(),
                    |_| {
                        let held = nodes
                            .iter()
                            .map(|url| mysql::Conn::connect(url, Strategy::Occ).map(Held::new))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(MultiHost::new(held))
                    },
                    |held, worker, key| blocking::occ_on(&*held.0.borrow(), &worker.policy, key),
                )?,
            };
            row(
                Backend::Mysql,
                strategy.name(),
                workers,
                count,
                measured,
                &mut admin,
            )
        },
    )
}

/// A connection whose reads wait until the node has applied every write the
/// cluster committed before them (`wsrep_sync_wait = 1`).
fn causal(url: &str) -> Result<mysql::Conn, String> {
    let mut conn = mysql::Conn::connect(url, Strategy::Atomic)?;
    diesel::sql_query("SET SESSION wsrep_sync_wait = 1")
        .execute(&mut conn)
        .map_err(|e| format!("{url}: {e}"))?;
    Ok(conn)
}
