//! The handlers a user writes with diesel-occ-axum, through a real `axum::Router`
//! driven by `tower::ServiceExt::oneshot`, on every backend.
//!
//! The scenarios are written once, against a router, and so are its handlers
//! (`handlers.rs`); `blocking.rs` runs them on blocking connections (an r2d2 pool,
//! `spawn_blocking`, `Preconditions::write`) and `asynchronous.rs` on diesel-async ones
//! (a deadpool pool, `Preconditions::write_async`). Both serve the same routes:
//!
//! | route | what the handler does |
//! |---|---|
//! | `GET /accounts/{id}` | `Preconditions::respond` with `Validators` (ETag, Cache-Control, Vary) |
//! | `PUT /accounts/{id}`, `PATCH`, `DELETE` | `Preconditions::write(_async)`: read, check, `save_checked` / `update_by_key` with a `ChangesetColumns` form / `delete_checked` |
//! | `PUT /create/{id}` | `Preconditions::write(_async)`: `insert_checked` when absent (`If-None-Match: *`) |
//! | `PUT /by-key/{id}`, `DELETE /by-key/{id}` | `update_by_key(..)?`, `delete_by_key(..)?` with `IfMatch::token` |
//! | `DELETE /soft/{id}` | `find`, the client's token, `soft_delete_checked(..)?` |
//! | `PUT /upsert/{id}` | `upsert_checked(Some(token))?` |
//! | `POST /accounts` | `insert_checked(..)?` |
//! | `PUT /insert/{id}` | `insert_checked`, mapped by `IfNoneMatch::problem` |
//! | `PUT /respond/{id}` | `IfNoneMatch::respond` on a PUT |
//! | `GET /optional` | `Option<IfMatch>` |
//! | `GET /stamps/{id}`, `PUT /stamps/{id}` | a whole-second timestamp token: `Last-Modified`, `If-Modified-Since`, `If-Unmodified-Since` |
//! | `GET /busy` | a pool checkout with `?`, the pool's only connection taken |

use axum::Router;
use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_LOCATION, VARY};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel_occ::{ChangesetColumns, Versioned};
use diesel_occ_axum::{IfMatch, Problem, Validators};
// An account; `version` is its ETag.
use diesel_occ_tests::entities::Account;
use diesel_occ_tests::schema::pg::{accounts, stamped_seconds};
use serde_json::Value;
use tower::ServiceExt;

/// A PATCH body: absent fields are left alone.
#[derive(Debug, Clone, serde::Deserialize, AsChangeset, ChangesetColumns)]
#[diesel(table_name = accounts)]
#[serde(deny_unknown_fields)]
struct AccountPatch {
    balance: Option<i32>,
}

/// A row whose token is a whole-second timestamp (`timestamp(0)`, `DATETIME`).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = stamped_seconds)]
struct Stamp {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: NaiveDateTime,
}

/// Account 1 (balance 100, version 1), stamp 1 (value 0, 2026-01-01 00:00:00).
const SEED: &str = "INSERT INTO accounts (id, balance, deleted, version) VALUES (1, 100, FALSE, 1); \
                    INSERT INTO stamped_seconds (id, value, updated_at) VALUES (1, 0, '2026-01-01 00:00:00');";

/// The seeded stamp's `Last-Modified`.
const SEEDED_DATE: &str = "Thu, 01 Jan 2026 00:00:00 GMT";

/// An account as the routes answer it.
fn json(account: &Account) -> axum::Json<Value> {
    axum::Json(serde_json::json!({ "id": account.id, "balance": account.balance }))
}

/// The representation's validators and the cache headers its 200 and 304 share.
fn validators(account: &Account) -> Validators {
    let location = HeaderValue::from_str(&format!("/accounts/{}", account.id)).unwrap();
    let private = HeaderValue::from_static("private, max-age=0");
    Validators::of(&account.version)
        .header(CACHE_CONTROL, private)
        .header(VARY, HeaderValue::from_static("accept"))
        .header(CONTENT_LOCATION, location)
}

/// The client's one tag, as `update_by_key` and `delete_by_key` take it.
fn token(if_match: &IfMatch) -> Result<i32, Problem> {
    if_match
        .token()
        .ok_or_else(|| Problem::precondition_failed(None))
}

