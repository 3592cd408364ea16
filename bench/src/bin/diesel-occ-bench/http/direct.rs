//! The same writes without HTTP: tasks on the service's runtime, each writing its
//! article through the service's pool with the statements the routes run (no request,
//! no JSON, no ETag header). What these reach is what the database and the pool allow;
//! the HTTP runs' distance from them is what HTTP costs.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use diesel_occ::UuidToken;
use diesel_occ::VersionToken;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_examples::postgres::AsyncPool;
use diesel_occ_examples::postgres::http::Article;
use diesel_occ_examples::schema::articles;

use super::service::unconditional_update;
use super::writes::{BODY_TEXT, HttpTally, Write};
use diesel_occ_bench::harness::Stop;

/// Runs `clients` tasks on `runtime` until `stop`; each starts from its article's
/// token in `starts` and returns its tally and the token it holds at the end.
pub(crate) fn run(
    runtime: &tokio::runtime::Runtime,
    pool: &AsyncPool,
    write: Write,
    starts: Vec<(String, UuidToken)>,
    stop: Arc<Stop>,
) -> Result<Vec<(HttpTally, UuidToken, Instant)>, String> {
    runtime.block_on(async {
        let tasks: Vec<_> = starts
            .into_iter()
            .enumerate()
            .map(|(index, (id, token))| {
                tokio::spawn(client(
                    pool.clone(),
                    write,
                    index,
                    id,
                    token,
                    Arc::clone(&stop),
                ))
            })
            .collect();
        let mut ended = Vec::with_capacity(tasks.len());
        for task in tasks {
            ended.push(task.await.map_err(|e| e.to_string())?);
        }
        Ok(ended)
    })
}

/// One task: the write of `write`, directly, until `stop`.
async fn client(
    pool: AsyncPool,
    write: Write,
    index: usize,
    id: String,
    mut token: UuidToken,
    stop: Arc<Stop>,
) -> (HttpTally, UuidToken, Instant) {
    let mut tally = HttpTally::default();
    let mut title = String::with_capacity(64);
    let mut seq = 0u64;
    while stop.another() {
        seq += 1;
        title.clear();
        let _ = write!(title, "title {index} {seq}");
        let began = Instant::now();
        match once(&pool, write, &id, &title, &token).await {
            Ok(fresh) => {
                token = fresh;
                tally.ok += 1;
                tally.latency(began);
            }
            Err(error) => tally.error(error),
        }
    }
    (tally, token, Instant::now())
}

/// One write, as its route runs it after parsing the request.
async fn once(
    pool: &AsyncPool,
    write: Write,
    id: &str,
    title: &str,
    token: &UuidToken,
) -> Result<UuidToken, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    match write {
        Write::IfMatch => {
            let changes = (
                diesel::ExpressionMethods::eq(articles::title, title),
                diesel::ExpressionMethods::eq(articles::body, BODY_TEXT),
            );
            Article::update_by_key(&mut conn, id.to_owned(), token, changes)
                .await
                .map_err(|e| e.to_string())
        }
        Write::LoadSave => {
            let mut article = Article::find_checked(&mut conn, id.to_owned(), token)
                .await
                .map_err(|e| e.to_string())?;
            article.title = title.to_owned();
            article.body = BODY_TEXT.to_owned();
            article
                .save_checked(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
            Ok(article.version)
        }
        Write::Unconditional => {
            let fresh = UuidToken::initial();
            match unconditional_update(&mut conn, id, title, BODY_TEXT, fresh).await {
                Ok(1) => Ok(fresh),
                Ok(n) => Err(format!("the unconditional UPDATE matched {n} rows")),
                Err(error) => Err(error.to_string()),
            }
        }
    }
}
