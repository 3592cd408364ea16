//! The HTTP API where the token is the ETag: the real axum server on 127.0.0.1 with an
//! ephemeral port, driven from outside by a real HTTP client and, for races, by a second
//! database connection.
//!
//! Races are forced the same way on every backend: the second connection changes (or
//! only locks) the row in an open transaction; the requests are sent; the service's
//! connections report each UPDATE or DELETE they start (Diesel's instrumentation on the
//! pool the test gives the service), so the test knows every request has read the row,
//! passed its precondition and is at its write, waiting for that lock; only then does
//! the second connection commit (or roll back).

use diesel::connection::{InstrumentationEvent, SimpleConnection};
use diesel::prelude::*;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig};
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_examples::schema::articles;
use diesel_occ_tests::{Backend, TestConnection};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::app_backend::http::client::{Reply, send};
use super::app_backend::{AsyncConn, AsyncPool, Pool, async_pool, http};
use super::{Conn, app_backend};

/// On SQLite a writer locks the whole database, and waits for the lock.
const SQLITE: bool = matches!(Conn::BACKEND, Backend::Sqlite);

/// Starts the service on 127.0.0.1:0 over the database at `url`; returns its base
/// URL and a channel told each time one of the service's connections starts an
/// UPDATE or DELETE.
async fn start(url: &str) -> (String, UnboundedReceiver<()>) {
    let (started, writes) = unbounded_channel();
    let mut config = ManagerConfig::<AsyncConn>::default();
    config.custom_setup = Box::new(move |url| {
        let (url, started) = (url.to_owned(), started.clone());
        Box::pin(async move {
            let mut conn = AsyncConn::establish(&url).await?;
            if SQLITE {
                // As the app's own pool: writers wait for the file lock.
                conn.batch_execute("PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;")
                    .await
                    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
            }
            conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
                if let InstrumentationEvent::StartQuery { query, .. } = event {
                    let sql = query.to_string();
                    if sql.starts_with("UPDATE") || sql.starts_with("DELETE") {
                        let _ = started.send(());
                    }
                }
            });
            Ok(conn)
        })
    });
    let manager = AsyncDieselConnectionManager::new_with_config(url, config);
    let pool = AsyncPool::builder(manager)
        .max_size(4)
        .build()
        .expect("an async pool");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(http::serve(listener, pool));
    (base, writes)
}

/// POSTs an article and returns its URL and ETag.
async fn create(client: &Client, base: &str) -> (String, String) {
    let reply = send(
        client,
        Method::POST,
        &format!("{base}/articles"),
        None,
        Some(json!({"title": "Draft", "body": "First version."})),
    )
    .await
    .unwrap();
    assert_eq!(reply.status, StatusCode::CREATED, "{reply:?}");
    let id = reply.body["id"].as_str().unwrap();
    (
        format!("{base}/articles/{id}"),
        reply.etag.expect("an ETag"),
    )
}

async fn call(
    client: &Client,
    method: Method,
    url: &str,
    if_match: Option<&str>,
    body: Option<Value>,
) -> Reply {
    let reply = send(client, method, url, if_match, body)
        .await
        .expect("a response");
    assert_clean(&reply);
    reply
}

/// No response body carries SQL, table names or driver text.
fn assert_clean(reply: &Reply) {
    let text = reply.body.to_string().to_lowercase();
    for leak in [
        "select",
        "update ",
        "delete from",
        "insert",
        "sql",
        "articles",
        "relation",
        "column",
        "constraint",
        "syntax",
        "diesel",
        "database",
        "driver",
        "no such table",
        "doesn't exist",
        "postgres",
        "mysql",
        "sqlite",
    ] {
        assert!(!text.contains(leak), "response body leaks {leak:?}: {text}");
    }
}

fn edit(title: &str) -> Option<Value> {
    Some(json!({"title": title, "body": "Edited."}))
}

fn stored(pool: &Pool, url: &str) -> Option<(String, UuidToken)> {
    let id = url.rsplit('/').next().unwrap();
    articles::table
        .find(id)
        .select((articles::title, articles::version))
        .first(&mut pool.get().unwrap())
        .optional()
        .unwrap()
}

/// What the second connection does to the article inside its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Other {
    /// Writes a title and a fresh token, then commits.
    Update,
    /// Deletes the row, then commits.
    Delete,
    /// Only takes the row's lock (SQLite: the database's write lock), then rolls
    /// back.
    Lock,
}

