//! An axum CRUD service where the concurrency token is the ETag.
//!
//! | request | success | failures |
//! |---|---|---|
//! | `POST /articles` `{"title","body"}` | 201, `Location`, `ETag` | 422 |
//! | `GET /articles/{id}` | 200, `ETag: "<token>"` | 404 |
//! | `PUT /articles/{id}` `{"title","body"}` + `If-Match` | 200, new `ETag` | 428, 400, 412, 404, 422 |
//! | `PATCH /articles/{id}` `{"title"?,"body"?}` + `If-Match` | 200, new `ETag` | same, and 409 |
//! | `DELETE /articles/{id}` + `If-Match` | 204 | 428, 400, 412, 404 |
//!
//! - No `If-Match` (or `If-Match: *`, which names no version): **428**. A write never
//!   runs without a token.
//! - A header that is not a list of entity-tags, or a tag that is not a token this
//!   service issued: **400**. Only weak tags: **412** (strong comparison).
//! - PUT and DELETE are one conditional statement each, without reading the row first
//!   ([`update_by_key`](CheckedDsl::update_by_key),
//!   [`delete_by_key`](CheckedDsl::delete_by_key)): the write itself checks the token,
//!   so a stale token, or another write that committed first, is **412**.
//! - PATCH reads the row to apply a partial change: a token already stale when the
//!   request arrives is **412**, checked before the edit; a write that commits between
//!   that check and the save (the save's predicate matches no row) is **409**, with a
//!   body telling the client to re-read.
//! - The row is gone (before or during the request): **404**.
//! - Database failures: **500** `{"error":"internal"}`; the driver's text is only logged.
//!
//! The handlers take an async connection from the deadpool pool in [`AppState`] and use
//! diesel-occ's async API (`use diesel_occ::asynchronous::prelude::*`). The backend
//! modules' `async_pool` sets that pool up as diesel-occ's async module recommends (the
//! most recently returned connection first; on PostgreSQL and SQLite no `SELECT 1` at
//! checkout), so that a PUT is one statement on the server and a PATCH two.

pub mod client;
mod error;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header::{ETAG, IF_MATCH, LOCATION};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_async::pooled_connection::deadpool::Object;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::{UuidToken, VersionToken};
use serde::{Deserialize, Serialize};

pub use self::error::ApiError;
use super::{AsyncConn, AsyncPool};
use crate::etag::{Precondition, etag, precondition};
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

/// The service's routes.
pub fn router(pool: AsyncPool) -> Router {
    Router::new()
        .route("/articles", post(create))
        .route(
            "/articles/{id}",
            get(read).put(replace).patch(patch).delete(remove),
        )
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

impl Replacement {
    fn is_valid(&self) -> bool {
        valid_title(&self.title) && valid_body(&self.body)
    }
}

impl Patch {
    fn is_valid(&self) -> bool {
        self.title.as_deref().is_none_or(valid_title) && self.body.as_deref().is_none_or(valid_body)
    }
}

fn valid_title(title: &str) -> bool {
    !title.trim().is_empty() && title.chars().count() <= MAX_TITLE
}

fn valid_body(body: &str) -> bool {
    body.len() <= MAX_BODY
}

fn json<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|_| ApiError::InvalidBody)
}

async fn connection(state: &AppState) -> Result<Object<AsyncConn>, ApiError> {
    state.pool.get().await.map_err(|_| ApiError::Unavailable)
}

fn with_etag(status: StatusCode, article: Article) -> Response {
    let tag =
        HeaderValue::from_str(&etag(&article.version)).expect("a UUID ETag is a valid header");
    let json = ArticleJson {
        id: article.id,
        title: article.title,
        body: article.body,
    };
    (status, [(ETAG, tag)], axum::Json(json)).into_response()
}

