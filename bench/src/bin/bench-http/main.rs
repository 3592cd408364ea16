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
mod service;
mod wire;
mod writes;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel_occ::UuidToken;
use diesel_occ_examples::etag::etag;
use diesel_occ_examples::postgres as app;
use diesel_occ_examples::schema::articles;

use diesel_occ_bench::backend::{Backend, ensure_database, server_version};
use diesel_occ_bench::cli::{self, COMMON_USAGE, Common};
use diesel_occ_bench::cpu::{Sample, Spent};
use diesel_occ_bench::harness::{Limit, Stop};
use diesel_occ_bench::stats::{listed, median, percentile, ratio, verdict};
use diesel_occ_bench::summary::Summary;

use self::service::{Counted, Service};
use self::wire::Wire;
use self::writes::{BODY_TEXT, HttpTally, Write};

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

/// Through the service (HTTP), or the same statements straight on its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Http,
    Direct,
}

impl Via {
    fn name(self) -> &'static str {
        match self {
            Via::Http => "http",
            Via::Direct => "direct",
        }
    }
}

/// One measured run.
#[derive(Debug, Clone)]
struct HttpRow {
    round: usize,
    write: Write,
    via: Via,
    clients: usize,
    articles: usize,
    seconds: f64,
    ok: u64,
    per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    precondition_failed: u64,
    conflicts: u64,
    rereads: u64,
    errors: u64,
    /// Articles whose stored token is an ETag no client holds (must be 0).
    unmatched: usize,
    /// Statements the service's connections ran, per successful write.
    statements: f64,
    /// Their mean time from sending to result, per successful write, in ms.
    statement_ms: f64,
    /// CPU per successful write (absent off Linux).
    cpu: Option<Spent>,
}

impl HttpRow {
    const CSV_HEADER: &'static str = "round,write,clients,articles,seconds,ok,requests_per_sec,\
        p50_ms,p99_ms,status_412,status_409,rereads,errors,unmatched_etags,via,\
        statements_per_write,statement_ms_per_write,client_cpu_us,service_cpu_us,\
        postgres_cpu_us,machine_busy";

    fn csv(&self) -> String {
        let cpu = self.cpu.map_or_else(
            || ",,,".to_owned(),
            |c| {
                format!(
                    "{:.1},{:.1},{:.1},{:.3}",
                    c.client_us, c.service_us, c.postgres_us, c.machine_busy
                )
            },
        );
        format!(
            "{},{},{},{},{:.3},{},{:.1},{:.3},{:.3},{},{},{},{},{},{},{:.3},{:.3},{cpu}",
            self.round,
            self.write.name(),
            self.clients,
            self.articles,
            self.seconds,
            self.ok,
            self.per_sec,
            self.p50_ms,
            self.p99_ms,
            self.precondition_failed,
            self.conflicts,
            self.rereads,
            self.errors,
            self.unmatched,
            self.via.name(),
            self.statements,
            self.statement_ms,
        )
    }

    fn line(&self) -> String {
        let mut line = format!(
            "{:<17} articles {:>3}  {:>7.0} req/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             412 {:>6}  409 {:>6}  re-reads {:>6}  errors {:>3}  unmatched ETags {}",
            self.write.name(),
            self.articles,
            self.per_sec,
            self.p50_ms,
            self.p99_ms,
            self.precondition_failed,
            self.conflicts,
            self.rereads,
            self.errors,
            self.unmatched
        );
        let _ = write!(
            line,
            "\n    per write: {:.2} statements, {:.3} ms in them",
            self.statements, self.statement_ms
        );
        if let Some(cpu) = self.cpu {
            let _ = write!(
                line,
                "; CPU us: clients {:.0}, service {:.0}, PostgreSQL backends {:.0}; \
                 machine busy {:.0} %",
                cpu.client_us,
                cpu.service_us,
                cpu.postgres_us,
                cpu.machine_busy * 100.0
            );
        }
        line
    }
}

/// The probes around one run: the service's statements and the CPU.
struct Probes {
    counted: Counted,
    cpu: Option<Sample>,
}

impl Probes {
    /// Takes them on the clients' thread.
    fn take(service: &Service, backends: &[u32]) -> Probes {
        Probes {
            counted: service.probe.counted(),
            cpu: Sample::take(backends),
        }
    }
}

