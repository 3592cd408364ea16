//! The runs: fresh articles, then the clients (over HTTP) or the tasks (without it)
//! writing until the limit.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use diesel::prelude::*;
use diesel_occ::UuidToken;
use diesel_occ_axum::ETag;
use diesel_occ_examples::schema::articles;

use diesel_occ_bench::harness::{Limit, Stop};

use super::direct;
use super::report::{Measured, Probes};
use super::service::Service;
use super::wire::Wire;
use super::writes::{BODY_TEXT, HttpTally, Write};

/// One HTTP run: fresh articles, every client reads its ETag, then writes until the
/// limit.
pub(crate) async fn run_http(
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
pub(crate) fn run_direct(
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
        held.push(ETag::from_token(&token).to_string());
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
        .filter(|token| !held.contains(&ETag::from_token(*token).to_string()))
        .count())
}
