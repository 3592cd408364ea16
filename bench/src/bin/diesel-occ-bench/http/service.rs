//! The service under load: the example app's router plus the benchmark's unconditional
//! route, on its own runtime, over the app's pool with a probe on each connection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::ETAG;
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel::prelude::*;
use diesel_async::AsyncConnection;
use diesel_occ::statement::CachedUpdate;
use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_axum::ETag;
use diesel_occ_examples::postgres::http::{ArticleJson, MAX_BODY, MAX_TITLE};
use diesel_occ_examples::postgres::{self as app, AsyncConn, AsyncPool};
use diesel_occ_examples::schema::articles;

use diesel_occ_bench::cpu::SERVICE_THREADS;

/// What the service's connections did: statements run, the time from sending each to
/// its result, and the server processes behind them (for their CPU time).
#[derive(Debug, Default)]
pub(crate) struct Probe {
    statements: AtomicU64,
    statement_nanos: AtomicU64,
    backends: Mutex<Vec<u32>>,
}

/// The probe's counters at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counted {
    pub(crate) statements: u64,
    pub(crate) statement_nanos: u64,
}

impl Probe {
    pub(crate) fn counted(&self) -> Counted {
        Counted {
            statements: self.statements.load(Ordering::Relaxed),
            statement_nanos: self.statement_nanos.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn backends(&self) -> Vec<u32> {
        self.backends.lock().expect("no panic holds it").clone()
    }
}

/// Diesel's instrumentation on one connection: counts each statement and its time.
struct Timing {
    probe: Arc<Probe>,
    started: Option<Instant>,
}

impl Instrumentation for Timing {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        match event {
            InstrumentationEvent::StartQuery { .. } => self.started = Some(Instant::now()),
            InstrumentationEvent::FinishQuery { .. } => {
                if let Some(started) = self.started.take() {
                    let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    self.probe.statements.fetch_add(1, Ordering::Relaxed);
                    self.probe
                        .statement_nanos
                        .fetch_add(nanos, Ordering::Relaxed);
                }
            }
            _ => {}
        }
    }
}

/// The service, running on its own runtime until dropped.
pub(crate) struct Service {
    /// `127.0.0.1:port`.
    pub(crate) addr: String,
    pub(crate) pool: AsyncPool,
    pub(crate) probe: Arc<Probe>,
    pub(crate) runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// The app's router plus the benchmark's unconditional route, on 127.0.0.1, over the
    /// app's pool (`async_pool_with` the app's manager settings) of `connections`
    /// connections.
    pub(crate) fn start(url: &str, connections: usize) -> Result<Service, String> {
        let threads = std::thread::available_parallelism().map_or(2, usize::from);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name(SERVICE_THREADS)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let probe = Arc::new(Probe::default());
        let mut config = app::async_manager_config();
        let setup_probe = Arc::clone(&probe);
        config.custom_setup = Box::new(move |url| {
            let (url, probe) = (url.to_owned(), Arc::clone(&setup_probe));
            Box::pin(async move {
                let mut conn = AsyncConn::establish(&url).await?;
                let setup = diesel::ConnectionError::CouldntSetupConfiguration;
                let pid = diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>(
                    "pg_backend_pid()",
                ));
                let pid: i32 = diesel_async::RunQueryDsl::get_result(pid, &mut conn)
                    .await
                    .map_err(setup)?;
                probe
                    .backends
                    .lock()
                    .expect("no panic holds it")
                    .extend(u32::try_from(pid).ok());
                conn.set_instrumentation(Timing {
                    probe,
                    started: None,
                });
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
            probe,
            runtime,
        })
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