/// `requests` sent while the second connection holds the article at `url` in an
/// open transaction that does `other`. Returns once every request has started its
/// UPDATE or DELETE (reported on `writes`), and the second connection has then
/// ended its transaction, with the replies in the order they came.
async fn while_held(
    pool: &Pool,
    writes: &mut UnboundedReceiver<()>,
    url: &str,
    other: Other,
    requests: Vec<(Method, String, Option<Value>)>,
) -> Vec<Reply> {
    let id = url.rsplit('/').next().unwrap().to_owned();
    let (held_tx, held) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel::<()>();
    let mut conn = pool.get().unwrap();
    let holder = std::thread::spawn(move || {
        let begin = if SQLITE { "BEGIN IMMEDIATE" } else { "BEGIN" };
        conn.batch_execute(begin).unwrap();
        let row = articles::table.find(id);
        match other {
            Other::Update => diesel::update(row)
                .set((
                    articles::title.eq("Theirs"),
                    articles::version.eq(UuidToken::initial()),
                ))
                .execute(&mut conn),
            Other::Delete => diesel::delete(row).execute(&mut conn),
            Other::Lock => diesel::update(row)
                .set(articles::title.eq(articles::title))
                .execute(&mut conn),
        }
        .unwrap();
        held_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        let end = if other == Other::Lock {
            "ROLLBACK"
        } else {
            "COMMIT"
        };
        conn.batch_execute(end).unwrap();
    });
    tokio::task::spawn_blocking(move || held.recv().unwrap())
        .await
        .unwrap();

    let count = requests.len();
    let (replied, mut replies) = unbounded_channel();
    for (method, etag, body) in requests {
        let (url, replied) = (url.to_owned(), replied.clone());
        tokio::spawn(async move {
            let reply = call(&Client::new(), method, &url, Some(&etag), body).await;
            replied.send(reply).unwrap();
        });
    }
    for _ in 0..count {
        tokio::select! {
            Some(()) = writes.recv() => {}
            Some(reply) = replies.recv() => panic!("a request ended before its write: {reply:?}"),
        }
    }
    release.send(()).unwrap();
    tokio::task::spawn_blocking(move || holder.join().unwrap())
        .await
        .unwrap();
    let mut all = Vec::new();
    for _ in 0..count {
        all.push(replies.recv().await.unwrap());
    }
    all
}