/// What a run measured, before it becomes a row.
struct Measured {
    total: HttpTally,
    seconds: f64,
    unmatched: usize,
    before: Probes,
    after: Probes,
}

fn row(
    round: usize,
    write: Write,
    via: Via,
    (clients, articles): (usize, usize),
    mut measured: Measured,
) -> HttpRow {
    let total = &mut measured.total;
    total.latencies.sort_unstable();
    let ms = |nanos: u64| nanos as f64 / 1e6;
    let writes = total.ok.max(1) as f64;
    let (before, after) = (&measured.before, &measured.after);
    let statements = after.counted.statements - before.counted.statements;
    let nanos = after.counted.statement_nanos - before.counted.statement_nanos;
    let cpu = before
        .cpu
        .zip(after.cpu)
        .map(|(from, to)| from.spent_until(&to, total.ok));
    HttpRow {
        round,
        write,
        via,
        clients,
        articles,
        seconds: measured.seconds,
        ok: total.ok,
        per_sec: total.ok as f64 / measured.seconds.max(1e-9),
        p50_ms: ms(percentile(&total.latencies, 50.0)),
        p99_ms: ms(percentile(&total.latencies, 99.0)),
        precondition_failed: total.precondition_failed,
        conflicts: total.conflicts,
        rereads: total.rereads,
        errors: total.errors,
        unmatched: measured.unmatched,
        statements: statements as f64 / writes,
        statement_ms: nanos as f64 / 1e6 / writes,
        cpu,
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
    write_results(args, &rows, &summary)
}

/// One HTTP run: fresh articles, every client reads its ETag, then writes until the
/// limit.
async fn run_http(
    wires: &mut Vec<Wire>,
    service: &Service,
    url: &str,
    write: Write,
    clients: usize,
    articles: usize,
    limit: Limit,
) -> Result<Measured, String> {
    let ids = fresh_articles(&mut wires[0], url, articles).await?;
    // Each client reads its article first (untimed): its ETag.
    let mut starts = Vec::with_capacity(clients);
    for (index, wire) in std::mem::take(wires).into_iter().enumerate() {
        let mut wire = wire;
        let path = format!("/articles/{}", ids[index % articles]);
        let tag = current_etag(&mut wire, &path).await?;
        starts.push((wire, path, tag));
    }
    let backends = service.probe.backends();
    let before = Probes::take(service, &backends);
    let mut stop = Stop::new(limit);
    stop.start();
    let stop = Arc::new(stop);
    let tasks: Vec<_> = starts
        .into_iter()
        .enumerate()
        .map(|(index, (wire, path, tag))| {
            tokio::spawn(client(wire, write, index, path, tag, Arc::clone(&stop)))
        })
        .collect();
    let mut total = HttpTally::default();
    let mut ended = stop.started();
    let mut held = Vec::with_capacity(clients);
    for task in tasks {
        let (tally, wire, tag, end) = task.await.map_err(|e| e.to_string())?;
        total.merge(tally);
        wires.push(wire);
        held.push(tag);
        ended = ended.max(end);
    }
    let after = Probes::take(service, &backends);
    if let Some(error) = &total.first_error {
        eprintln!("  {} failed: {error}", write.name());
    }
    let unmatched = unmatched_etags(url, &held)?;
    Ok(Measured {
        total,
        seconds: (ended - stop.started()).as_secs_f64(),
        unmatched,
        before,
        after,
    })
}

/// One run without HTTP on the articles `fresh_articles` just made.
fn run_direct(
    service: &Service,
    url: &str,
    write: Write,
    clients: usize,
    limit: Limit,
) -> Result<Measured, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    let stored: Vec<(String, UuidToken)> = articles::table
        .select((articles::id, articles::version))
        .order(articles::id)
        .load(&mut conn)
        .map_err(|e| e.to_string())?;
    let starts: Vec<_> = (0..clients)
        .map(|index| stored[index % stored.len()].clone())
        .collect();
    let backends = service.probe.backends();
    let before = Probes::take(service, &backends);
    let mut stop = Stop::new(limit);
    stop.start();
    let stop = Arc::new(stop);
    let ended = direct::run(
        &service.runtime,
        &service.pool,
        write,
        starts,
        Arc::clone(&stop),
    )?;
    let after = Probes::take(service, &backends);
    let mut total = HttpTally::default();
    let mut last = stop.started();
    let mut held = Vec::with_capacity(clients);
    for (tally, token, end) in ended {
        total.merge(tally);
        held.push(etag(&token));
        last = last.max(end);
    }
    if let Some(error) = &total.first_error {
        eprintln!("  {} (direct) failed: {error}", write.name());
    }
    let unmatched = unmatched_etags(url, &held)?;
    Ok(Measured {
        total,
        seconds: (last - stop.started()).as_secs_f64(),
        unmatched,
        before,
        after,
    })
}

