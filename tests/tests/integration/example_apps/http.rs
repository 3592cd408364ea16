//! The HTTP API where the token is the ETag: the real axum server on 127.0.0.1 with an
//! ephemeral port, driven by a real HTTP client and, for races, by a second database
//! connection holding the row's lock until every request is at its write
//! ([`App::while_held`]). RFC 9110's conditional-request cases (If-Match, If-None-Match,
//! weak tags, lists, `*`) run against it on every backend too.

use diesel::connection::{InstrumentationEvent, SimpleConnection};
use diesel::prelude::*;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig};
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_examples::schema::articles;
use diesel_occ_tests::{Backend, TestConnection};
use reqwest::header::{HeaderName, IF_MATCH, IF_NONE_MATCH};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::super::assert_told;
use super::app_backend::http::client::{Reply, send};
use super::app_backend::{AsyncConn, AsyncPool, Pool, async_pool, http};
use super::{Conn, app_backend};

/// On SQLite a writer locks the whole database, and waits for the lock.
const SQLITE: bool = matches!(Conn::BACKEND, Backend::Sqlite);

/// A request's headers.
type Headers<'a> = &'a [(HeaderName, &'a str)];

/// The app's HTTP service, on 127.0.0.1 with an ephemeral port, and a client for it.
struct App {
    base: String,
    client: Client,
    /// Told each time one of the service's connections starts an UPDATE or DELETE.
    writes: UnboundedReceiver<()>,
}

/// The test's database and its app pool (see `app_db!`), and the [`App`] served on it.
macro_rules! started {
    () => {{
        let (db, pool) = app_db!();
        let app = App::start(db.url()).await;
        (db, pool, app)
    }};
}

impl App {
    /// Starts the service over the database at `url`, on a pool whose connections
    /// report their writes.
    async fn start(url: &str) -> Self {
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
        let pool = AsyncPool::builder(manager).max_size(4).build();
        let pool = pool.expect("an async pool");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(http::serve(listener, pool));
        App {
            base,
            client: Client::new(),
            writes,
        }
    }

    /// POSTs an article and returns its URL and ETag.
    async fn create(&self) -> (String, String) {
        let body = json!({"title": "Draft", "body": "First version."});
        let url = self.url("articles");
        let reply = call(&self.client, Method::POST, &url, &[], Some(body)).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{reply:?}");
        let url = self.url(&format!("articles/{}", reply.body["id"].as_str().unwrap()));
        (url, reply.etag.expect("an ETag"))
    }

    /// The service's URL for `path`.
    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    async fn get(&self, url: &str, headers: Headers<'_>) -> Reply {
        call(&self.client, Method::GET, url, headers, None).await
    }

    async fn put(&self, url: &str, headers: Headers<'_>, body: Option<Value>) -> Reply {
        call(&self.client, Method::PUT, url, headers, body).await
    }

    /// `method` with `If-Match: tag` when given and the body it sends (see
    /// [`body_for`]), titled `title`.
    async fn request(&self, method: &Method, url: &str, tag: Option<&str>, title: &str) -> Reply {
        let headers: Vec<_> = tag.iter().map(|tag| (IF_MATCH, *tag)).collect();
        let body = body_for(method, title);
        call(&self.client, method.clone(), url, &headers, body).await
    }
}

/// One request; its body is checked for leaks ([`assert_clean`]).
async fn call(
    client: &Client,
    method: Method,
    url: &str,
    headers: Headers<'_>,
    body: Option<Value>,
) -> Reply {
    let reply = send(client, method, url, headers, body).await;
    let reply = reply.expect("a response");
    assert_clean(&reply);
    reply
}

/// What no response body may contain (lowercase, `|`-separated): SQL, schema names,
/// driver and backend text.
const LEAKS: &str = "select|update |delete from|insert|sql|articles|relation|column|\
                     constraint|syntax|diesel|database|driver|no such table|doesn't exist|\
                     postgres|mysql|sqlite";

/// No response body carries SQL, table names or driver text.
fn assert_clean(reply: &Reply) {
    let text = reply.body.to_string().to_lowercase();
    for leak in LEAKS.split('|') {
        assert!(!text.contains(leak), "response body leaks {leak:?}: {text}");
    }
}

/// An RFC 9457 problem response with this status and code.
#[track_caller]
fn assert_problem(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status.as_u16(), status, "{reply:?}");
    let content_type = reply.content_type.as_deref();
    assert_eq!(content_type, Some("application/problem+json"), "{reply:?}");
    assert_eq!(reply.body["status"], status, "{reply:?}");
    assert_eq!(reply.body["code"], code, "{reply:?}");
    assert!(reply.body["title"].is_string() && reply.body["detail"].is_string());
}

fn edit(title: &str) -> Option<Value> {
    Some(json!({"title": title, "body": "Edited."}))
}

/// The body a method sends: a replacement for PUT, a title for PATCH, none for DELETE.
fn body_for(method: &Method, title: &str) -> Option<Value> {
    match *method {
        Method::PUT => edit(title),
        Method::PATCH => Some(json!({"title": title})),
        _ => None,
    }
}

/// `method` (`case`) succeeded on the article at `url`, tagged `old` before: 204 and the
/// row is gone, or 200 with a new ETag, the one the row holds.
#[track_caller]
fn assert_written(pool: &Pool, url: &str, method: &Method, old: &str, reply: &Reply, case: &str) {
    if *method == Method::DELETE {
        assert_eq!(reply.status, StatusCode::NO_CONTENT, "{case}: {reply:?}");
        assert_eq!(stored(pool, url), None, "{case}: the row is gone");
    } else {
        assert_eq!(reply.status, StatusCode::OK, "{case}: {reply:?}");
        assert_ne!(reply.etag.as_deref(), Some(old), "{case}: a new ETag");
        assert_eq!(reply.etag, stored_etag(pool, url), "{case}: the row's ETag");
    }
}

fn stored(pool: &Pool, url: &str) -> Option<(String, UuidToken)> {
    let id = url.rsplit('/').next().unwrap();
    let columns = (articles::title, articles::version);
    let row = articles::table.find(id).select(columns);
    row.first(&mut pool.get().unwrap()).optional().unwrap()
}

/// The ETag of what the database holds for the article at `url`.
fn stored_etag(pool: &Pool, url: &str) -> Option<String> {
    stored(pool, url).map(|(_, token)| format!("\"{}\"", token.0.hyphenated()))
}

const WRITES: [Method; 3] = [Method::PUT, Method::PATCH, Method::DELETE];

/// What the second connection does to the article inside its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Other {
    /// Writes a title and a fresh token, then commits.
    Update,
    /// Deletes the row, then commits.
    Delete,
    /// Only takes the row's lock (SQLite: the database's write lock), then rolls back.
    Lock,
}

