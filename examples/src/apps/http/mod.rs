//! An axum CRUD service where the concurrency token is the ETag, on `diesel-occ-axum`
//! (RFC 9110 conditional requests, RFC 9457 problem responses).
//!
//! | request | success | failures |
//! |---|---|---|
//! | `POST /articles` `{"title","body"}` | 201, `Location`, `ETag` | 400, 415, 422 |
//! | `GET`/`HEAD /articles/{id}` (+ `If-None-Match`, `If-Match`) | 200 with `ETag`; 304 when it matches (weak comparison, `*`) | 404, 400, 412 |
//! | `PUT /articles/{id}` `{"title","body"}` + `If-Match` | 200, new `ETag` | 428, 400, 412 + current `ETag`, 404, 409, 422 |
//! | `PATCH /articles/{id}` `{"title"?,"body"?}` + `If-Match` | 200, new `ETag` | same |
//! | `DELETE /articles/{id}` + `If-Match` | 204 | 428, 400, 412 + current `ETag`, 404, 409 |
//! | `GET /metrics` | 200, diesel-occ's counters and histograms for Prometheus | |
//!
//! The statuses are diesel-occ-axum's (its README has the conformance table). A `PUT`
//! or `DELETE` whose `If-Match` is one ETag ([`Preconditions::token`]) is one
//! conditional statement (`update_by_key`, `delete_by_key`): the write checks the token
//! itself. Every other write is one call of [`Preconditions::write_async`]: it reads the
//! article, evaluates `If-Match` (a list or `*`) against its token, and writes with that
//! token, inside the retry helper, so the check and the write see one version: a write
//! that commits in between is retried, and the re-read answers 412 to a tag that went
//! stale (`*` retries until the policy gives up: 409). A create is `insert_checked_from`
//! with the request's form; a `PATCH` is `update_by_key` with a `ChangesetColumns` form,
//! so it sets only the fields sent. Every read and write goes through one
//! [`AsyncRepository`] of articles.

pub mod client;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_TYPE, LOCATION};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use diesel::prelude::*;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::{ChangesetColumns, NotFound, UuidToken};
use diesel_occ_axum::{Preconditions, Problem, Validators};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{AsyncConn, AsyncPool};
use crate::repository::AsyncRepository;
use crate::schema::articles;

/// Every handler reads and writes articles through this repository.
const ARTICLES: AsyncRepository<Article> = AsyncRepository::new();

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

/// The body of a `POST` or `PUT`: the whole article.
#[derive(Debug, Deserialize, AsChangeset, ChangesetColumns)]
#[diesel(table_name = articles)]
#[serde(deny_unknown_fields)]
struct Replacement {
    title: String,
    body: String,
}

/// A new article: the `POST` body with the id the service assigns, and no token, which
/// the repository's create adds.
#[derive(Debug, Insertable)]
#[diesel(table_name = articles)]
struct NewArticle<'a> {
    id: &'a str,
    title: &'a str,
    body: &'a str,
}

/// The body of a `PATCH`: the fields to set; absent ones are left alone.
#[derive(Debug, Clone, Deserialize, AsChangeset, ChangesetColumns)]
#[diesel(table_name = articles)]
#[serde(deny_unknown_fields)]
struct ArticlePatch {
    title: Option<String>,
    body: Option<String>,
}

/// A valid body, or 422.
trait Valid: Sized {
    fn is_valid(&self) -> bool;

    fn valid(self) -> Result<Self, Problem> {
        if self.is_valid() {
            Ok(self)
        } else {
            Err(invalid_body())
        }
    }
}

fn valid_title(title: &str) -> bool {
    !title.trim().is_empty() && title.chars().count() <= MAX_TITLE
}

fn valid_body(body: &str) -> bool {
    body.len() <= MAX_BODY
}

impl Valid for Replacement {
    fn is_valid(&self) -> bool {
        valid_title(&self.title) && valid_body(&self.body)
    }
}

impl Valid for ArticlePatch {
    fn is_valid(&self) -> bool {
        self.title.as_deref().is_none_or(valid_title) && self.body.as_deref().is_none_or(valid_body)
    }
}

fn invalid_body() -> Problem {
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_body",
        "The body must be JSON with string fields title (1 to 200 characters) and body \
         (at most 10000 bytes).",
    )
}

/// A JSON body whose rejection is a problem document: 415 without
/// `Content-Type: application/json`, 400 when it is not JSON, 422 when it is JSON of
/// another shape or fails validation.
#[derive(Debug)]
struct Body<T>(T);

impl<S: Send + Sync, T: DeserializeOwned + Valid> FromRequest<S> for Body<T> {
    type Rejection = Problem;