/// Empties the articles table, then creates `count` articles through the service.
async fn fresh_articles(wire: &mut Wire, url: &str, count: usize) -> Result<Vec<String>, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    diesel::delete(articles::table)
        .execute(&mut conn)
        .map_err(|e| e.to_string())?;
    let mut ids = Vec::with_capacity(count);
    for n in 0..count {
        let body = format!(r#"{{"title":"article {n}","body":"{BODY_TEXT}"}}"#);
        let reply = wire
            .send("POST", "/articles", None, body.as_bytes())
            .await?;
        if reply.status != 201 {
            return Err(format!("POST /articles: {}", reply.status));
        }
        let created: serde_json::Value =
            serde_json::from_slice(reply.body).map_err(|e| e.to_string())?;
        let id = created["id"].as_str().ok_or("POST returned no id")?;
        ids.push(id.to_owned());
    }
    Ok(ids)
}

/// The article's current ETag, from a GET.
async fn current_etag(wire: &mut Wire, path: &str) -> Result<String, String> {
    let reply = wire.send("GET", path, None, b"").await?;
    match (reply.status, reply.etag) {
        (200, Some(tag)) => Ok(tag.to_owned()),
        (status, _) => Err(format!("GET {path}: {status} without an ETag")),
    }
}

/// One client: writes its article until `stop`, keeping the ETag of every response.
/// Returns its connection for the next run.
async fn client(
    mut wire: Wire,
    write: Write,
    index: usize,
    path: String,
    mut tag: String,
    stop: Arc<Stop>,
) -> (HttpTally, Wire, String, Instant) {
    let mut tally = HttpTally::default();
    let bench_path = path.replacen("/articles/", "/bench/articles/", 1);
    let mut body = String::with_capacity(BODY_TEXT.len() + 64);
    let mut seq = 0u64;
    while stop.another() {
        seq += 1;
        body.clear();
        let _ = write!(
            body,
            r#"{{"title":"title {index} {seq}","body":"{BODY_TEXT}"}}"#
        );
        let (method, target, if_match) = match write {
            Write::IfMatch => ("PUT", &path, Some(tag.as_str())),
            Write::LoadSave => ("PATCH", &path, Some(tag.as_str())),
            Write::Unconditional => ("PUT", &bench_path, None),
        };
        let began = Instant::now();
        let status = match wire.send(method, target, if_match, body.as_bytes()).await {
            Ok(reply) => match (reply.status, reply.etag) {
                (200, Some(fresh)) => {
                    tag.clear();
                    tag.push_str(fresh);
                    200
                }
                (status, _) => status,
            },
            Err(error) => {
                // The connection is lost: nothing more can be sent on it.
                tally.error(error);
                break;
            }
        };
        match status {
            200 => {
                tally.ok += 1;
                tally.latency(began);
            }
            412 | 409 => {
                if status == 409 {
                    tally.conflicts += 1;
                } else {
                    tally.precondition_failed += 1;
                }
                tally.rereads += 1;
                match current_etag(&mut wire, &path).await {
                    Ok(current) => tag = current,
                    Err(error) => tally.error(error),
                }
            }
            status => tally.error(format!("{} answered {status}", write.name())),
        }
    }
    (tally, wire, tag, Instant::now())
}

/// Articles whose stored token is not an ETag some client holds: each article's last
/// successful writer holds its token, so this must be 0.
fn unmatched_etags(url: &str, held: &[String]) -> Result<usize, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    let tokens: Vec<UuidToken> = articles::table
        .select(articles::version)
        .load(&mut conn)
        .map_err(|e| e.to_string())?;
    Ok(tokens
        .iter()
        .filter(|token| !held.contains(&etag(*token)))
        .count())
}

