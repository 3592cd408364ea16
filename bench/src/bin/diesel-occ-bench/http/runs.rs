//! The writes and their runs: fresh articles, then the clients (over HTTP) or the
//! tasks (without it: the statements the routes run, on the service's runtime and
//! pool, no request, no JSON, no ETag header) writing until the duration is up.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_axum::ETag;
use diesel_occ_bench::harness::{Stop, spawn_all};
use diesel_occ_examples::postgres::AsyncPool;
use diesel_occ_examples::postgres::http::Article;
use diesel_occ_examples::schema::articles;

use super::service::{Service, unconditional_update};
use super::wire::Wire;

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
    pub(crate) const ALL: [Write; 3] = [Write::IfMatch, Write::LoadSave, Write::Unconditional];

    pub(crate) fn name(self) -> &'static str {
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

/// What the clients of one run saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpTally {
    pub(crate) ok: u64,
    pub(crate) precondition_failed: u64,
    pub(crate) conflicts: u64,
    pub(crate) rereads: u64,
    pub(crate) errors: u64,
    pub(crate) latencies: Vec<u64>,
    pub(crate) first_error: Option<String>,
}

impl HttpTally {
    fn error(&mut self, text: String) {
        self.errors += 1;
        self.first_error.get_or_insert(text);
    }

    /// A successful write that began at `began`.
    fn ok(&mut self, began: Instant) {
        self.ok += 1;
        let nanos = began.elapsed().as_nanos();
        self.latencies
            .push(u64::try_from(nanos).unwrap_or(u64::MAX));
    }
}

/// What a run measured.
#[derive(Debug)]
pub(crate) struct Measured {
    /// The clients' tallies, merged, the latencies sorted.
    pub(crate) tally: HttpTally,
    pub(crate) seconds: f64,
    /// Articles whose stored token is an ETag no client holds (must be 0).
    pub(crate) unmatched: usize,
    /// Statements the service's connections ran.
    pub(crate) statements: u64,
}

/// What one client ended with: its tally, the ETag it holds, when it stopped.
type Ended = (HttpTally, String, Instant);

/// One HTTP run: fresh articles, every client reads its ETag, then writes for
/// `duration`; the clients' connections go back into `wires`.
pub(crate) async fn run_http(
    wires: &mut Vec<Wire>,
    service: &Service,
    url: &str,
    write: Write,
    articles: usize,
    duration: Duration,
) -> Result<Measured, String> {
    let ids = fresh_articles(&mut wires[0], url, articles).await?;
    // Each client reads its article first (untimed): its ETag.
    let mut starts = Vec::with_capacity(wires.len());
    for (index, mut wire) in std::mem::take(wires).into_iter().enumerate() {
        let path = format!("/articles/{}", ids[index % articles]);
        let tag = current_etag(&mut wire, &path).await?;
        starts.push((wire, path, tag));
    }
    measure(service, url, write, duration, async |stop| {
        let clients = starts
            .into_iter()
            .enumerate()
            .map(|(index, (wire, path, tag))| {
                client(wire, write, index, path, tag, Arc::clone(&stop))
            });
        let mut ended = Vec::new();
        for (end, wire) in spawn_all(clients).await? {
            ended.push(end);
            wires.push(wire);
        }
        Ok(ended)
    })
    .await
}

/// One run without HTTP on the articles `fresh_articles` just made: `clients` tasks on
/// the service's runtime, each from its article's stored token.
pub(crate) fn run_direct(
    service: &Service,
    url: &str,
    write: Write,
    clients: usize,
    duration: Duration,
) -> Result<Measured, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    let stored: Vec<(String, UuidToken)> = articles::table
        .select((articles::id, articles::version))
        .order(articles::id)
        .load(&mut conn)
        .map_err(|e| e.to_string())?;
    service
        .runtime
        .block_on(measure(service, url, write, duration, async |stop| {
            let tasks = (0..clients).map(|index| {
                let (id, token) = stored[index % stored.len()].clone();
                direct(
                    service.pool.clone(),
                    write,
                    index,
                    id,
                    token,
                    Arc::clone(&stop),
                )
            });
            spawn_all(tasks).await
        }))
}