/// The tokens a write may match, from its `If-Match` headers.
fn expected_tokens(headers: &HeaderMap) -> Result<Vec<UuidToken>, ApiError> {
    let mut values = Vec::new();
    for value in headers.get_all(IF_MATCH) {
        values.push(value.to_str().map_err(|_| ApiError::MalformedIfMatch)?);
    }
    match precondition::<UuidToken>(values) {
        Precondition::Missing => Err(ApiError::PreconditionRequired),
        Precondition::Malformed(_) => Err(ApiError::MalformedIfMatch),
        Precondition::NeverMatches => Err(ApiError::PreconditionFailed),
        Precondition::Tokens(tokens) => Ok(tokens),
    }
}

/// The one token a PUT or DELETE is conditional on: the `If-Match` tag, or for a list of
/// tags, the one the row holds now (412 when it holds none of them).
async fn expected_token(
    conn: &mut AsyncConn,
    id: &str,
    expected: Vec<UuidToken>,
) -> Result<UuidToken, ApiError> {
    if let [one] = expected.as_slice() {
        return Ok(*one);
    }
    let article = load_matching(conn, id.to_owned(), &expected).await?;
    Ok(article.version)
}

/// Loads the article for a client holding one of `expected`: 412 when it holds none.
async fn load_matching(
    conn: &mut AsyncConn,
    id: String,
    expected: &[UuidToken],
) -> Result<Article, ApiError> {
    if let [one] = expected {
        return Article::find_checked(conn, id, one)
            .await
            .map_err(ApiError::precondition);
    }
    let article = Article::find(conn, id)
        .await
        .map_err(ApiError::precondition)?;
    if !expected.contains(&article.version) {
        return Err(ApiError::PreconditionFailed);
    }
    Ok(article)
}

async fn create(State(state): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let new: Replacement = json(&body)?;
    if !new.is_valid() {
        return Err(ApiError::InvalidBody);
    }
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
        .map_err(ApiError::other)?;
    let location = HeaderValue::from_str(&format!("/articles/{}", article.id))
        .expect("a UUID path is a valid header");
    let mut response = with_etag(StatusCode::CREATED, article);
    response.headers_mut().insert(LOCATION, location);
    Ok(response)
}

async fn read(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let mut conn = connection(&state).await?;
    let article = Article::find(&mut conn, id)
        .await
        .map_err(ApiError::precondition)?;
    Ok(with_etag(StatusCode::OK, article))
}

async fn replace(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let expected = expected_tokens(&headers)?;
    let new: Replacement = json(&body)?;
    if !new.is_valid() {
        return Err(ApiError::InvalidBody);
    }
    let mut conn = connection(&state).await?;
    let token = expected_token(&mut conn, &id, expected).await?;
    let changes = (articles::title.eq(&new.title), articles::body.eq(&new.body));
    let version = Article::update_by_key(&mut conn, id.clone(), &token, changes)
        .await
        .map_err(ApiError::precondition)?;
    let article = Article {
        id,
        title: new.title,
        body: new.body,
        version,
    };
    Ok(with_etag(StatusCode::OK, article))
}

async fn patch(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let expected = expected_tokens(&headers)?;
    let patch: Patch = json(&body)?;
    if !patch.is_valid() {
        return Err(ApiError::InvalidBody);
    }
    let mut conn = connection(&state).await?;
    // Checked before the edit: a stale ETag is 412. A write that commits between this
    // read and the save makes the save's predicate match no row: 409.
    let mut article = load_matching(&mut conn, id, &expected).await?;
    if let Some(title) = patch.title {
        article.title = title;
    }
    if let Some(body) = patch.body {
        article.body = body;
    }
    article
        .save_checked(&mut conn)
        .await
        .map_err(ApiError::at_save)?;
    Ok(with_etag(StatusCode::OK, article))
}

async fn remove(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let expected = expected_tokens(&headers)?;
    let mut conn = connection(&state).await?;
    let token = expected_token(&mut conn, &id, expected).await?;
    Article::delete_by_key(&mut conn, id, &token)
        .await
        .map_err(ApiError::precondition)?;
    Ok(StatusCode::NO_CONTENT)
}
