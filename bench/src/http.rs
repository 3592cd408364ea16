//! `--http`: a load generator against the example HTTP service
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
//! binary would), on an ephemeral port of 127.0.0.1, with a pool of as many connections
//! as clients. The clients run on another runtime, each a task with a keep-alive
//! connection (reqwest), each writing its own article by default (no contention: the
//! ratios measure what each write costs) and keeping the ETag of every response. After a
//! 412 or 409 a client GETs the article for its current ETag (a "re-read"), as a real
//! client would. `--articles` sets how many articles the clients share (the first count
//! is the one of the paired rounds; the default adds one article shared by every client,
//! where 412s and 409s happen).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header::ETAG;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use diesel::prelude::*;
use diesel_occ::statement::CachedUpdate;
use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_examples::etag::etag;
use diesel_occ_examples::postgres::http::{ArticleJson, MAX_BODY, MAX_TITLE};
use diesel_occ_examples::postgres::{self as app, AsyncPool};
use diesel_occ_examples::schema::articles;
use reqwest::header::IF_MATCH;
use reqwest::{Client, Method};

use crate::backend::{Backend, ensure_database, server_version};
use crate::harness::{Limit, Stop, percentile};
use crate::options::Args;
use crate::report::Summary;
use crate::rounds::ratio;

/// A way to write an article whose ETag the client holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// `PUT` with `If-Match`: one conditional UPDATE, no read.
    IfMatch,
    /// `PATCH` with `If-Match`: the read with the token, then the checked save.
    LoadSave,
    /// `PUT` on the benchmark's route: one UPDATE by key, no token.
    Unconditional,
}

impl Write {
    const ALL: [Write; 3] = [Write::IfMatch, Write::LoadSave, Write::Unconditional];

    fn name(self) -> &'static str {
        match self {
            Write::IfMatch => "put-if-match",
            Write::LoadSave => "patch-load-save",
            Write::Unconditional => "put-unconditional",
        }
    }
}

/// The text every write sends as the article's body (about 200 bytes).
const BODY_TEXT: &str = "Optimistic concurrency control: the client sends back the ETag it \
    read, and the write succeeds only if the article still holds it. Nothing is locked \
    between the read and the write, and no update is ever lost.";

/// What one run of one write saw.
#[derive(Debug, Clone, Default)]
struct HttpTally {
    ok: u64,
    precondition_failed: u64,
    conflicts: u64,
    rereads: u64,
    errors: u64,
    latencies: Vec<u64>,
    first_error: Option<String>,
}

impl HttpTally {
    fn merge(&mut self, other: HttpTally) {
        self.ok += other.ok;
        self.precondition_failed += other.precondition_failed;
        self.conflicts += other.conflicts;
        self.rereads += other.rereads;
        self.errors += other.errors;
        self.latencies.extend(other.latencies);
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn error(&mut self, text: String) {
        self.errors += 1;
        self.first_error.get_or_insert(text);
    }
}

/// One measured run.
#[derive(Debug, Clone)]
struct HttpRow {
    round: usize,
    write: Write,
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
}

impl HttpRow {
    const CSV_HEADER: &'static str = "round,write,clients,articles,seconds,ok,requests_per_sec,\
        p50_ms,p99_ms,status_412,status_409,rereads,errors,unmatched_etags";

    fn csv(&self) -> String {
        format!(
            "{},{},{},{},{:.3},{},{:.1},{:.3},{:.3},{},{},{},{},{}",
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
            self.unmatched
        )
    }

    fn line(&self) -> String {
        format!(
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
        )
    }
}

/// The service, running on its own runtime until dropped.
struct Service {
    base: String,
    /// Serves until dropped.
    _runtime: tokio::runtime::Runtime,
}

impl Service {
    /// The app's router plus the benchmark's unconditional route, on 127.0.0.1.
    fn start(url: &str, connections: usize) -> Result<Service, String> {
        let threads = std::thread::available_parallelism().map_or(2, usize::from);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let pool = app::async_pool(url, connections).map_err(|e| e.to_string())?;
        let router: Router = app::http::router(pool.clone()).merge(bench_routes(pool));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| e.to_string())?;
        let base = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        runtime.spawn(async move { axum::serve(listener, router).await });
        Ok(Service {
            base,
            _runtime: runtime,
        })
    }
}