/// Runs the clients `clients(stop)` starts, between the probes; then checks that every
/// article's token is one some client holds.
async fn measure(
    service: &Service,
    url: &str,
    write: Write,
    duration: Duration,
    clients: impl AsyncFnOnce(Arc<Stop>) -> Result<Vec<Ended>, String>,
) -> Result<Measured, String> {
    let before = service.statements();
    let stop = Arc::new(Stop::new(duration));
    let ended = clients(Arc::clone(&stop)).await?;
    let statements = service.statements() - before;
    let mut total = HttpTally::default();
    let mut last = stop.started();
    let mut held = Vec::with_capacity(ended.len());
    for (tally, tag, end) in ended {
        total.ok += tally.ok;
        total.precondition_failed += tally.precondition_failed;
        total.conflicts += tally.conflicts;
        total.rereads += tally.rereads;
        total.errors += tally.errors;
        total.latencies.extend(tally.latencies);
        total.first_error = total.first_error.or(tally.first_error);
        held.push(tag);
        last = last.max(end);
    }
    if let Some(error) = &total.first_error {
        eprintln!("  {} failed: {error}", write.name());
    }
    total.latencies.sort_unstable();
    // Each article's last successful writer holds its token.
    let mut conn = PgConnection::establish(url).map_err(|e| e.to_string())?;
    let tokens: Vec<UuidToken> = articles::table
        .select(articles::version)
        .load(&mut conn)
        .map_err(|e| e.to_string())?;
    let unmatched = tokens
        .iter()
        .filter(|token| !held.contains(&ETag::from_token(*token).to_string()))
        .count();
    let seconds = (last - stop.started()).as_secs_f64();
    Ok(Measured {
        tally: total,
        seconds,
        unmatched,
        statements,
    })
}

/// Empties the articles table, then creates `count` articles through the service.
pub(crate) async fn fresh_articles(
    wire: &mut Wire,
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
        let reply = wire
            .send("POST", "/articles", None, body.as_bytes())
            .await?;
        if reply.status != 201 {
            return Err(format!("POST /articles: {}", reply.status));
        }
        let created: serde_json::Value =
            serde_json::from_slice(reply.body).map_err(|e| e.to_string())?;
        ids.push(
            created["id"]
                .as_str()
                .ok_or("POST returned no id")?
                .to_owned(),
        );
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
) -> (Ended, Wire) {
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
            200 => tally.ok(began),
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
    ((tally, tag, Instant::now()), wire)
}

/// One task without HTTP: the write of `write` on its article, as its route runs it
/// after parsing the request, until `stop`.
async fn direct(
    pool: AsyncPool,
    write: Write,
    index: usize,
    id: String,
    mut token: UuidToken,
    stop: Arc<Stop>,
) -> Ended {
    let mut tally = HttpTally::default();
    let mut title = String::with_capacity(64);
    let mut seq = 0u64;
    while stop.another() {
        seq += 1;
        title.clear();
        let _ = write!(title, "title {index} {seq}");
        let began = Instant::now();
        let written = async {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            let conn = &mut *conn;
            let text = |e: diesel_occ::Error| e.to_string();
            match write {
                Write::IfMatch => {
                    let changes = (articles::title.eq(&title), articles::body.eq(BODY_TEXT));
                    Article::update_by_key(conn, id.clone(), &token, changes)
                        .await
                        .map_err(text)
                }
                Write::LoadSave => {
                    let mut article = Article::find_checked(conn, id.clone(), &token)
                        .await
                        .map_err(text)?;
                    article.title.clone_from(&title);
                    article.body = BODY_TEXT.to_owned();
                    article.save_checked(conn).await.map_err(text)?;
                    Ok(article.version)
                }
                Write::Unconditional => {
                    let fresh = UuidToken::initial();
                    match unconditional_update(conn, &id, &title, BODY_TEXT, fresh).await {
                        Ok(1) => Ok(fresh),
                        Ok(n) => Err(format!("the unconditional UPDATE matched {n} rows")),
                        Err(error) => Err(error.to_string()),
                    }
                }
            }
        };
        match written.await {
            Ok(fresh) => {
                token = fresh;
                tally.ok(began);
            }
            Err(error) => tally.error(error),
        }
    }
    (tally, ETag::from_token(&token).to_string(), Instant::now())
}
