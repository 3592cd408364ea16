//! The README's resource, compiled and driven through a router. The code between the
//! markers is the README's `rust` block, character for character
//! (`the_readme_shows_this_code` checks it), so the README stays plain Markdown without
//! hidden lines while every line of it compiles.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use diesel_async::SimpleAsyncConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::Pool;
use tower::ServiceExt;

/// The user's connection type (an `AsyncPgConnection` in a service on PostgreSQL).
type Conn =
    diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::sqlite::SqliteConnection>;

/// The user's `schema.rs`.
mod schema {
    diesel::table! {
        jobs (id) {
            id -> Integer,
            status -> Text,
            version -> Integer,
        }
    }
}

/// The README's code: a user's service module, whose items the README shows `pub`.
#[rustfmt::skip]
#[allow(unreachable_pub, missing_debug_implementations)]
mod readme {
// README: begin
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use diesel::prelude::*;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::NotFound;
use diesel_occ_axum::{ETag, Preconditions, Problem, Validators};

use crate::{Conn, schema::jobs};

#[derive(Queryable, Selectable, Versioned)]
#[diesel(table_name = jobs)]
pub struct Job {
    pub id: i32,
    pub status: String,
    #[occ(version)]
    pub version: i32,
}

/// GET: 200 with the ETag, or 304 when the client holds this version.
async fn show(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let job = Job::find(&mut pool.get().await?, id).await?;
    Ok(preconditions.respond(Validators::of(&job.version), || Json(job.status)))
}

/// PUT with If-Match: the write lands only on the version the client names.
async fn set_status(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(status): Json<String>,
) -> Result<ETag, Problem> {
    let version = preconditions
        .write_async(
            &pool,
            &RetryPolicy::new(),
            async |conn, attempt| attempt.find::<Job>(conn, id).await,
            async |conn, job: Option<Job>| {
                let mut job = job.ok_or_else(|| NotFound::of::<Job>(&id))?;
                job.status.clone_from(&status);
                job.save_checked(conn).await?;
                Ok(job.version)
            },
        )
        .await?;
    Ok(ETag::from_token(&version))
}

pub fn router(pool: Pool<Conn>) -> Router {
    Router::new()
        .route("/jobs/{id}", get(show).put(set_status))
        .with_state(pool)
}
// README: end
}

const BEGIN: &str = "// README: begin\n";
const END: &str = "// README: end\n";

#[test]
fn the_readme_shows_this_code() {
    let readme = include_str!("../README.md");
    let this = include_str!("readme.rs");
    let shown = readme
        .split_once("```rust\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .map(|(code, _)| code)
        .expect("a rust block in the README");
    let (_, rest) = this.split_once(BEGIN).expect("the begin marker");
    let (compiled, _) = rest.split_once(END).expect("the end marker");
    assert_eq!(shown, compiled, "the README's block and this file's differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_resource_answers_as_the_readme_says() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let url = file.path().to_str().unwrap().to_owned();
    let pool = Pool::builder(AsyncDieselConnectionManager::<Conn>::new(url))
        .max_size(2)
        .build()
        .unwrap();
    pool.get()
        .await
        .unwrap()
        .batch_execute(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL);
             INSERT INTO jobs VALUES (1, 'queued', 3);",
        )
        .await
        .unwrap();
    let app = readme::router(pool);
    let send = |method: &str, headers: &[(&str, &str)], body: &str| {
        let mut request = Request::builder().method(method).uri("/jobs/1");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .header("content-type", "application/json")
            .body(Body::from(body.to_owned()))
            .unwrap();
        app.clone().oneshot(request)
    };
    let seen = |response: &axum::response::Response| {
        let etag = response
            .headers()
            .get("etag")
            .map(|v| v.to_str().unwrap().to_owned());
        (response.status(), etag)
    };
    let read = send("GET", &[], "").await.unwrap();
    assert_eq!(seen(&read), (StatusCode::OK, Some("\"3\"".into())));
    let cached = send("GET", &[("if-none-match", "\"3\"")], "")
        .await
        .unwrap();
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
    let put = send("PUT", &[("if-match", "\"3\"")], "\"running\"")
        .await
        .unwrap();
    assert_eq!(seen(&put), (StatusCode::OK, Some("\"4\"".into())));
    let stale = send("PUT", &[("if-match", "\"3\"")], "\"done\"")
        .await
        .unwrap();
    assert_eq!(
        seen(&stale),
        (StatusCode::PRECONDITION_FAILED, Some("\"4\"".into()))
    );
    let bare = send("PUT", &[], "\"done\"").await.unwrap();
    assert_eq!(bare.status(), StatusCode::PRECONDITION_REQUIRED);
    let malformed = send("PUT", &[("if-match", "4")], "\"done\"").await.unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
}
