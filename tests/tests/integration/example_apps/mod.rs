//! The example apps (`examples/`), on every backend: each test runs the code an app runs
//! (`diesel_occ_examples::<backend>::<app>`, `app_backend` here), against a fresh
//! database (or SQLite file) from `app_db!`, with the app's own pool on it. A test's path
//! names the backend, the app and the scenario:
//!
//! ```text
//! example_apps::postgres::inventory::race_at_save_is_detected_by_the_predicate
//! example_apps::sqlite::http::two_puts_with_the_same_etag_exactly_one_succeeds
//! ```
//!
//! Races are forced with barriers (`diesel_occ::testing::Race`, or the apps' own
//! barriers), or, for the HTTP service, with a row lock held until every request has
//! reported its write; never left to timing.

/// Asserts that `$value` matches the pattern (and its guard), showing the value when it
/// does not, after the message given or else the pattern. The value is matched by
/// reference.
macro_rules! assert_matches {
    ($value:expr, $pattern:pat $(if $guard:expr)?) => {
        assert_matches!($value, $pattern $(if $guard)?, "expected {}", stringify!($pattern))
    };
    ($value:expr, $pattern:pat $(if $guard:expr)?, $($message:tt)+) => {
        match &$value {
            $pattern $(if $guard)? => {}
            other => panic!("{}: got {other:?}", format_args!($($message)+)),
        }
    };
}

/// Asserts that what an app's walkthrough wrote to `out` tells every line `expected`.
fn assert_told(out: Vec<u8>, expected: &[&str]) {
    let out = String::from_utf8(out).unwrap();
    for expected in expected {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}

on_every_app_backend!(claims, http, inventory, seat, tracked);

/// The HTTP app's pool on PostgreSQL (`postgres::async_pool`, built by `async_pool_with`
/// from `async_manager_config`) runs nothing at checkout: a PUT with one ETag reaches
/// the server as one statement, a PATCH as two (the read and the checked write of
/// `Preconditions::write_async`). With diesel-async's default (`SELECT 1` at every
/// checkout) they were two and three.
mod http_pool {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use diesel::connection::InstrumentationEvent;
    use diesel::pg::PgConnection as Conn;
    use diesel_async::AsyncConnection;
    use diesel_occ_examples::postgres::{self as app_backend, AsyncConn, http};
    use reqwest::header::IF_MATCH;
    use reqwest::{Client, Method, StatusCode};
    use serde_json::json;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_is_one_statement_and_a_patch_two() {
        let db = test_db!();
        app_backend::migrate(db.url()).expect("migrate the example tables");
        let statements = Arc::new(AtomicUsize::new(0));
        let mut config = app_backend::async_manager_config();
        let counted = Arc::clone(&statements);
        config.custom_setup = Box::new(move |url| {
            let (url, counted) = (url.to_owned(), Arc::clone(&counted));
            Box::pin(async move {
                let mut conn = AsyncConn::establish(&url).await?;
                conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
                    if let InstrumentationEvent::StartQuery { .. } = event {
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                });
                Ok(conn)
            })
        });
        let pool = app_backend::async_pool_with(db.url(), 2, config).expect("an async pool");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(http::serve(listener, pool));
        let client = Client::new();
        let body = json!({"title": "Draft", "body": "First version."});
        let request = async |method, url: &str, tag: Option<&str>| {
            let headers: Vec<_> = tag.iter().map(|tag| (IF_MATCH, *tag)).collect();
            let body = Some(body.clone());
            let reply = http::client::send(&client, method, url, &headers, body).await;
            reply.expect("a response")
        };
        let created = request(Method::POST, &format!("{base}/articles"), None).await;
        assert_eq!(created.status, StatusCode::CREATED);
        let url = format!("{base}/articles/{}", created.body["id"].as_str().unwrap());
        let mut tag = created.etag;
        for (method, expected) in [(Method::PUT, 1), (Method::PATCH, 2), (Method::PUT, 1)] {
            let before = statements.load(Ordering::Relaxed);
            let reply = request(method.clone(), &url, tag.as_deref()).await;
            assert_eq!(reply.status, StatusCode::OK, "{method}: {reply:?}");
            let ran = statements.load(Ordering::Relaxed) - before;
            assert_eq!(ran, expected, "statements received for a {method}");
            tag = reply.etag;
        }
    }
}