impl App {
    /// `requests` sent while the second connection holds the article at `url` in an
    /// open transaction that does `other`. The service's connections report each UPDATE
    /// or DELETE they start (on `writes`), so once every request has reported, each has
    /// read the row, passed its precondition and waits for the lock; only then does the
    /// second connection end its transaction. The replies, in the order they came.
    async fn while_held(
        &mut self,
        pool: &Pool,
        url: &str,
        other: Other,
        requests: Vec<(Method, String, Option<Value>)>,
    ) -> Vec<Reply> {
        let id = url.rsplit('/').next().unwrap().to_owned();
        let (held_tx, held) = tokio::sync::oneshot::channel();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let mut conn = pool.get().unwrap();
        let holder = std::thread::spawn(move || {
            let begin = if SQLITE { "BEGIN IMMEDIATE" } else { "BEGIN" };
            conn.batch_execute(begin).unwrap();
            let row = articles::table.find(id);
            let token = UuidToken::initial();
            let theirs = (articles::title.eq("Theirs"), articles::version.eq(token));
            let unchanged = articles::title.eq(articles::title);
            match other {
                Other::Update => diesel::update(row).set(theirs).execute(&mut conn),
                Other::Delete => diesel::delete(row).execute(&mut conn),
                Other::Lock => diesel::update(row).set(unchanged).execute(&mut conn),
            }
            .unwrap();
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            let lock = other == Other::Lock;
            let end = if lock { "ROLLBACK" } else { "COMMIT" };
            conn.batch_execute(end).unwrap();
        });
        held.await.unwrap();

        let count = requests.len();
        let (replied, mut replies) = unbounded_channel();
        for (method, etag, body) in requests {
            let (url, replied) = (url.to_owned(), replied.clone());
            tokio::spawn(async move {
                let reply = call(&Client::new(), method, &url, &[(IF_MATCH, &etag)], body).await;
                replied.send(reply).unwrap();
            });
        }
        for _ in 0..count {
            tokio::select! {
                Some(()) = self.writes.recv() => {}
                Some(reply) = replies.recv() => panic!("a request ended before its write: {reply:?}"),
            }
        }
        release.send(()).unwrap();
        let ended = tokio::task::spawn_blocking(move || holder.join());
        ended.await.unwrap().unwrap();
        let mut all = Vec::new();
        for _ in 0..count {
            all.push(replies.recv().await.unwrap());
        }
        all
    }