/// A response as a test reads it.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn etag(&self) -> Option<&str> {
        self.header("etag")
    }

    /// The problem document's `code`.
    fn code(&self) -> String {
        let json: Value = serde_json::from_str(&self.body).expect("a problem document");
        json["code"].as_str().unwrap_or_default().to_owned()
    }

    fn status_etag(&self) -> (u16, Option<&str>) {
        (self.status.as_u16(), self.etag())
    }

    fn status_body(&self) -> (u16, &str) {
        (self.status.as_u16(), &self.body)
    }
}

/// A flavour's router, as the scenarios drive it: one request at a time.
struct App(Router);

impl App {
    /// Sends one request through the router (`tower::ServiceExt::oneshot`).
    async fn send(&self, method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut request = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if !body.is_empty() {
            request = request.header("content-type", "application/json");
        }
        let request = request.body(Body::from(body.to_owned())).unwrap();
        let response = self.0.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        let body = String::from_utf8(bytes.unwrap().to_vec()).unwrap();
        Reply {
            status,
            headers,
            body,
        }
    }

    async fn get(&self, uri: &str, headers: &[(&str, &str)]) -> Reply {
        self.send(Method::GET, uri, headers, "").await
    }

    async fn put(&self, uri: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        self.send(Method::PUT, uri, headers, body).await
    }

    /// The account's balance and ETag, as a GET answers them.
    async fn account(&self, id: i32) -> (u16, Option<i64>, Option<String>) {
        let reply = self.get(&format!("/accounts/{id}"), &[]).await;
        let json = serde_json::from_str::<Value>(&reply.body).ok();
        let balance = json.and_then(|json| json["balance"].as_i64());
        let etag = reply.etag().map(str::to_owned);
        (reply.status.as_u16(), balance, etag)
    }
}

// Point 1: a stale If-Match reaches the handler through `?`.
async fn a_stale_if_match_through_question_mark_is_412_with_the_current_etag(app: App) {
    const STALE: (&str, &str) = ("if-match", "\"1\"");
    let put = app.put("/by-key/1", &[STALE], "90").await;
    assert_eq!(put.status_etag(), (200, Some("\"2\"")), "{put:?}");
    for (method, uri, body) in [
        (Method::PUT, "/by-key/1", "80"),
        (Method::DELETE, "/by-key/1", ""),
        (Method::DELETE, "/soft/1", ""),
        (Method::PUT, "/upsert/1", "80"),
    ] {
        let stale = app.send(method.clone(), uri, &[STALE], body).await;
        let got = stale.status_etag();
        assert_eq!(got, (412, Some("\"2\"")), "{method} {uri}: {stale:?}");
        assert_eq!(stale.code(), "precondition_failed");
    }
    let unchanged = (200, Some(90), Some("\"2\"".into()));
    assert_eq!(app.account(1).await, unchanged, "nothing written");
}

// Point 2: a taken key is a conflict, not a server error.
async fn a_taken_key_is_409_and_412_under_if_none_match_any(app: App) {
    let taken = app.send(Method::POST, "/accounts", &[], "[1, 5]").await;
    assert_eq!(taken.status, 409, "{taken:?}");
    assert_eq!(taken.code(), "already_exists");
    let taken = app.put("/insert/1", &[("if-none-match", "*")], "5").await;
    assert_eq!(taken.status, 412, "{taken:?}");
    let created = app.send(Method::POST, "/accounts", &[], "[3, 5]").await;
    assert_eq!(created.status_etag(), (201, Some("\"1\"")), "{created:?}");
    let untouched = (200, Some(100), Some("\"1\"".into()));
    assert_eq!(app.account(1).await, untouched, "untouched");
}

// Point 3: strong comparison is octet by octet.
async fn a_tag_the_server_never_issued_does_not_match(app: App) {
    for tag in ["\"01\"", "\"+1\"", "\"1 \""] {
        for uri in ["/by-key/1", "/accounts/1"] {
            let reply = app.put(uri, &[("if-match", tag)], "1").await;
            let expected = if tag.contains(' ') { 400 } else { 412 };
            assert_eq!(reply.status, expected, "{uri} with {tag}: {reply:?}");
        }
    }
    let untouched = (200, Some(100), Some("\"1\"".into()));
    assert_eq!(app.account(1).await, untouched, "untouched");
}

