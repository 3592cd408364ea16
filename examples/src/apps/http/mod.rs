//! An axum CRUD service where the concurrency token is the ETag, on `diesel-occ-axum`
//! (RFC 9110 conditional requests, RFC 9457 problem responses).
//!
//! | request | success | failures |
//! |---|---|---|
//! | `POST /articles` `{"title","body"}` | 201, `Location`, `ETag` | 422 |
//! | `GET`/`HEAD /articles/{id}` (+ `If-None-Match`) | 200 with `ETag`; 304 when it matches (weak comparison, `*`) | 404, 400 |
//! | `PUT /articles/{id}` `{"title","body"}` + `If-Match` | 200, new `ETag` | 428, 400, 412 + current `ETag`, 404, 409, 422 |
//! | `PATCH /articles/{id}` `{"title"?,"body"?}` + `If-Match` | 200, new `ETag` | same |
//! | `DELETE /articles/{id}` + `If-Match` | 204 | 428, 400, 412 + current `ETag`, 404, 409 |
//! | `GET /metrics` | 200, diesel-occ's counters and histograms for Prometheus | |
//!
//! The statuses are diesel-occ-axum's (its `problem` module has the table). A `PUT` or
//! `DELETE` whose `If-Match` is one ETag is one conditional statement
//! ([`update_by_key`](CheckedDsl::update_by_key),
//! [`delete_by_key`](CheckedDsl::delete_by_key)): the write itself checks the token.
//! `PATCH`, `*` and lists read the row, check the header against its token and write
//! with that token, inside [`asynchronous::retry`]: a write that commits in between is
//! retried, so the check and the write see one version (a tag that went stale meanwhile
//! is 412 on the re-read; `*` retries until the policy gives up: 409).

pub mod client;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_TYPE, LOCATION};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_async::pooled_connection::deadpool::Object;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{UuidToken, VersionToken, asynchronous};
use diesel_occ_axum::{ETag, IfMatch, IfNoneMatch, Problem};
use serde::{Deserialize, Serialize};

use super::{AsyncConn, AsyncPool};
use crate::schema::articles;

/// Longest title accepted.
pub const MAX_TITLE: usize = 200;
/// Longest body accepted, in bytes.
pub const MAX_BODY: usize = 10_000;

/// An article. `version` is the concurrency token, sent to clients as the ETag.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = articles)]
pub struct Article {
    /// The key: a UUID the service assigns.
    pub id: String,
    /// The title.
    pub title: String,
    /// The text.
    pub body: String,
    /// The concurrency token.
    #[occ(version)]
    pub version: UuidToken,
}