/// `PUT /bench/articles/{id}`: the unconditional write, for this benchmark only (the
/// example app itself refuses a write without `If-Match`). It does what the app's PUT
/// does (parse, validate, one UPDATE with a fresh token, the new ETag) without the
/// token in the UPDATE's `WHERE`. The UPDATE is prepared once per connection
/// (`CachedUpdate`), as diesel-occ's statements are, so the two PUTs differ only by
/// the predicate.
fn bench_routes(pool: AsyncPool) -> Router {
    Router::new()
        .route("/bench/articles/{id}", put(put_unconditional))
        .with_state(pool)
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Replacement {
    title: String,
    body: String,
}

async fn put_unconditional(
    State(pool): State<AsyncPool>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let Ok(new) = serde_json::from_slice::<Replacement>(&body) else {
        return StatusCode::UNPROCESSABLE_ENTITY.into_response();
    };
    if new.title.trim().is_empty()
        || new.title.chars().count() > MAX_TITLE
        || new.body.len() > MAX_BODY
    {
        return StatusCode::UNPROCESSABLE_ENTITY.into_response();
    }
    let Ok(mut conn) = pool.get().await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let version = UuidToken::initial();
    let statement = CachedUpdate::new(
        articles::table.find(id.clone()),
        (
            articles::title.eq(&new.title),
            articles::body.eq(&new.body),
            articles::version.eq(version),
        ),
    );
    let written = diesel_async::RunQueryDsl::execute(statement, &mut conn).await;
    match written {
        Ok(1) => {
            let tag = HeaderValue::from_str(&etag(&version)).expect("a UUID ETag is a header");
            let json = ArticleJson {
                id,
                title: new.title,
                body: new.body,
            };
            (StatusCode::OK, [(ETAG, tag)], axum::Json(json)).into_response()
        }
        Ok(_) => StatusCode::NOT_FOUND.into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Runs the HTTP benchmark: single runs of each write at each article count, then the
/// paired rounds, then the results in `--out`.
pub(crate) fn bench(args: &Args) -> Result<(), String> {
    let url = args.url(Backend::Postgres);
    ensure_database(Backend::Postgres, &url)?;
    app::migrate(&url).map_err(|e| format!("migrations: {e}"))?;
    let clients = args.workers;
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
    let http = Client::builder()
        .pool_max_idle_per_host(clients)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| e.to_string())?;
    let mut summary = Summary::default();
    summary.say(format!(
        "== http ({}): the example HTTP service in this process (its own {}-thread runtime, \
         a pool of {clients} connections), {clients} keep-alive clients on another runtime, \
         {:?} per run, articles {articles:?}",
        server_version(Backend::Postgres, &url),
        std::thread::available_parallelism().map_or(2, usize::from),
        args.limit,
    ));
    let mut rows = Vec::new();
    let mut run = |round: usize, write: Write, articles: usize, summary: &mut Summary| {
        let row = client_runtime.block_on(run_once(
            &http,
            &service.base,
            &url,
            write,
            clients,
            articles,
            args.limit,
            round,
        ))?;
        let label = if round == 0 {
            String::new()
        } else {
            format!("round {round}: ")
        };
        summary.say(format!("{label}{}", row.line()));
        rows.push(row);
        Ok::<(), String>(())
    };
    // Warm-up (pool connections, keep-alive connections, prepared statements): not kept.
    for write in Write::ALL {
        client_runtime.block_on(run_once(
            &http,
            &service.base,
            &url,
            write,
            clients,
            clients,
            Limit::Time(Duration::from_millis(200)),
            0,
        ))?;
    }
    for &count in &articles {
        for write in Write::ALL {
            run(0, write, count, &mut summary)?;
        }
    }
    let paired_articles = articles[0];
    summary.say(format!(
        "-- paired rounds ({} rounds) at {paired_articles} articles: the three writes one after \
         the other, each round starting with another",
        args.rounds
    ));
    let mut order = Write::ALL;
    for round in 1..=args.rounds {
        if round > 1 {
            order.rotate_left(1);
        }
        for write in order {
            run(round, write, paired_articles, &mut summary)?;
        }
    }
    drop(service);
    report_ratios(&rows, args.rounds, &mut summary);
    write_results(args, &rows, &summary)
}

/// One run: fresh articles, every client reads its ETag, then writes until the limit.
#[allow(clippy::too_many_arguments)]
async fn run_once(
    http: &Client,
    base: &str,
    url: &str,
    write: Write,
    clients: usize,
    articles: usize,
    limit: Limit,
    round: usize,
) -> Result<HttpRow, String> {
    let ids = fresh_articles(http, base, url, articles).await?;
    // Each client reads its article first (untimed, all at once): its ETag, and a warm
    // keep-alive connection.
    let mut reads = Vec::with_capacity(clients);
    for index in 0..clients {
        let (http, url) = (
            http.clone(),
            format!("{base}/articles/{}", ids[index % articles]),
        );
        reads.push(tokio::spawn(async move {
            let tag = current_etag(&http, &url).await?;
            Ok::<_, String>((url, tag))
        }));
    }
    let mut starts = Vec::with_capacity(clients);
    for read in reads {
        starts.push(read.await.map_err(|e| e.to_string())??);
    }
    let mut stop = Stop::new(limit);
    stop.start();
    let stop = Arc::new(stop);
    let tasks: Vec<_> = starts
        .into_iter()
        .enumerate()
        .map(|(index, (article_url, tag))| {
            let (http, stop) = (http.clone(), Arc::clone(&stop));
            let bench_url = article_url.replacen("/articles/", "/bench/articles/", 1);
            tokio::spawn(client(
                http,
                write,
                index,
                article_url,
                bench_url,
                tag,
                stop,
            ))
        })
        .collect();
    let mut total = HttpTally::default();
    let mut ended = stop.started();
    let mut held = Vec::with_capacity(clients);
    for task in tasks {
        let (tally, tag, end) = task.await.map_err(|e| e.to_string())?;
        total.merge(tally);
        held.push(tag);
        ended = ended.max(end);
    }
    if let Some(error) = &total.first_error {
        eprintln!("  {} failed: {error}", write.name());
    }
    let unmatched = unmatched_etags(url, &held)?;
    total.latencies.sort_unstable();
    let seconds = (ended - stop.started()).as_secs_f64();
    let ms = |nanos: u64| nanos as f64 / 1e6;
    Ok(HttpRow {
        round,
        write,
        clients,
        articles,
        seconds,
        ok: total.ok,
        per_sec: total.ok as f64 / seconds.max(1e-9),
        p50_ms: ms(percentile(&total.latencies, 50.0)),
        p99_ms: ms(percentile(&total.latencies, 99.0)),
        precondition_failed: total.precondition_failed,
        conflicts: total.conflicts,
        rereads: total.rereads,
        errors: total.errors,
        unmatched,
    })
}

/// Empties the articles table, then creates `count` articles through the service.
async fn fresh_articles(
    http: &Client,
    base: &str,
    url: &str,
    count: usize,
) -> Result<Vec<String>, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    diesel::delete(articles::table)
        .execute(&mut conn)
        .map_err(|e| e.to_string())?;
    let mut ids = Vec::with_capacity(count);
    for n in 0..count {
        let body = format!(r#"{{"title":"article {n}","body":"{BODY_TEXT}"}}"#);
        let response = http
            .post(format!("{base}/articles"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if response.status() != reqwest::StatusCode::CREATED {
            return Err(format!("POST /articles: {}", response.status()));
        }
        let created: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
        let id = created["id"].as_str().ok_or("POST returned no id")?;
        ids.push(id.to_owned());
    }
    Ok(ids)
}

/// The article's current ETag, from a GET.
async fn current_etag(http: &Client, url: &str) -> Result<String, String> {
    let response = http.get(url).send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let tag = response
        .headers()
        .get(reqwest::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    response.bytes().await.map_err(|e| e.to_string())?;
    tag.ok_or_else(|| format!("GET {url}: {status} without an ETag"))
}

/// One client: writes its article until `stop`, keeping the ETag of every response.
async fn client(
    http: Client,
    write: Write,
    index: usize,
    article_url: String,
    bench_url: String,
    mut tag: String,
    stop: Arc<Stop>,
) -> (HttpTally, String, Instant) {
    let mut tally = HttpTally::default();
    let mut seq = 0u64;
    while stop.another() {
        seq += 1;
        let body = format!(r#"{{"title":"title {index} {seq}","body":"{BODY_TEXT}"}}"#);
        let request = match write {
            Write::IfMatch => http.put(&article_url).header(IF_MATCH, &tag),
            Write::LoadSave => http
                .request(Method::PATCH, &article_url)
                .header(IF_MATCH, &tag),
            Write::Unconditional => http.put(&bench_url),
        };
        let began = Instant::now();
        let sent = async {
            let response = request
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await?;
            let status = response.status();
            let fresh = response
                .headers()
                .get(reqwest::header::ETAG)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            response.bytes().await?;
            Ok::<_, reqwest::Error>((status, fresh))
        }
        .await;
        match sent {
            Ok((status, Some(fresh))) if status == reqwest::StatusCode::OK => {
                tag = fresh;
                tally.ok += 1;
                let nanos = began.elapsed().as_nanos();
                tally
                    .latencies
                    .push(u64::try_from(nanos).unwrap_or(u64::MAX));
            }
            Ok((status, _))
                if status == reqwest::StatusCode::PRECONDITION_FAILED
                    || status == reqwest::StatusCode::CONFLICT =>
            {
                if status == reqwest::StatusCode::CONFLICT {
                    tally.conflicts += 1;
                } else {
                    tally.precondition_failed += 1;
                }
                tally.rereads += 1;
                match current_etag(&http, &article_url).await {
                    Ok(current) => tag = current,
                    Err(error) => tally.error(error),
                }
            }
            Ok((status, _)) => tally.error(format!("{} answered {status}", write.name())),
            Err(error) => tally.error(error.to_string()),
        }
    }
    (tally, tag, Instant::now())
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

/// The ratios of the paired rounds: of the medians, and the median of each round's.
fn report_ratios(rows: &[HttpRow], rounds: usize, summary: &mut Summary) {
    let paired: Vec<&HttpRow> = rows.iter().filter(|r| r.round > 0).collect();
    let values = |write: Write| -> Vec<f64> {
        paired
            .iter()
            .filter(|r| r.write == write)
            .map(|r| r.per_sec)
            .collect()
    };
    let of_round = |round: usize, write: Write| {
        paired
            .iter()
            .find(|r| r.round == round && r.write == write)
            .map(|r| r.per_sec)
    };
    let [conditional, load_save, unconditional] = Write::ALL.map(|w| median(values(w)));
    summary.say(format!(
        "medians: put-if-match {conditional:.0}, patch-load-save {load_save:.0}, \
         put-unconditional {unconditional:.0} req/s"
    ));
    for (other, target) in [(Write::LoadSave, 1.3), (Write::Unconditional, 0.95)] {
        let theirs = median(values(other));
        let per_round: Vec<f64> = (1..=rounds)
            .filter_map(|round| Some(of_round(round, Write::IfMatch)? / of_round(round, other)?))
            .collect();
        let listed: Vec<String> = per_round.iter().map(|r| format!("{r:.2}")).collect();
        let value = conditional / theirs;
        summary.say(format!(
            "http: put-if-match / {} = {} (target >= {target}: {}); per round: {} (median {:.3})",
            other.name(),
            ratio(conditional, theirs),
            if value >= target { "met" } else { "MISSED" },
            listed.join(" "),
            median(per_round),
        ));
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

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// `http.csv` and `http-summary.txt` in `--out`.
fn write_results(args: &Args, rows: &[HttpRow], summary: &Summary) -> Result<(), String> {
    std::fs::create_dir_all(&args.out).map_err(|e| e.to_string())?;
    let mut csv = String::from(HttpRow::CSV_HEADER);
    csv.push('\n');
    for row in rows {
        csv.push_str(&row.csv());
        csv.push('\n');
    }
    let path = args.out.join("http.csv");
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = args.out.join("http-summary.txt");
    std::fs::write(&text, summary.text()).map_err(|e| format!("{}: {e}", text.display()))?;
    println!("wrote {} and {}", path.display(), text.display());
    Ok(())
}
