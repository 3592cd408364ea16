//! The service under load: the example app's router plus the benchmark's unconditional
//! route, on its own runtime, over the app's pool whose connections count their
//! statements.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::ETAG;
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use diesel::prelude::*;
use diesel_async::AsyncConnection;
use diesel_occ::statement::CachedUpdate;
use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_axum::ETag;
use diesel_occ_examples::postgres::http::{ArticleJson, MAX_BODY, MAX_TITLE};
use diesel_occ_examples::postgres::{self as app, AsyncConn, AsyncPool};
use diesel_occ_examples::schema::articles;

use diesel_occ_bench::async_support::count_statements;
use diesel_occ_bench::harness;

/// The service, running on its own runtime until dropped.
pub(crate) struct Service {
    /// `127.0.0.1:port`.
    pub(crate) addr: String,
    pub(crate) pool: AsyncPool,
    pub(crate) runtime: tokio::runtime::Runtime,
    /// Statements the pool's connections started.
    statements: Arc<AtomicU64>,
}

impl Service {
    /// The app's router plus the benchmark's unconditional route, on 127.0.0.1, over the
    /// app's pool (`async_pool_with` the app's manager settings) of `connections`
    /// connections.
    pub(crate) fn start(url: &str, connections: usize) -> Result<Service, String> {
        // One worker thread per core.
        let runtime = harness::runtime(usize::MAX)?;
        let statements = Arc::new(AtomicU64::new(0));
        let mut config = app::async_manager_config();
        let counter = Arc::clone(&statements);
        config.custom_setup = Box::new(move |url| {
            let (url, counter) = (url.to_owned(), Arc::clone(&counter));
            Box::pin(async move {
                let mut conn = AsyncConn::establish(&url).await?;
                count_statements(&mut conn, &counter);
                Ok(conn)
            })
        });
        let pool = app::async_pool_with(url, connections, config).map_err(|e| e.to_string())?;
        let router: Router = app::http::router(pool.clone()).merge(bench_routes(pool.clone()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| e.to_string())?;
        let addr = listener
            .local_addr()
            .map_err(|e| e.to_string())?
            .to_string();
        runtime.spawn(async move { axum::serve(listener, router).await });
        Ok(Service {
            addr,
            pool,
            runtime,
            statements,
        })
    }

    /// Statements the pool's connections have started so far.
    pub(crate) fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }
}

/// `PUT /bench/articles/{id}`: the unconditional write, for this benchmark only (the
/// example app itself refuses a write without `If-Match`). It does what the app's PUT
/// does (parse, validate, one UPDATE with a fresh token, the new ETag) without the
/// token in the UPDATE's `WHERE`.
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
    match unconditional_update(&mut conn, &id, &new.title, &new.body, version).await {
        Ok(1) => {
            let tag = ETag::from_token(&version).to_header_value();
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

/// One UPDATE by key, no token in its `WHERE`, a fresh token written. Prepared once
/// per connection (`CachedUpdate`), as diesel-occ's statements are, so that it differs
/// from `update_by_key`'s by the predicate alone.
pub(crate) async fn unconditional_update(
    conn: &mut AsyncConn,
    id: &str,
    title: &str,
    body: &str,
    version: UuidToken,
) -> QueryResult<usize> {
    let statement = CachedUpdate::new(
        articles::table.find(id.to_owned()),
        (
            articles::title.eq(title),
            articles::body.eq(body),
            articles::version.eq(version),
        ),
    );
    diesel_async::RunQueryDsl::execute(statement, conn).await
}