// Point 4: If-None-Match on a write; `*` creates only if absent.
async fn if_none_match_on_a_write_is_412_and_star_creates_only_if_absent(app: App) {
    // In order: the first create makes the second's `*` match.
    let etag = Some("\"1\"");
    for (case, uri, tag, body, status) in [
        ("held", "/respond/1", "\"1\"", "", 412),
        ("other", "/respond/1", "\"9\"", "", 200),
        ("created", "/create/7", "*", "70", 201),
        ("again", "/create/7", "*", "71", 412),
    ] {
        let reply = app.put(uri, &[("if-none-match", tag)], body).await;
        assert_eq!(reply.status_etag(), (status, etag), "{case}: {reply:?}");
    }
    assert_eq!(app.account(7).await, (200, Some(70), Some("\"1\"".into())));
}

// Point 5: `Option<IfMatch>`.
async fn an_optional_if_match_is_none_without_the_header_and_400_when_malformed(app: App) {
    let absent = app.get("/optional", &[]).await;
    assert_eq!(absent.status_body(), (200, "absent"));
    let present = app.get("/optional", &[("if-match", "\"1\"")]).await;
    assert_eq!(present.status_body(), (200, "present"));
    let malformed = app.get("/optional", &[("if-match", "1")]).await;
    assert_eq!(malformed.status, 400, "{malformed:?}");
}

// Point 9: a 304 keeps the headers a cache needs.
async fn a_304_carries_the_cache_headers_of_the_200(app: App) {
    let full = app.get("/accounts/1", &[]).await;
    assert_eq!(full.status_etag(), (200, Some("\"1\"")));
    let weak = [("if-none-match", "W/\"1\"")];
    let cached = app.get("/accounts/1", &weak).await;
    assert_eq!(cached.status_etag(), (304, Some("\"1\"")), "{cached:?}");
    assert!(cached.body.is_empty());
    for name in ["cache-control", "vary", "content-location"] {
        assert!(full.header(name).is_some(), "{name} on the 200");
        assert_eq!(cached.header(name), full.header(name), "{name} on the 304");
    }
    let content_type = cached.header("content-type");
    assert_eq!(content_type, None, "no representation metadata");
}

