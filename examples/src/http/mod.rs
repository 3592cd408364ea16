//! An axum CRUD service where the concurrency token is the ETag.
//!
//! | request | success | failures |
//! |---|---|---|
//! | `POST /articles` `{"title","body"}` | 201, `Location`, `ETag` | 422 |
//! | `GET /articles/{id}` | 200, `ETag: "<token>"` | 404 |
//! | `PUT /articles/{id}` `{"title","body"}` + `If-Match` | 200, new `ETag` | 428, 400, 412, 404, 409, 422 |
//! | `PATCH /articles/{id}` `{"title"?,"body"?}` + `If-Match` | 200, new `ETag` | same |
//! | `DELETE /articles/{id}` + `If-Match` | 204 | 428, 400, 412, 404, 409 |
//!
//! - No `If-Match` (or `If-Match: *`, which names no version): **428**. A write never
//!   runs without a token.
//! - A header that is not a list of entity-tags, or a tag that is not a token this
//!   service issued: **400**. Only weak tags: **412** (strong comparison).
//! - A token already stale when the request arrives: **412**, checked before the edit.
//! - The row changed between that check and the save (the predicate matched no row):
//!   **409**, with a body telling the client to re-read.
//! - The row is gone (before or during the request): **404**.
//! - Database failures: **500** `{"error":"internal"}`; the driver's text is only logged.
//!
//! The database work runs on diesel-async connections from a deadpool pool, through
//! diesel-occ's async API (see [`store`]).

pub mod client;
pub mod etag;
pub mod store;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header::{ETAG, IF_MATCH, LOCATION};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use diesel_occ::UuidToken;
use serde::{Deserialize, Serialize};

use self::etag::{Precondition, etag, precondition};
pub use self::store::{Article, ArticleStore, BeforeSave, StoreError};

/// Longest title accepted.
pub const MAX_TITLE: usize = 200;
/// Longest body accepted, in bytes.
pub const MAX_BODY: usize = 10_000;

/// The service's routes over a store.
pub fn router(store: ArticleStore) -> Router {
    Router::new()
        .route("/articles", post(create))
        .route(
            "/articles/{id}",
            get(read).put(replace).patch(patch).delete(remove),
        )
        .with_state(Arc::new(store))
}

/// Serves the routes on `listener` until the future is dropped or the server fails.
pub async fn serve(listener: tokio::net::TcpListener, store: ArticleStore) -> std::io::Result<()> {
    axum::serve(listener, router(store)).await
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

/// Every error response: a status and a JSON body `{"error": code, "message": text}`
/// written here, never taken from a database or driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiError {
    /// 428: a write without `If-Match`.
    PreconditionRequired,
    /// 400: `If-Match` is not a list of this service's ETags.
    MalformedIfMatch,
    /// 412: the ETag is stale (or only weak tags were sent).
    PreconditionFailed,
    /// 409: the row changed between the precondition check and the save.
    Conflict,
    /// 404: no such article.
    NotFound,
    /// 422: the JSON body is not what the route expects.
    InvalidBody,
    /// 503: no database connection could be had.
    Unavailable,
    /// 500: anything else; details are in the server's log only.
    Internal,
}

impl ApiError {
    /// The status, the code and the message.
    pub fn parts(self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ApiError::PreconditionRequired => (
                StatusCode::PRECONDITION_REQUIRED,
                "precondition_required",
                "This write needs an If-Match header with the ETag of the article, from a GET.",
            ),
            ApiError::MalformedIfMatch => (
                StatusCode::BAD_REQUEST,
                "malformed_if_match",
                "If-Match must hold the ETag of the article as returned by GET, quotes included.",
            ),
            ApiError::PreconditionFailed => (
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "The article changed since you read it. GET it again and retry with the new ETag.",
            ),
            ApiError::Conflict => (
                StatusCode::CONFLICT,
                "conflict",
                "The article was changed by someone else while your write was being saved; \
                 nothing was written. GET it again, re-apply your change and retry with the new ETag.",
            ),
            ApiError::NotFound => (StatusCode::NOT_FOUND, "not_found", "No such article."),
            ApiError::InvalidBody => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                "The body must be JSON with string fields title (1 to 200 characters) and body \
                 (at most 10000 bytes).",
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The service is busy. Retry shortly.",
            ),
            ApiError::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error.",
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message) = self.parts();
        let body = serde_json::json!({ "error": code, "message": message });
        (status, axum::Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound | StoreError::Deleted => ApiError::NotFound,
            StoreError::PreconditionFailed { .. } => ApiError::PreconditionFailed,
            StoreError::Conflict { .. } => ApiError::Conflict,
            StoreError::Unavailable => ApiError::Unavailable,
            StoreError::Internal => ApiError::Internal,
        }
    }
}

type Store = State<Arc<ArticleStore>>;

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

fn valid_title(title: &str) -> bool {
    !title.trim().is_empty() && title.chars().count() <= MAX_TITLE
}

fn valid_body(body: &str) -> bool {
    body.len() <= MAX_BODY
}

async fn create(State(store): Store, body: Bytes) -> Result<Response, ApiError> {
    let new: Replacement = serde_json::from_slice(&body).map_err(|_| ApiError::InvalidBody)?;
    if !valid_title(&new.title) || !valid_body(&new.body) {
        return Err(ApiError::InvalidBody);
    }
    let article = store.create(new.title, new.body).await?;
    let location = HeaderValue::from_str(&format!("/articles/{}", article.id))
        .expect("a UUID path is a valid header");
    let mut response = with_etag(StatusCode::CREATED, article);
    response.headers_mut().insert(LOCATION, location);
    Ok(response)
}

async fn read(State(store): Store, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(with_etag(StatusCode::OK, store.get(&id).await?))
}

async fn replace(
    State(store): Store,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let expected = expected_tokens(&headers)?;
    let new: Replacement = serde_json::from_slice(&body).map_err(|_| ApiError::InvalidBody)?;
    if !valid_title(&new.title) || !valid_body(&new.body) {
        return Err(ApiError::InvalidBody);
    }
    let article = store
        .update(&id, &expected, |article| {
            article.title = new.title;
            article.body = new.body;
        })
        .await?;
    Ok(with_etag(StatusCode::OK, article))
}

async fn patch(
    State(store): Store,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let expected = expected_tokens(&headers)?;
    let patch: Patch = serde_json::from_slice(&body).map_err(|_| ApiError::InvalidBody)?;
    if !patch.title.as_deref().is_none_or(valid_title)
        || !patch.body.as_deref().is_none_or(valid_body)
    {
        return Err(ApiError::InvalidBody);
    }
    let article = store
        .update(&id, &expected, |article| {
            if let Some(title) = patch.title {
                article.title = title;
            }
            if let Some(body) = patch.body {
                article.body = body;
            }
        })
        .await?;
    Ok(with_etag(StatusCode::OK, article))
}

async fn remove(
    State(store): Store,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let expected = expected_tokens(&headers)?;
    store.delete(&id, &expected).await?;
    Ok(StatusCode::NO_CONTENT)
}