/// One request racing the second connection's commit of `other`.
async fn racing_a_commit(
    pool: &Pool,
    writes: &mut UnboundedReceiver<()>,
    url: &str,
    other: Other,
    request: (Method, &str, Option<Value>),
) -> Reply {
    let (method, etag, body) = request;
    let mut replies = while_held(
        pool,
        writes,
        url,
        other,
        vec![(method, etag.to_owned(), body)],
    )
    .await;
    replies.pop().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_returns_the_token_as_a_strong_etag() {
    let (db, pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, created) = create(&client, &base).await;
    let reply = call(&client, Method::GET, &url, None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let etag = reply.etag.clone().expect("an ETag");
    assert_eq!(etag, created);
    let (_, token) = stored(&pool, &url).unwrap();
    assert_eq!(
        etag,
        format!("\"{}\"", token.0.hyphenated()),
        "strong: quoted, no W/"
    );
    assert_eq!(reply.body["title"], "Draft");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_without_if_match_get_428() {
    let (db, pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, _) = create(&client, &base).await;
    let before = stored(&pool, &url);
    for (method, if_match) in [
        (Method::PUT, None),
        (Method::PATCH, None),
        (Method::DELETE, None),
        // `*` names no version: a write with it would be unconditional.
        (Method::PUT, Some("*")),
        (Method::DELETE, Some("*")),
    ] {
        let reply = call(&client, method.clone(), &url, if_match, edit("X")).await;
        assert_eq!(
            reply.status,
            StatusCode::PRECONDITION_REQUIRED,
            "{method} {if_match:?}"
        );
        assert_eq!(reply.body["error"], "precondition_required");
    }
    assert_eq!(stored(&pool, &url), before, "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_if_match_gets_400() {
    let (db, pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, etag) = create(&client, &base).await;
    let before = stored(&pool, &url);
    let unquoted = etag.trim_matches('"').to_owned();
    let trailing = format!("{etag} junk");
    for bad in [
        "abc",
        unquoted.as_str(),
        "\"not-a-uuid\"",
        "\"00000000-0000-0000-0000-000000000000\"",
        "\"\"",
        trailing.as_str(),
    ] {
        let reply = call(&client, Method::PUT, &url, Some(bad), edit("X")).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "If-Match: {bad}");
        assert_eq!(reply.body["error"], "malformed_if_match");
    }
    assert_eq!(stored(&pool, &url), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn weak_etag_never_matches_412() {
    let (db, pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, etag) = create(&client, &base).await;
    let reply = call(
        &client,
        Method::PUT,
        &url,
        Some(&format!("W/{etag}")),
        edit("X"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(stored(&pool, &url).unwrap().0, "Draft");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_etag_gets_412_before_the_edit() {
    let (db, pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, old) = create(&client, &base).await;
    let put = call(&client, Method::PUT, &url, Some(&old), edit("Second")).await;
    assert_eq!(put.status, StatusCode::OK);
    let new = put.etag.clone().unwrap();
    assert_ne!(new, old);
    for method in [Method::PUT, Method::PATCH, Method::DELETE] {
        let reply = call(&client, method.clone(), &url, Some(&old), edit("Stale")).await;
        assert_eq!(reply.status, StatusCode::PRECONDITION_FAILED, "{method}");
        assert_eq!(reply.body["error"], "precondition_failed");
        assert!(
            reply.body["message"]
                .as_str()
                .unwrap()
                .contains("GET it again")
        );
    }
    let (title, token) = stored(&pool, &url).unwrap();
    assert_eq!(
        (title.as_str(), format!("\"{}\"", token.0.hyphenated())),
        ("Second", new)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn patch_and_put_return_the_new_etag() {
    let (db, _pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, etag) = create(&client, &base).await;
    let patched = call(
        &client,
        Method::PATCH,
        &url,
        Some(&etag),
        Some(json!({"title": "Patched"})),
    )
    .await;
    assert_eq!(patched.status, StatusCode::OK);
    assert_eq!(
        (
            patched.body["title"].as_str(),
            patched.body["body"].as_str()
        ),
        (Some("Patched"), Some("First version."))
    );
    let next = patched.etag.unwrap();
    // An If-Match list matches when it holds the current tag.
    let list = format!("{etag}, {next}");
    let put = call(&client, Method::PUT, &url, Some(&list), edit("Listed")).await;
    assert_eq!(put.status, StatusCode::OK);
    let get = call(&client, Method::GET, &url, None, None).await;
    assert_eq!(get.etag, put.etag);
    assert_eq!(get.body["title"], "Listed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleted_row_gets_404() {
    let (db, pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, etag) = create(&client, &base).await;
    let deleted = call(&client, Method::DELETE, &url, Some(&etag), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    for method in [Method::GET, Method::PUT, Method::PATCH, Method::DELETE] {
        let reply = call(&client, method.clone(), &url, Some(&etag), edit("Gone")).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method}");
    }
    assert_eq!(stored(&pool, &url), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn row_deleted_during_a_patch_gets_404() {
    let (db, pool) = app_db!();
    let (base, mut writes) = start(db.url()).await;
    let (url, etag) = create(&Client::new(), &base).await;
    let patch = (Method::PATCH, etag.as_str(), Some(json!({"title": "Mine"})));
    let reply = racing_a_commit(&pool, &mut writes, &url, Other::Delete, patch).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
    assert_eq!(
        stored(&pool, &url),
        None,
        "the late write did not resurrect the row"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_committed_between_a_patchs_check_and_save_gets_409() {
    let (db, pool) = app_db!();
    let (base, mut writes) = start(db.url()).await;
    let (url, etag) = create(&Client::new(), &base).await;
    let patch = (Method::PATCH, etag.as_str(), Some(json!({"title": "Mine"})));
    let reply = racing_a_commit(&pool, &mut writes, &url, Other::Update, patch).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{reply:?}");
    assert_eq!(reply.body["error"], "conflict");
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("GET it again"),
        "{reply:?}"
    );
    assert_eq!(reply.etag, None);
    let (title, _) = stored(&pool, &url).unwrap();
    assert_eq!(title, "Theirs", "the row holds the other writer's write");
}

/// PUT and DELETE check the token in their own statement (`update_by_key`,
/// `delete_by_key`): a write that commits while theirs waits makes the token
/// stale, 412, as if it had committed before the request arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_committed_during_a_put_or_delete_gets_412() {
    let (db, pool) = app_db!();
    let (base, mut writes) = start(db.url()).await;
    let client = Client::new();
    for (method, body) in [(Method::PUT, edit("Mine")), (Method::DELETE, None)] {
        let (url, etag) = create(&client, &base).await;
        let request = (method.clone(), etag.as_str(), body);
        let reply = racing_a_commit(&pool, &mut writes, &url, Other::Update, request).await;
        assert_eq!(
            reply.status,
            StatusCode::PRECONDITION_FAILED,
            "{method}: {reply:?}"
        );
        assert_eq!(reply.body["error"], "precondition_failed");
        let (title, _) = stored(&pool, &url).unwrap();
        assert_eq!(
            title, "Theirs",
            "{method}: the row holds the other writer's write"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn row_deleted_during_a_put_or_delete_gets_404() {
    let (db, pool) = app_db!();
    let (base, mut writes) = start(db.url()).await;
    let client = Client::new();
    for (method, body) in [(Method::PUT, edit("Mine")), (Method::DELETE, None)] {
        let (url, etag) = create(&client, &base).await;
        let request = (method.clone(), etag.as_str(), body);
        let reply = racing_a_commit(&pool, &mut writes, &url, Other::Delete, request).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method}: {reply:?}");
        assert_eq!(stored(&pool, &url), None, "{method}: the row stays deleted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_puts_with_the_same_etag_exactly_one_succeeds() {
    let (db, pool) = app_db!();
    let (base, mut writes) = start(db.url()).await;
    let (url, etag) = create(&Client::new(), &base).await;
    // Both PUTs are at their UPDATE, waiting for the row, before either can run.
    let puts = vec![
        (Method::PUT, etag.clone(), edit("A")),
        (Method::PUT, etag.clone(), edit("B")),
    ];
    let mut replies = while_held(&pool, &mut writes, &url, Other::Lock, puts).await;
    replies.sort_by_key(|reply| reply.status);
    let [winner, loser] = <[Reply; 2]>::try_from(replies).unwrap();
    assert_eq!(winner.status, StatusCode::OK, "{winner:?}");
    // The loser's UPDATE ran after the winner's commit and matched no row.
    assert_eq!(loser.status, StatusCode::PRECONDITION_FAILED, "{loser:?}");
    assert_eq!(loser.etag, None);
    let (title, token) = stored(&pool, &url).unwrap();
    assert_eq!(
        title,
        winner.body["title"].as_str().unwrap(),
        "the row holds the winner's write"
    );
    assert_eq!(winner.etag, Some(format!("\"{}\"", token.0.hyphenated())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_bodies_get_422() {
    let (db, _pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, etag) = create(&client, &base).await;
    for body in [
        json!({"title": ""}),
        json!({"title": "x".repeat(201), "body": ""}),
        json!({"title": "a", "body": "b", "extra": 1}),
        json!([1]),
    ] {
        let reply = call(&client, Method::PUT, &url, Some(&etag), Some(body.clone())).await;
        assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_failures_show_no_sql_or_driver_text() {
    let (db, pool) = app_db!();
    let (base, _) = start(db.url()).await;
    let client = Client::new();
    let (url, etag) = create(&client, &base).await;
    // Break the database under the running service.
    diesel::sql_query("DROP TABLE articles")
        .execute(&mut pool.get().unwrap())
        .unwrap();
    for (method, body) in [
        (Method::GET, None),
        (Method::PUT, edit("X")),
        (Method::DELETE, None),
    ] {
        let reply = call(&client, method.clone(), &url, Some(&etag), body).await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{method}");
        assert_eq!(
            reply.body,
            json!({"error": "internal", "message": "Internal error."})
        );
    }
    let reply = call(
        &client,
        Method::POST,
        &format!("{base}/articles"),
        None,
        edit("New"),
    )
    .await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn walkthrough_tells_the_whole_story() {
    let (db, _pool) = app_db!();
    let mut out = Vec::new();
    http::client::walkthrough(async_pool(db.url(), 4).unwrap(), &mut out)
        .await
        .unwrap();
    let out = String::from_utf8(out).unwrap();
    for expected in [
        "PUT without If-Match                         -> 428 precondition_required",
        "PUT with If-Match: not-an-etag               -> 400 malformed_if_match",
        "PATCH with the old ETag                      -> 412 precondition_failed",
        "client B PUTs        -> 412 precondition_failed",
        "GET after the delete                         -> 404 not_found",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}