    /// A fresh article, and `method` on it (titled "Mine") racing the second connection's
    /// commit of `other` ([`App::while_held`]); the article's URL and the reply.
    async fn race(&mut self, pool: &Pool, other: Other, method: Method) -> (String, Reply) {
        let (url, etag) = self.create().await;
        let request = (method.clone(), etag, body_for(&method, "Mine"));
        let mut replies = self.while_held(pool, &url, other, vec![request]).await;
        (url, replies.pop().unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_and_head_return_the_token_as_a_strong_etag() {
    let (_db, pool, app) = started!();
    let (url, created) = app.create().await;
    let reply = app.get(&url, &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.etag.as_ref(), Some(&created));
    // Strong: quoted, no W/.
    assert_eq!(reply.etag, stored_etag(&pool, &url));
    assert_eq!(reply.body["title"], "Draft");
    let head = call(&app.client, Method::HEAD, &url, &[], None).await;
    let expected = (StatusCode::OK, Some(created), Value::Null);
    assert_eq!((head.status, head.etag, head.body), expected);
}

/// If-None-Match on GET and HEAD (RFC 9110, 13.1.2): weak comparison, lists, `*`; a
/// match is 304 with the ETag and no body, anything else the representation.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn if_none_match_answers_304_when_the_client_holds_the_version() {
    let (_db, _pool, app) = started!();
    let (url, etag) = app.create().await;
    let other = "\"6f1c2a4e-1f7e-4a53-9a57-2d1b1f0c3e11\"";
    let weak = format!("W/{etag}");
    let listed = format!("{other}, {etag}");
    let weak_listed = format!("{other} , W/{etag}");
    for (method, value, expected) in [
        (Method::GET, etag.as_str(), StatusCode::NOT_MODIFIED),
        (Method::HEAD, etag.as_str(), StatusCode::NOT_MODIFIED),
        (Method::GET, weak.as_str(), StatusCode::NOT_MODIFIED),
        (Method::GET, listed.as_str(), StatusCode::NOT_MODIFIED),
        (Method::GET, weak_listed.as_str(), StatusCode::NOT_MODIFIED),
        (Method::GET, "*", StatusCode::NOT_MODIFIED),
        (Method::HEAD, "*", StatusCode::NOT_MODIFIED),
        (Method::GET, other, StatusCode::OK),
        (Method::GET, "W/\"not-this-one\"", StatusCode::OK),
        (Method::HEAD, other, StatusCode::OK),
    ] {
        let if_none_match = [(IF_NONE_MATCH, value)];
        let reply = call(&app.client, method.clone(), &url, &if_none_match, None).await;
        let case = format!("{method} If-None-Match: {value}");
        assert_eq!(reply.status, expected, "{case}");
        assert_eq!(reply.etag.as_ref(), Some(&etag), "{case}");
        let has_body = reply.body != Value::Null;
        let wants_body = expected == StatusCode::OK && method == Method::GET;
        assert_eq!(has_body, wants_body, "{reply:?}");
    }
    // Two header lines are one list.
    let two_lines = [(IF_NONE_MATCH, other), (IF_NONE_MATCH, etag.as_str())];
    let reply = app.get(&url, &two_lines).await;
    assert_eq!(reply.status, StatusCode::NOT_MODIFIED);
    // A new version: the old ETag no longer matches.
    let put = app.put(&url, &[(IF_MATCH, &etag)], edit("New")).await;
    let reply = app.get(&url, &[(IF_NONE_MATCH, &etag)]).await;
    assert_eq!((reply.status, reply.etag), (StatusCode::OK, put.etag));
    // A missing resource is 404, `*` or not.
    let missing = app.url("articles/no-such-article");
    let reply = app.get(&missing, &[(IF_NONE_MATCH, "*")]).await;
    assert_problem(&reply, 404, "not_found");
    // A malformed header is 400.
    let reply = app.get(&url, &[(IF_NONE_MATCH, "abc")]).await;
    assert_problem(&reply, 400, "malformed_if_none_match");
}

/// PUT, PATCH and DELETE with the current ETag (alone, in a list, beside weak tags):
/// 200 with the new ETag the row holds, or 204 and the row is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_with_a_matching_if_match_succeed() {
    let (_db, pool, app) = started!();
    let other = "\"6f1c2a4e-1f7e-4a53-9a57-2d1b1f0c3e11\"";
    for method in WRITES {
        for form in ["alone", "listed", "beside a weak tag"] {
            let (url, etag) = app.create().await;
            let value = match form {
                "alone" => etag.clone(),
                "listed" => format!("{other}, {etag}"),
                _ => format!("W/{other}, {etag}"),
            };
            let reply = app.request(&method, &url, Some(&value), "Mine").await;
            let case = format!("{method} {form}");
            assert_written(&pool, &url, &method, &etag, &reply, &case);
            if method != Method::DELETE {
                assert_eq!(reply.body["title"], "Mine");
                assert_eq!(stored(&pool, &url).unwrap().0, "Mine");
            }
        }
    }
}

/// A stale ETag, a weak one (If-Match compares strongly), a list without the current
/// one, a well-formed tag that names no token: 412, problem+json, the current ETag, and
/// nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_with_a_stale_if_match_get_412_with_the_current_etag() {
    let (_db, pool, app) = started!();
    for method in WRITES {
        let (url, old) = app.create().await;
        let put = app.put(&url, &[(IF_MATCH, &old)], edit("Second")).await;
        let current = put.etag.clone().unwrap();
        let weak = format!("W/{current}");
        let list = format!("{old}, W/{current}");
        let nil = "\"00000000-0000-0000-0000-000000000000\"";
        for value in [old.as_str(), &weak, &list, "\"not-a-uuid\"", nil, "\"\""] {
            let reply = app.request(&method, &url, Some(value), "Late").await;
            assert_problem(&reply, 412, "precondition_failed");
            assert_eq!(reply.etag, put.etag, "{method} If-Match: {value}");
            let (title, _) = stored(&pool, &url).unwrap();
            assert_eq!(title, "Second", "{method}: nothing written");
        }
    }
}