/// The ratios of the paired rounds: of the medians, and the median of each round's;
/// then, per write, the medians of where its time went, and the ratios without HTTP.
fn report_ratios(rows: &[HttpRow], rounds: usize, summary: &mut Summary) {
    for via in [Via::Http, Via::Direct] {
        let paired: Vec<&HttpRow> = rows
            .iter()
            .filter(|r| r.round > 0 && r.via == via)
            .collect();
        let values = |write: Write, of: fn(&HttpRow) -> f64| -> Vec<f64> {
            paired
                .iter()
                .filter(|r| r.write == write)
                .map(|r| of(r))
                .collect()
        };
        let of_round = |round: usize, write: Write| {
            paired
                .iter()
                .find(|r| r.round == round && r.write == write)
                .map(|r| r.per_sec)
        };
        let [conditional, load_save, unconditional] =
            Write::ALL.map(|w| median(values(w, |r| r.per_sec)));
        let label = match via {
            Via::Http => "http",
            Via::Direct => "without HTTP (diagnosis, no target)",
        };
        summary.say(format!(
            "{label}: medians: put-if-match {conditional:.0}, patch-load-save {load_save:.0}, \
             put-unconditional {unconditional:.0} req/s"
        ));
        for write in Write::ALL {
            let of = |f: fn(&HttpRow) -> f64| median(values(write, f));
            let mut line = format!(
                "  {:<17} medians per write: p50 {:.3} ms, {:.2} statements taking {:.3} ms",
                write.name(),
                of(|r| r.p50_ms),
                of(|r| r.statements),
                of(|r| r.statement_ms),
            );
            if paired.iter().all(|r| r.cpu.is_some()) {
                let cpu = |f: fn(&Spent) -> f64| {
                    median(
                        paired
                            .iter()
                            .filter(|r| r.write == write)
                            .filter_map(|r| r.cpu.as_ref().map(f))
                            .collect(),
                    )
                };
                let _ = write!(
                    line,
                    "; CPU us: clients {:.0}, service {:.0}, PostgreSQL backends {:.0}",
                    cpu(|c| c.client_us),
                    cpu(|c| c.service_us),
                    cpu(|c| c.postgres_us),
                );
            }
            summary.say(line);
        }
        for (other, target) in [(Write::LoadSave, 1.3), (Write::Unconditional, 0.95)] {
            let theirs = median(values(other, |r| r.per_sec));
            let per_round: Vec<f64> = (1..=rounds)
                .filter_map(|round| {
                    Some(of_round(round, Write::IfMatch)? / of_round(round, other)?)
                })
                .collect();

            let value = conditional / theirs;
            let verdict = match via {
                Via::Http => format!(" (target >= {target}: {})", verdict(value, target)),
                Via::Direct => String::new(),
            };
            summary.say(format!(
                "{label}: put-if-match / {} = {}{verdict}; per round: {} (median {:.3})",
                other.name(),
                ratio(conditional, theirs),
                listed(&per_round),
                median(per_round),
            ));
        }
    }
    let (failed, conflicts) = rows.iter().fold((0, 0), |(f, c), r| {
        (f + r.precondition_failed, c + r.conflicts)
    });
    let unmatched: usize = rows.iter().map(|r| r.unmatched).sum();
    summary.say(format!(
        "http: 412 responses {failed}, 409 responses {conflicts} (all runs); articles whose \
         token no client holds: {unmatched}"
    ));
}

/// `http.csv` and `http-summary.txt` in `--out`.
fn write_results(args: &Args, rows: &[HttpRow], summary: &Summary) -> Result<(), String> {
    std::fs::create_dir_all(&args.common.out).map_err(|e| e.to_string())?;
    let mut csv = String::from(HttpRow::CSV_HEADER);
    csv.push('\n');
    for row in rows {
        csv.push_str(&row.csv());
        csv.push('\n');
    }
    let path = args.common.out.join("http.csv");
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = args.common.out.join("http-summary.txt");
    std::fs::write(&text, summary.text()).map_err(|e| format!("{}: {e}", text.display()))?;
    println!("wrote {} and {}", path.display(), text.display());
    Ok(())
}
