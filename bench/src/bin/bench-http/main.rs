//! `bench-http`: a load generator against the example HTTP service
//! (`examples/src/apps/http`) on PostgreSQL, comparing three ways of writing an article
//! that a client holds the ETag of:
//!
//! | write | request | what the service runs |
//! |---|---|---|
//! | `put-if-match` | `PUT /articles/{id}` + `If-Match` | one conditional UPDATE by key and token (`update_by_key`) |
//! | `patch-load-save` | `PATCH /articles/{id}` + `If-Match`, every field | a read with the token (`find_checked`), then `save_checked` |
//! | `put-unconditional` | `PUT /bench/articles/{id}`, no `If-Match` | one UPDATE by key, no token check: a route of this benchmark's, merged into the app's router |
//!
//! The service runs in this process on its own multi-threaded Tokio runtime (as its
//! binary would), on an ephemeral port of 127.0.0.1, over the app's pool of as many
//! connections as clients. The clients run on another runtime (one thread), each a task
//! with its own keep-alive connection ([`wire`]: a minimal HTTP/1.1 client, so that the
//! clients take little of the CPU the service and PostgreSQL share), each writing its
//! own article by default (no contention: the ratios measure what each write costs) and
//! keeping the ETag of every response. After a 412 or 409 a client GETs the article for
//! its current ETag (a "re-read"), as a real client would. `--articles` sets how many
//! articles the clients share (the first count is the one of the paired rounds; the
//! default adds one article shared by every client, where 412s and 409s happen).
//!
//! Each run also reports where its time went: statements per successful write and
//! their mean time as the service's connections saw it (Diesel's instrumentation), and
//! CPU per successful write of the clients' thread, the service's threads and the pool's
//! PostgreSQL backends ([`cpu`]). After the HTTP rounds, paired rounds of the same
//! writes without HTTP ([`direct`]) tell what the database and the pool alone allow.
//! `OCC_BENCH_HTTP_SYNCHRONOUS_COMMIT=off` sets `synchronous_commit` on the service's
//! connections, to see the requests' own cost without the commits' disk flush.

mod direct;
mod report;
mod runs;
mod service;
mod wire;
mod writes;

use std::time::Duration;

use diesel_occ_examples::postgres as app;

use diesel_occ_bench::backend::{Backend, ensure_database, server_version};
use diesel_occ_bench::cli::{self, COMMON_USAGE, Common};
use diesel_occ_bench::harness::Limit;
use diesel_occ_bench::summary::Summary;

use self::report::{Via, report_ratios, row, write_results};
use self::runs::{fresh_articles, run_direct, run_http};
use self::service::Service;
use self::wire::Wire;
use self::writes::Write;

const USAGE_HEAD: &str = "\
usage: bench-http [options]
  the HTTP load generator against the example service on PostgreSQL (--workers
  clients): put-if-match, patch-load-save, put-unconditional; writes http.csv and
  http-summary.txt
  --url URL             PostgreSQL (also postgres=URL; default the local server,
                        database occ_bench)
  --articles LIST       articles the HTTP clients share (default: one per client, then 1);
                        the paired rounds use the first";

/// The command line.
#[derive(Debug, Clone)]
struct Args {
    url: String,
    common: Common,
    /// `--articles`: how many articles the HTTP clients share, per setting.
    articles: Vec<usize>,
}

impl Args {
    /// Reads the process's command line; `Err((text, true))` asks for the help.
    fn parse() -> Result<Args, (String, bool)> {
        let usage = format!("{USAGE_HEAD}\n{COMMON_USAGE}");
        let fail = |message: String| (format!("{message}\n{usage}"), false);
        let mut args = Args {
            url: Backend::Postgres.default_url(),
            common: Common::default(),
            articles: Vec::new(),
        };
        let mut parser = lexopt::Parser::from_env();
        while let Some(arg) = parser.next().map_err(|e| fail(e.to_string()))? {
            let flag = cli::flag(arg).map_err(fail)?;
            if flag == "-h" || flag == "--help" {
                return Err((usage.clone(), true));
            }
            if args.common.accept(&flag, &mut parser).map_err(fail)? {
                continue;
            }
            match flag.as_str() {
                "--url" => {
                    let value = cli::value(&mut parser, &flag).map_err(fail)?;
                    args.url = match value.split_once('=') {
                        Some((name, url)) if Backend::parse(name) == Ok(Backend::Postgres) => {
                            url.to_owned()
                        }
                        _ => value,
                    };
                }
                "--articles" => {
                    args.articles = cli::parsed_list(&mut parser, &flag).map_err(fail)?;
                }
                _ => return Err(fail(format!("unknown option {flag}"))),
            }
        }
        args.common.finish("diesel-occ-bench-smoke").map_err(fail)?;
        if args.articles.contains(&0) {
            return Err(fail("--articles must be at least 1".into()));
        }
        Ok(args)
    }
}

fn main() {
    let args = match Args::parse() {
        Ok(args) => args,
        Err((message, help)) => cli::exit_with_usage(&message, help),
    };
    if let Err(message) = bench(&args) {
        eprintln!("http: {message}");
        std::process::exit(1);
    }
}

/// The value of `OCC_BENCH_HTTP_SYNCHRONOUS_COMMIT`, checked.
fn synchronous_commit() -> Result<Option<String>, String> {
    match std::env::var("OCC_BENCH_HTTP_SYNCHRONOUS_COMMIT") {
        Err(_) => Ok(None),
        Ok(value) => {
            let known = ["on", "off", "local", "remote_write", "remote_apply"];
            if known.contains(&value.as_str()) {
                Ok(Some(value))
            } else {
                Err(format!(
                    "OCC_BENCH_HTTP_SYNCHRONOUS_COMMIT={value}: one of {}",
                    known.join(", ")
                ))
            }
        }
    }
}

/// Runs the HTTP benchmark: single runs of each write at each article count, then the
/// paired rounds, the paired rounds without HTTP, then the results in `--out`.
fn bench(args: &Args) -> Result<(), String> {
    let url = args.url.clone();
    ensure_database(Backend::Postgres, &url)?;
    app::migrate(&url).map_err(|e| format!("migrations: {e}"))?;
    let clients = args.common.workers;
    let articles: Vec<usize> = if args.articles.is_empty() {
        vec![clients, 1]
    } else {
        args.articles.clone()
    };
    let commit = synchronous_commit()?;
    let service = Service::start(&url, clients, commit.clone())?;
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
         a pool of {clients} connections{}), {clients} keep-alive clients on another \
         runtime (one thread), {:?} per run, articles {articles:?}",
        server_version(Backend::Postgres, &url),
        std::thread::available_parallelism().map_or(2, usize::from),
        commit.map_or_else(String::new, |c| format!(", synchronous_commit = {c}")),
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