/// `If-Match: *` matches any current version (RFC 9110, 13.1.1): the write goes ahead;
/// on a missing resource it fails with 412.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn if_match_star_matches_an_existing_resource_only() {
    let (_db, pool, app) = started!();
    let missing = app.url("articles/no-such-article");
    for method in WRITES {
        let (url, etag) = app.create().await;
        let reply = app.request(&method, &url, Some("*"), "Starred").await;
        assert_written(&pool, &url, &method, &etag, &reply, method.as_str());
        let reply = app.request(&method, &missing, Some("*"), "Starred").await;
        assert_problem(&reply, 412, "precondition_failed");
        assert_eq!(reply.etag, None, "{method}: no current version");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_without_if_match_get_428() {
    let (_db, pool, app) = started!();
    let (url, _) = app.create().await;
    let before = stored(&pool, &url);
    for method in WRITES {
        let reply = app.request(&method, &url, None, "X").await;
        assert_problem(&reply, 428, "precondition_required");
    }
    assert_eq!(stored(&pool, &url), before, "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_if_match_gets_400() {
    let (_db, pool, app) = started!();
    let (url, etag) = app.create().await;
    let before = stored(&pool, &url);
    let unquoted = etag.trim_matches('"');
    let trailing = format!("{etag} junk");
    let with_star = format!("{etag}, *");
    for method in WRITES {
        for bad in ["abc", unquoted, &trailing, &with_star, "w/\"a\""] {
            let reply = app.request(&method, &url, Some(bad), "X").await;
            assert_problem(&reply, 400, "malformed_if_match");
        }
    }
    assert_eq!(stored(&pool, &url), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleted_row_gets_404() {
    let (_db, pool, app) = started!();
    let (url, etag) = app.create().await;
    let deleted = app.request(&Method::DELETE, &url, Some(&etag), "").await;
    let expected = (StatusCode::NO_CONTENT, None);
    assert_eq!((deleted.status, deleted.etag), expected);
    for method in [Method::GET, Method::PUT, Method::PATCH, Method::DELETE] {
        let reply = app.request(&method, &url, Some(&etag), "Gone").await;
        assert_problem(&reply, 404, "not_found");
    }
    assert_eq!(stored(&pool, &url), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn row_deleted_during_a_patch_gets_404() {
    let (_db, pool, mut app) = started!();
    let (url, reply) = app.race(&pool, Other::Delete, Method::PATCH).await;
    assert_problem(&reply, 404, "not_found");
    // The late write did not resurrect the row.
    assert_eq!(stored(&pool, &url), None);
}

/// A write that commits between PATCH's check and its save: the save's predicate
/// matches no row, the retry reads the row again and finds the client's tag stale: 412
/// with the other writer's ETag.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_committed_between_a_patchs_check_and_save_gets_412() {
    let (_db, pool, mut app) = started!();
    let (url, reply) = app.race(&pool, Other::Update, Method::PATCH).await;
    assert_problem(&reply, 412, "precondition_failed");
    // The other writer's ETag, and the row holds the other writer's write.
    assert_eq!(reply.etag, stored_etag(&pool, &url));
    assert_eq!(stored(&pool, &url).unwrap().0, "Theirs");
}

/// PUT and DELETE check the token in their own statement (`update_by_key`,
/// `delete_by_key`): a write that commits while theirs waits makes the token
/// stale, 412 with the current ETag, as if it had committed before the request arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_committed_during_a_put_or_delete_gets_412() {
    let (_db, pool, mut app) = started!();
    for method in [Method::PUT, Method::DELETE] {
        let (url, reply) = app.race(&pool, Other::Update, method.clone()).await;
        assert_problem(&reply, 412, "precondition_failed");
        assert_eq!(reply.etag, stored_etag(&pool, &url), "{method}");
        assert_eq!(stored(&pool, &url).unwrap().0, "Theirs", "{method}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn row_deleted_during_a_put_or_delete_gets_404() {
    let (_db, pool, mut app) = started!();
    for method in [Method::PUT, Method::DELETE] {
        let (url, reply) = app.race(&pool, Other::Delete, method.clone()).await;
        assert_problem(&reply, 404, "not_found");
        assert_eq!(stored(&pool, &url), None, "{method}: the row stays deleted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_puts_with_the_same_etag_exactly_one_succeeds() {
    let (_db, pool, mut app) = started!();
    let (url, etag) = app.create().await;
    // Both PUTs are at their UPDATE, waiting for the row, before either can run.
    let puts = ["A", "B"].map(|title| (Method::PUT, etag.clone(), edit(title)));
    let mut replies = app.while_held(&pool, &url, Other::Lock, puts.into()).await;
    replies.sort_by_key(|reply| reply.status);
    let [winner, loser] = <[Reply; 2]>::try_from(replies).unwrap();
    assert_eq!(winner.status, StatusCode::OK, "{winner:?}");
    // The loser's UPDATE ran after the winner's commit and matched no row.
    assert_problem(&loser, 412, "precondition_failed");
    assert_eq!(loser.etag, winner.etag, "told the winner's ETag");
    let (title, _) = stored(&pool, &url).unwrap();
    let winners_title = winner.body["title"].as_str().unwrap();
    assert_eq!(title, winners_title, "the row holds the winner's write");
    assert_eq!(winner.etag, stored_etag(&pool, &url));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_bodies_get_422() {
    let (_db, _pool, app) = started!();
    let (url, etag) = app.create().await;
    for body in [
        json!({"title": ""}),
        json!({"title": "x".repeat(201), "body": ""}),
        json!({"title": "a", "body": "b", "extra": 1}),
        json!([1]),
    ] {
        let reply = app.put(&url, &[(IF_MATCH, &etag)], Some(body)).await;
        assert_problem(&reply, 422, "invalid_body");
    }
}

/// The body extractor's rejections are problems too: 400 for text that is not JSON,
/// 415 without `Content-Type: application/json`; nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bodies_that_are_not_json_get_400_and_another_content_type_415() {
    let (_db, pool, app) = started!();
    let (url, etag) = app.create().await;
    let whole = r#"{"title": "a", "body": "b"}"#;
    for (content_type, body, status, code) in [
        ("application/json", r#"{"title": "#, 400, "malformed_body"),
        ("text/plain", whole, 415, "unsupported_media_type"),
    ] {
        let request = app.client.put(&url).header(IF_MATCH, &etag);
        let request = request.header("content-type", content_type).body(body);
        let response = request.send().await.unwrap();
        let header = |name: &str| {
            let value = response.headers().get(name);
            value.map(|v| v.to_str().unwrap().to_owned())
        };
        let reply = Reply {
            status: response.status(),
            etag: header("etag"),
            content_type: header("content-type"),
            body: response.json().await.unwrap(),
        };
        assert_clean(&reply);
        assert_problem(&reply, status, code);
    }
    assert_eq!(stored_etag(&pool, &url), Some(etag), "nothing written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_failures_show_no_sql_or_driver_text() {
    let (_db, pool, app) = started!();
    let (url, etag) = app.create().await;
    // Break the database under the running app.
    let mut conn = pool.get().unwrap();
    conn.batch_execute("DROP TABLE articles").unwrap();
    for method in [Method::GET, Method::PUT, Method::DELETE] {
        let reply = app.request(&method, &url, Some(&etag), "X").await;
        assert_problem(&reply, 500, "internal");
        assert_eq!(reply.body["detail"], "Internal error.");
    }
    let articles = app.url("articles");
    let reply = call(&app.client, Method::POST, &articles, &[], edit("New")).await;
    assert_problem(&reply, 500, "internal");
}

/// `/metrics` renders diesel-occ's metrics for Prometheus: after a forced conflict (a
/// stale If-Match) and a write through the retry helper (a PATCH), the conflict counter
/// and the attempts histogram (with buckets) are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_show_the_conflict_counter_and_the_attempts_histogram() {
    let (_db, _pool, app) = started!();
    let (url, old) = app.create().await;
    let put = app.put(&url, &[(IF_MATCH, &old)], edit("Second")).await;
    assert_eq!(put.status, StatusCode::OK);
    let stale = app.put(&url, &[(IF_MATCH, &old)], edit("Late")).await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
    let current = stale.etag.as_deref();
    let patched = app.request(&Method::PATCH, &url, current, "Patched").await;
    assert_eq!(patched.status, StatusCode::OK);

    let response = app.client.get(app.url("metrics")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    let has = |prefix: &str| text.lines().any(|line| line.starts_with(prefix));
    let counter = has("diesel_occ_conflicts");
    assert!(counter, "no conflict counter in:\n{text}");
    let histogram = has("diesel_occ_attempts_bucket");
    assert!(histogram, "no attempts histogram in:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn walkthrough_tells_the_whole_story() {
    let (db, _pool) = app_db!();
    let mut out = Vec::new();
    let pool = async_pool(db.url(), 4).unwrap();
    http::client::walkthrough(pool, &mut out).await.unwrap();
    let told = [
        "GET with If-None-Match: the ETag             -> 304, ETag",
        "PUT without If-Match                         -> 428 precondition_required",
        "PUT with If-Match: not-an-etag               -> 400 malformed_if_match",
        "PATCH with the old ETag                      -> 412 precondition_failed, ETag",
        "client B PUTs        -> 412 precondition_failed, ETag",
        "PUT with If-Match: *                         -> 200, ETag",
        "GET after the delete                         -> 404 not_found",
        "DELETE again with If-Match: *                -> 412 precondition_failed",
    ];
    assert_told(out, &told);
}
