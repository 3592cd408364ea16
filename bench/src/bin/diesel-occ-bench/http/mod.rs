//! `http`: a load generator against the example HTTP service on PostgreSQL, comparing
//! three ways of writing an article whose ETag the client holds ([`runs`]): over HTTP
//! with minimal keep-alive clients ([`wire`]) against the service run in this process
//! ([`service`]), then the same statements without HTTP. What each run measures, and
//! why, is in `bench/results/method.md`.

mod report;
mod runs;
mod service;
mod wire;

use std::time::Duration;

use diesel_occ_examples::postgres as app;

use diesel_occ_bench::backend::{Backend, ensure_database, server_version};
use diesel_occ_bench::cli::{self, Common};
use diesel_occ_bench::summary::Summary;

use self::report::{HttpRow, Via};
use self::runs::{Write, fresh_articles, run_direct, run_http};
use self::service::Service;
use self::wire::Wire;

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

/// Runs the HTTP benchmark: single runs of each write at each article count, then the
/// paired rounds, the paired rounds without HTTP, then the results in `--out`.
pub(crate) fn main(mut args: Args) -> Result<(), String> {
    args.common.finish(3);
    let url = match args.url.as_deref() {
        Some(url) => url.strip_prefix("postgres=").unwrap_or(url).to_owned(),
        None => Backend::Postgres.default_url(),
    };
    ensure_database(Backend::Postgres, &url)?;
    app::migrate(&url).map_err(|e| format!("migrations: {e}"))?;
    let (clients, duration) = (args.common.workers, args.common.duration);
    let rounds = args.common.rounds;
    if args.articles.is_empty() {
        args.articles = vec![clients, 1];
    }
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
         runtime (one thread), {duration:?} per run, articles {:?}",
        server_version(Backend::Postgres, &url),
        std::thread::available_parallelism().map_or(2, usize::from),
        args.articles,
    ));
    // Warm-up (pool connections, prepared statements, the clients' buffers): not kept.
    for write in Write::ALL {
        let warm_up = Duration::from_millis(200);
        client_runtime.block_on(run_http(
            &mut wires, &service, &url, write, clients, warm_up,
        ))?;
    }
    let mut rows = Vec::new();
    let mut run = |round: usize, write: Write, via: Via, articles: usize, summary: &mut Summary| {
        let measured = match via {
            Via::Http => client_runtime.block_on(run_http(
                &mut wires, &service, &url, write, articles, duration,
            ))?,
            Via::Direct => {
                client_runtime.block_on(fresh_articles(&mut wires[0], &url, articles))?;
                run_direct(&service, &url, write, clients, duration)?
            }
        };
        let row = HttpRow {
            round,
            write,
            via,
            clients,
            articles,
            measured,
        };
        let label = match (round, via) {
            (0, _) => String::new(),
            (_, Via::Http) => format!("round {round}: "),
            (_, Via::Direct) => format!("direct round {round}: "),
        };
        summary.say(format!("{label}{}", row.line()));
        rows.push(row);
        Ok::<(), String>(())
    };
    for &count in &args.articles {
        for write in Write::ALL {
            run(0, write, Via::Http, count, &mut summary)?;
        }
    }
    let paired = args.articles[0];
    for via in [Via::Http, Via::Direct] {
        let how = match via {
            Via::Http => "over HTTP",
            Via::Direct => "without HTTP (the same statements on the service's runtime and pool)",
        };
        summary.say(format!(
            "-- paired rounds {how} ({rounds} rounds) at {paired} articles: the three writes \
             one after the other, each round starting with another"
        ));
        let mut order = Write::ALL;
        for round in 1..=rounds {
            if round > 1 {
                order.rotate_left(1);
            }
            for write in order {
                run(round, write, via, paired, &mut summary)?;
            }
        }
    }
    drop(service);
    report::report_ratios(&rows, rounds, &mut summary);
    let csv = args.common.save("http.csv", &report::csv(&rows))?;
    let text = args.common.save("http-summary.txt", summary.text())?;
    println!("wrote {} and {}", csv.display(), text.display());
    Ok(())
}
