//! `http`: a load generator against the example HTTP service on PostgreSQL, comparing
//! three ways of writing an article whose ETag the client holds ([`writes`]): over HTTP
//! with minimal keep-alive clients ([`wire`]) against the service run in this process
//! ([`service`]), then the same statements without HTTP ([`direct`]). What each run
//! measures, and why, is in `bench/results/method.md`.

mod direct;
mod report;
mod runs;
mod service;
mod wire;
mod writes;

use std::time::Duration;

use diesel_occ_examples::postgres as app;

use diesel_occ_bench::backend::{Backend, ensure_database, server_version};
use diesel_occ_bench::cli::{self, Common};
use diesel_occ_bench::harness::Limit;
use diesel_occ_bench::summary::Summary;

use self::report::{Via, report_ratios, row, write_results};
use self::runs::{fresh_articles, run_direct, run_http};
use self::service::Service;
use self::wire::Wire;
use self::writes::Write;

/// `http`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// PostgreSQL (also postgres=URL) [default: the local server, database occ_bench]
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    common: Common,
    /// Articles the HTTP clients share [default: one per client, then 1]; the paired
    /// rounds use the first
    #[arg(long, value_delimiter = ',', value_parser = cli::count)]
    articles: Vec<usize>,
}

/// Runs the HTTP benchmark.
pub(crate) fn main(mut args: Args) -> Result<(), String> {
    args.common.finish("diesel-occ-bench-smoke", 3);
    bench(&args)
}

/// Runs the HTTP benchmark: single runs of each write at each article count, then the
/// paired rounds, the paired rounds without HTTP, then the results in `--out`.
fn bench(args: &Args) -> Result<(), String> {
    let url = match args
        .url
        .as_deref()
        .map(|u| u.strip_prefix("postgres=").unwrap_or(u))
    {
        Some(url) => url.to_owned(),
        None => Backend::Postgres.default_url(),
    };
    ensure_database(Backend::Postgres, &url)?;
    app::migrate(&url).map_err(|e| format!("migrations: {e}"))?;
    let clients = args.common.workers;
    let articles: Vec<usize> = if args.articles.is_empty() {
        vec![clients, 1]
    } else {
        args.articles.clone()
    };
    let service = Service::start(&url, clients)?;
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut wires = Vec::with_capacity(clients);
    for _ in 0..clients {
        wires.push(client_runtime.block_on(Wire::connect(&service.addr))?);
    }
    let mut summary = Summary::default();
    summary.say(format!(
        "== http ({}): the example HTTP service in this process (its own {}-thread runtime, \
         a pool of {clients} connections), {clients} keep-alive clients on another \
         runtime (one thread), {:?} per run, articles {articles:?}",
        server_version(Backend::Postgres, &url),
        std::thread::available_parallelism().map_or(2, usize::from),
        args.common.limit,
    ));
    let mut rows = Vec::new();
    let mut run = |round: usize,
                   write: Write,
                   via: Via,
                   articles: usize,
                   wires: &mut Vec<Wire>,
                   summary: &mut Summary| {
        let measured = match via {
            Via::Http => client_runtime.block_on(run_http(
                wires,
                &service,
                &url,
                write,
                clients,
                articles,
                args.common.limit,
            ))?,
            Via::Direct => {
                client_runtime.block_on(fresh_articles(&mut wires[0], &url, articles))?;
                run_direct(&service, &url, write, clients, args.common.limit)?
            }
        };
        let row = row(round, write, via, (clients, articles), measured);
        let label = match (round, via) {
            (0, _) => String::new(),
            (_, Via::Http) => format!("round {round}: "),
            (_, Via::Direct) => format!("direct round {round}: "),
        };
        summary.say(format!("{label}{}", row.line()));
        rows.push(row);
        Ok::<(), String>(())
    };
    // Warm-up (pool connections, prepared statements, the clients' buffers): not kept.
    for write in Write::ALL {
        client_runtime.block_on(run_http(
            &mut wires,
            &service,
            &url,
            write,
            clients,
            clients,
            Limit::Time(Duration::from_millis(200)),
        ))?;
    }
    for &count in &articles {
        for write in Write::ALL {
            run(0, write, Via::Http, count, &mut wires, &mut summary)?;
        }
    }
    let paired_articles = articles[0];
    for via in [Via::Http, Via::Direct] {
        summary.say(match via {
            Via::Http => format!(
                "-- paired rounds ({} rounds) at {paired_articles} articles: the three writes \
                 one after the other, each round starting with another",
                args.common.rounds
            ),
            Via::Direct => format!(
                "-- paired rounds without HTTP ({} rounds, {paired_articles} articles): the \
                 same statements, {clients} tasks on the service's runtime and pool",
                args.common.rounds
            ),
        });
        let mut order = Write::ALL;
        for round in 1..=args.common.rounds {
            if round > 1 {
                order.rotate_left(1);
            }
            for write in order {
                run(round, write, via, paired_articles, &mut wires, &mut summary)?;
            }
        }
    }
    drop(service);
    report_ratios(&rows, args.common.rounds, &mut summary);
    write_results(&args.common.out, &rows, &summary)
}