// Point 7: PUT, PATCH and DELETE with their preconditions in one call.
async fn writes_evaluate_their_preconditions_in_the_retry_helper(app: App) {
    // In order: each If-Match names the ETag the writes before it left.
    for (tag, body, etag) in [
        ("\"1\"", "90", "\"2\""),
        ("*", "80", "\"3\""),
        ("\"9\", \"3\"", "70", "\"4\""),
    ] {
        let put = app.put("/accounts/1", &[("if-match", tag)], body).await;
        assert_eq!(put.status_etag(), (200, Some(etag)), "{tag}: {put:?}");
    }
    let patch_at_4 = async |body: &str| {
        let at_4 = [("if-match", "\"4\"")];
        app.send(Method::PATCH, "/accounts/1", &at_4, body).await
    };
    let patch = patch_at_4(r#"{"balance": 50}"#).await;
    assert_eq!(patch.status_etag(), (200, Some("\"5\"")), "{patch:?}");
    let stale = patch_at_4(r#"{"balance": 40}"#).await;
    assert_eq!(stale.status_etag(), (412, Some("\"5\"")), "{stale:?}");
    let bare = app.put("/accounts/1", &[], "30").await;
    assert_eq!(bare.status, 428, "{bare:?}");
    assert_eq!(app.account(1).await, (200, Some(50), Some("\"5\"".into())));
    let at_5 = [("if-match", "\"5\"")];
    let delete = app.send(Method::DELETE, "/accounts/1", &at_5, "").await;
    assert_eq!(delete.status, 204, "{delete:?}");
    assert_eq!(app.account(1).await.0, 404);
    let any = [("if-match", "*")];
    let gone = app.send(Method::DELETE, "/accounts/1", &any, "").await;
    assert_eq!(gone.status, 412, "`*` on a missing resource: {gone:?}");
    let gone = app.put("/accounts/1", &at_5, "1").await;
    assert_eq!(gone.status, 404, "a tag on a missing resource: {gone:?}");
}

// Point 10: HTTP dates on a whole-second timestamp token.
async fn http_dates_guard_a_whole_second_timestamp_token(app: App) {
    let read = app.get("/stamps/1", &[]).await;
    assert_eq!(read.header("last-modified"), Some(SEEDED_DATE), "{read:?}");
    let modified_since = [("if-modified-since", SEEDED_DATE)];
    let cached = app.get("/stamps/1", &modified_since).await;
    assert_eq!(cached.status, 304, "{cached:?}");
    let unmodified_since = [("if-unmodified-since", SEEDED_DATE)];
    let first = app.put("/stamps/1", &unmodified_since, "1").await;
    assert_eq!(first.status, 200, "{first:?}");
    let second = app.put("/stamps/1", &unmodified_since, "2").await;
    assert_eq!(second.status, 412, "modified since: {second:?}");
    let read = app.get("/stamps/1", &modified_since).await;
    assert_eq!(read.status, 200, "{read:?}");
    assert_ne!(read.header("last-modified"), Some(SEEDED_DATE));
    assert_eq!(read.body, "1", "the second write did not land");
    let yesterday = [("if-unmodified-since", "yesterday")];
    let bare = app.put("/stamps/1", &yesterday, "3").await;
    assert_eq!(bare.status, 428, "not an HTTP-date, so ignored: {bare:?}");
}

// Point 11: weak tags, only when the service opts in.
async fn a_weak_if_match_is_412_unless_the_service_accepts_weak_tags(strict: App, lenient: App) {
    let weak = [("if-match", "W/\"1\"")];
    let refused = strict.put("/by-key/1", &weak, "90").await;
    assert_eq!(refused.status, 412, "{refused:?}");
    let accepted = lenient.put("/by-key/1", &weak, "90").await;
    assert_eq!(accepted.status_etag(), (200, Some("\"2\"")), "{accepted:?}");
    let stale = lenient.put("/accounts/1", &weak, "80").await;
    let got = stale.status_etag();
    assert_eq!(got, (412, Some("\"2\"")), "still checked: {stale:?}");
}

// Point 8: a pool without a free connection.
async fn a_pool_error_is_503_with_retry_after(app: App) {
    let busy = app.get("/busy", &[]).await;
    assert_eq!(busy.status, 503, "{busy:?}");
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert_eq!(busy.code(), "unavailable");
}

/// The scenarios above as tests of a flavour: `$app(settings)` builds its router over a
/// fresh seeded database (`None`: the backend is skipped), `$busy()` one whose pool has
/// no free connection.
macro_rules! http_scenarios {
    ($app:ident, $busy:ident) => {
        http_scenarios!(@each $app:
            a_stale_if_match_through_question_mark_is_412_with_the_current_etag,
            a_taken_key_is_409_and_412_under_if_none_match_any,
            a_tag_the_server_never_issued_does_not_match,
            if_none_match_on_a_write_is_412_and_star_creates_only_if_absent,
            an_optional_if_match_is_none_without_the_header_and_400_when_malformed,
            a_304_carries_the_cache_headers_of_the_200,
            writes_evaluate_their_preconditions_in_the_retry_helper,
            http_dates_guard_a_whole_second_timestamp_token
        );

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_weak_if_match_is_412_unless_the_service_accepts_weak_tags() {
            let (test, strict) = (concat!(module_path!(), "_weak"), diesel_occ_axum::Settings::default());
            let lenient = diesel_occ_axum::Settings::default().weak_if_match(true);
            let Some((_strict_db, strict)) = $app(&format!("{test}_strict"), strict).await else { return };
            let Some((_lenient_db, lenient)) = $app(&format!("{test}_lenient"), lenient).await else { return };
            let (strict, lenient) = (super::super::App(strict), super::super::App(lenient));
            super::super::a_weak_if_match_is_412_unless_the_service_accepts_weak_tags(strict, lenient).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_pool_error_is_503_with_retry_after() {
            let Some((_db, app)) = $busy(concat!(module_path!(), "_busy")).await else { return };
            super::super::a_pool_error_is_503_with_retry_after(super::super::App(app)).await;
        }
    };
    (@each $app:ident: $($scenario:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scenario() {
                let test = concat!(module_path!(), "_", stringify!($scenario));
                let settings = diesel_occ_axum::Settings::default();
                let Some((_db, app)) = $app(test, settings).await else { return };
                super::super::$scenario(super::super::App(app)).await;
            }
        )+
    };
}

on_every_backend!(blocking, asynchronous);