/// What every handler gets: the pool of async connections.
#[derive(Clone)]
pub struct AppState {
    /// The connections.
    pub pool: AsyncPool,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

/// The service's routes; installs the process's Prometheus recorder on first use.
pub fn router(pool: AsyncPool) -> Router {
    crate::metrics::prometheus();
    Router::new()
        .route("/articles", post(create))
        .route(
            "/articles/{id}",
            get(read).put(replace).patch(patch).delete(remove),
        )
        .route("/metrics", get(metrics))
        .with_state(AppState { pool })
}

/// Serves the routes on `listener` until the future is dropped or the server fails.
pub async fn serve(listener: tokio::net::TcpListener, pool: AsyncPool) -> std::io::Result<()> {
    axum::serve(listener, router(pool)).await
}

/// An article as clients see it; its token travels in the `ETag` header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArticleJson {
    /// The id.
    pub id: String,
    /// The title.
    pub title: String,
    /// The text.
    pub body: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Replacement {
    title: String,
    body: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Patch {
    title: Option<String>,
    body: Option<String>,
}

fn valid_title(title: &str) -> bool {
    !title.trim().is_empty() && title.chars().count() <= MAX_TITLE
}

fn valid_body(body: &str) -> bool {
    body.len() <= MAX_BODY
}

fn invalid_body() -> Problem {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_body",
        "The body must be JSON with string fields title (1 to 200 characters) and body \
         (at most 10000 bytes).",
    )
}

fn replacement(body: &Bytes) -> Result<Replacement, Problem> {
    serde_json::from_slice::<Replacement>(body)
        .ok()
        .filter(|new| valid_title(&new.title) && valid_body(&new.body))
        .ok_or_else(invalid_body)
}

fn patch_of(body: &Bytes) -> Result<Patch, Problem> {
    serde_json::from_slice::<Patch>(body)
        .ok()
        .filter(|p| {
            p.title.as_deref().is_none_or(valid_title) && p.body.as_deref().is_none_or(valid_body)
        })
        .ok_or_else(invalid_body)
}

async fn connection(state: &AppState) -> Result<Object<AsyncConn>, Problem> {
    state.pool.get().await.map_err(|error| {
        tracing::warn!(%error, "no database connection");
        Problem::unavailable()
    })
}

fn with_etag(status: StatusCode, article: Article) -> Response {
    let json = ArticleJson {
        id: article.id,
        title: article.title,
        body: article.body,
    };
    (status, ETag::from_token(&article.version), Json(json)).into_response()
}

/// What [`read_check_write`] does once the header matched.
#[derive(Clone, Copy)]
enum Write<'a> {
    /// Edits the article, then saves it checked.
    Edit(&'a (dyn Fn(&mut Article) + Sync)),
    /// Deletes it, checked.
    Delete,
}

/// Reads the article, checks `If-Match` against its token (412 with its ETag), and
/// writes with that token; a write that lands in between is retried with a fresh read.
async fn read_check_write(
    state: &AppState,
    id: &str,
    if_match: &IfMatch,
    write: Write<'_>,
) -> Result<Article, Problem> {
    let policy = RetryPolicy::new();
    let outcome = asynchronous::retry(&state.pool, &policy, async |conn, attempt| {
        let mut article: Article = attempt.find(conn, id.to_owned()).await?;
        if let Err(failed) = if_match.check(&article.version) {
            return Ok(Err(failed));
        }
        match write {
            Write::Edit(edit) => {
                edit(&mut article);
                article.save_checked(conn).await?;
            }
            Write::Delete => article.delete_checked(conn).await?,
        }
        Ok(Ok(article))
    })
    .await;
    outcome.map_err(|error| if_match.problem(error))?
}

async fn create(State(state): State<AppState>, body: Bytes) -> Result<Response, Problem> {
    let new = replacement(&body)?;
    let article = Article {
        id: uuid::Uuid::new_v4().hyphenated().to_string(),
        title: new.title,
        body: new.body,
        version: UuidToken::initial(),
    };
    let mut conn = connection(&state).await?;
    diesel::insert_into(articles::table)
        .values(&article)
        .execute(&mut conn)
        .await
        .map_err(diesel_occ::Error::from)?;
    let location = format!("/articles/{}", article.id);
    let mut response = with_etag(StatusCode::CREATED, article);
    if let Ok(location) = location.parse() {
        response.headers_mut().insert(LOCATION, location);
    }
    Ok(response)
}

async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_none_match: IfNoneMatch,
) -> Result<Response, Problem> {
    let mut conn = connection(&state).await?;
    let article = Article::find(&mut conn, id).await?;
    let etag = ETag::from_token(&article.version);
    Ok(if_none_match.respond(etag, || with_etag(StatusCode::OK, article)))
}

async fn replace(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_match: IfMatch,
    body: Bytes,
) -> Result<Response, Problem> {
    let new = replacement(&body)?;
    let Some(token) = if_match.token::<UuidToken>() else {
        let edit = |article: &mut Article| {
            article.title.clone_from(&new.title);
            article.body.clone_from(&new.body);
        };
        let article = read_check_write(&state, &id, &if_match, Write::Edit(&edit)).await?;
        return Ok(with_etag(StatusCode::OK, article));
    };
    let mut conn = connection(&state).await?;
    let changes = (articles::title.eq(&new.title), articles::body.eq(&new.body));
    let version = Article::update_by_key(&mut conn, id.clone(), &token, changes)
        .await
        .map_err(|error| if_match.problem(error))?;
    let (title, body) = (new.title, new.body);
    Ok(with_etag(
        StatusCode::OK,
        Article {
            id,
            title,
            body,
            version,
        },
    ))
}

async fn patch(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_match: IfMatch,
    body: Bytes,
) -> Result<Response, Problem> {
    let patch = patch_of(&body)?;
    let edit = |article: &mut Article| {
        if let Some(title) = &patch.title {
            article.title.clone_from(title);
        }
        if let Some(body) = &patch.body {
            article.body.clone_from(body);
        }
    };
    let article = read_check_write(&state, &id, &if_match, Write::Edit(&edit)).await?;
    Ok(with_etag(StatusCode::OK, article))
}

async fn remove(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_match: IfMatch,
) -> Result<StatusCode, Problem> {
    let Some(token) = if_match.token::<UuidToken>() else {
        read_check_write(&state, &id, &if_match, Write::Delete).await?;
        return Ok(StatusCode::NO_CONTENT);
    };
    let mut conn = connection(&state).await?;
    Article::delete_by_key(&mut conn, id, &token)
        .await
        .map_err(|error| if_match.problem(error))?;
    Ok(StatusCode::NO_CONTENT)
}

async fn metrics() -> impl IntoResponse {
    let text = crate::metrics::prometheus().render();
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}