    async fn from_request(request: Request, state: &S) -> Result<Self, Problem> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(Body(value.valid()?)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the body as JSON, with Content-Type: application/json.",
            )),
            Err(JsonRejection::JsonSyntaxError(_)) => Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "malformed_body",
                "The body is not JSON.",
            )),
            Err(_) => Err(invalid_body()),
        }
    }
}

/// The article and its validators, as `GET` and every write answer them.
fn representation(status: StatusCode, article: Article) -> Response {
    let validators = Validators::of(&article.version);
    (status, validators, Json(json(article))).into_response()
}

fn json(article: Article) -> ArticleJson {
    ArticleJson {
        id: article.id,
        title: article.title,
        body: article.body,
    }
}

/// The article as the retry helper's attempt reads it (locking on an escalated one).
async fn find(
    conn: &mut AsyncConn,
    attempt: Attempt,
    id: &str,
) -> Result<Article, diesel_occ::Error> {
    ARTICLES.get_within(&attempt, conn, id.to_owned()).await
}

async fn create(
    State(state): State<AppState>,
    Body(new): Body<Replacement>,
) -> Result<Response, Problem> {
    let id = uuid::Uuid::new_v4().hyphenated().to_string();
    let form = NewArticle {
        id: &id,
        title: &new.title,
        body: &new.body,
    };
    let version = ARTICLES
        .create_from(&mut state.pool.get().await?, form)
        .await?;
    let article = Article {
        id,
        title: new.title,
        body: new.body,
        version,
    };
    let location = format!("/articles/{}", article.id);
    let mut response = representation(StatusCode::CREATED, article);
    if let Ok(location) = location.parse() {
        response.headers_mut().insert(LOCATION, location);
    }
    Ok(response)
}

async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let article = ARTICLES.get(&mut state.pool.get().await?, id).await?;
    let validators = Validators::of(&article.version);
    Ok(preconditions.respond(validators, || Json(json(article))))
}

async fn replace(
    State(state): State<AppState>,
    Path(id): Path<String>,
    preconditions: Preconditions,
    Body(new): Body<Replacement>,
) -> Result<Response, Problem> {
    // `If-Match: "<one tag>"`: one UPDATE … WHERE id = ? AND version = <tag>, no read.
    if let Some(token) = preconditions.token::<UuidToken>() {
        let mut conn = state.pool.get().await?;
        let version = ARTICLES.update(&mut conn, id.clone(), &token, &new).await?;
        let (title, body) = (new.title, new.body);
        let article = Article {
            id,
            title,
            body,
            version,
        };
        return Ok(representation(StatusCode::OK, article));
    }
    let article = preconditions
        .write_async(
            &state.pool,
            &RetryPolicy::new(),
            async |conn, attempt| find(conn, attempt, &id).await,
            async |conn, current: Option<Article>| {
                let mut article = current.ok_or_else(|| NotFound::of::<Article>(&id))?;
                article.title.clone_from(&new.title);
                article.body.clone_from(&new.body);
                ARTICLES.save(conn, &mut article).await?;
                Ok(article)
            },
        )
        .await?;
    Ok(representation(StatusCode::OK, article))
}

async fn patch(
    State(state): State<AppState>,
    Path(id): Path<String>,
    preconditions: Preconditions,
    Body(form): Body<ArticlePatch>,
) -> Result<Response, Problem> {
    let article = preconditions
        .write_async(
            &state.pool,
            &RetryPolicy::new(),
            async |conn, attempt| find(conn, attempt, &id).await,
            async |conn, current: Option<Article>| {
                let mut article = current.ok_or_else(|| NotFound::of::<Article>(&id))?;
                let key = article.id.clone();
                article.version = ARTICLES
                    .update(conn, key, &article.version, form.clone())
                    .await?;
                if let Some(title) = &form.title {
                    article.title.clone_from(title);
                }
                if let Some(body) = &form.body {
                    article.body.clone_from(body);
                }
                Ok(article)
            },
        )
        .await?;
    Ok(representation(StatusCode::OK, article))
}

async fn remove(
    State(state): State<AppState>,
    Path(id): Path<String>,
    preconditions: Preconditions,
) -> Result<StatusCode, Problem> {
    // `If-Match: "<one tag>"`: one DELETE … WHERE id = ? AND version = <tag>, no read.
    if let Some(token) = preconditions.token::<UuidToken>() {
        ARTICLES
            .delete(&mut state.pool.get().await?, id, &token)
            .await?;
        return Ok(StatusCode::NO_CONTENT);
    }
    preconditions
        .write_async(
            &state.pool,
            &RetryPolicy::new(),
            async |conn, attempt| find(conn, attempt, &id).await,
            async |conn, current: Option<Article>| {
                let article = current.ok_or_else(|| NotFound::of::<Article>(&id))?;
                ARTICLES.remove(conn, &article).await
            },
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn metrics() -> impl IntoResponse {
    let text = crate::metrics::prometheus().render();
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}
