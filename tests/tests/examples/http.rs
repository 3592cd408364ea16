//! The HTTP API where the token is the ETag (issue 4, point 6): the real axum server on
//! 127.0.0.1 with an ephemeral port, and a real HTTP client.

macro_rules! http_suite {
    ($backend:ident, $conn:ty) => {
        use std::sync::Arc;

        use diesel::prelude::*;
        use diesel_occ::UuidToken;
        use diesel_occ_examples::db::Target;
        use diesel_occ_examples::http::client::{send, Reply, SaveGate};
        use diesel_occ_examples::http::{self, ArticleStore, BeforeSave};
        use diesel_occ_examples::schema::articles;
        use reqwest::{Client, Method, StatusCode};
        use serde_json::{json, Value};

        /// Starts the service on 127.0.0.1:0 and returns its base URL.
        async fn start(target: &Target, hook: Option<BeforeSave>) -> String {
            let mut store = ArticleStore::open(target, 4).await.expect("open the store");
            if let Some(hook) = hook {
                store = store.with_before_save(hook);
            }
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            tokio::spawn(http::serve(listener, store));
            base
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
            (format!("{base}/articles/{id}"), reply.etag.expect("an ETag"))
        }

        async fn call(client: &Client, method: Method, url: &str, if_match: Option<&str>, body: Option<Value>) -> Reply {
            let reply = send(client, method, url, if_match, body).await.expect("a response");
            assert_clean(&reply);
            reply
        }

        /// No response body carries SQL, table names or driver text.
        fn assert_clean(reply: &Reply) {
            let text = reply.body.to_string().to_lowercase();
            for leak in [
                "select", "update ", "delete from", "insert", "sql", "articles", "relation",
                "column", "constraint", "syntax", "diesel", "database", "driver", "no such table",
                "doesn't exist", "postgres", "mysql", "sqlite",
            ] {
                assert!(!text.contains(leak), "response body leaks {leak:?}: {text}");
            }
        }

        fn edit(title: &str) -> Option<Value> {
            Some(json!({"title": title, "body": "Edited."}))
        }

        fn stored(target: &Target, url: &str) -> Option<(String, UuidToken)> {
            let id = url.rsplit('/').next().unwrap();
            articles::table
                .find(id)
                .select((articles::title, articles::version))
                .first(&mut target.connect().unwrap())
                .optional()
                .unwrap()
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn get_returns_the_token_as_a_strong_etag() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, created) = create(&client, &base).await;
            let reply = call(&client, Method::GET, &url, None, None).await;
            assert_eq!(reply.status, StatusCode::OK);
            let etag = reply.etag.clone().expect("an ETag");
            assert_eq!(etag, created);
            let (_, token) = stored(&target, &url).unwrap();
            assert_eq!(etag, format!("\"{}\"", token.0.hyphenated()), "strong: quoted, no W/");
            assert_eq!(reply.body["title"], "Draft");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn writes_without_if_match_get_428() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, _) = create(&client, &base).await;
            let before = stored(&target, &url);
            for (method, if_match) in [
                (Method::PUT, None),
                (Method::PATCH, None),
                (Method::DELETE, None),
                // `*` names no version: a write with it would be unconditional.
                (Method::PUT, Some("*")),
                (Method::DELETE, Some("*")),
            ] {
                let reply = call(&client, method.clone(), &url, if_match, edit("X")).await;
                assert_eq!(reply.status, StatusCode::PRECONDITION_REQUIRED, "{method} {if_match:?}");
                assert_eq!(reply.body["error"], "precondition_required");
            }
            assert_eq!(stored(&target, &url), before, "nothing was written");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn malformed_if_match_gets_400() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let before = stored(&target, &url);
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
            assert_eq!(stored(&target, &url), before);
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn weak_etag_never_matches_412() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let reply = call(&client, Method::PUT, &url, Some(&format!("W/{etag}")), edit("X")).await;
            assert_eq!(reply.status, StatusCode::PRECONDITION_FAILED);
            assert_eq!(stored(&target, &url).unwrap().0, "Draft");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn stale_etag_gets_412_before_the_edit() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
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
                assert!(reply.body["message"].as_str().unwrap().contains("GET it again"));
            }
            let (title, token) = stored(&target, &url).unwrap();
            assert_eq!((title.as_str(), format!("\"{}\"", token.0.hyphenated())), ("Second", new));
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn patch_and_put_return_the_new_etag() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let patched = call(&client, Method::PATCH, &url, Some(&etag), Some(json!({"title": "Patched"}))).await;
            assert_eq!(patched.status, StatusCode::OK);
            assert_eq!((patched.body["title"].as_str(), patched.body["body"].as_str()), (Some("Patched"), Some("First version.")));
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
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let deleted = call(&client, Method::DELETE, &url, Some(&etag), None).await;
            assert_eq!(deleted.status, StatusCode::NO_CONTENT);
            for method in [Method::GET, Method::PUT, Method::PATCH, Method::DELETE] {
                let reply = call(&client, method.clone(), &url, Some(&etag), edit("Gone")).await;
                assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method}");
            }
            assert_eq!(stored(&target, &url), None);
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn row_deleted_during_a_write_gets_404() {
            let (_db, target) = example_db!($backend, $conn);
            // The PUT passes its precondition, then waits at the save for the test to
            // delete the row underneath it.
            let meet = Arc::new(tokio::sync::Barrier::new(2));
            let hook: BeforeSave = {
                let meet = Arc::clone(&meet);
                Arc::new(move || {
                    let meet = Arc::clone(&meet);
                    Box::pin(async move {
                        meet.wait().await; // the request is at the save
                        meet.wait().await; // the row is gone
                    })
                })
            };
            let base = start(&target, Some(hook)).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let put = tokio::spawn({
                let (client, url) = (client.clone(), url.clone());
                async move { call(&client, Method::PUT, &url, Some(&etag), edit("Late")).await }
            });
            meet.wait().await;
            let id = url.rsplit('/').next().unwrap().to_owned();
            let deleted = diesel::delete(articles::table.find(id))
                .execute(&mut target.connect().unwrap())
                .unwrap();
            assert_eq!(deleted, 1);
            meet.wait().await;
            let reply = put.await.unwrap();
            assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
            assert_eq!(stored(&target, &url), None, "the late write did not resurrect the row");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn concurrent_puts_with_the_same_etag_exactly_one_succeeds() {
            let (_db, target) = example_db!($backend, $conn);
            // Both PUTs pass the precondition; the gate holds each at the save until
            // the other is there too.
            let gate = SaveGate::new(2);
            gate.arm();
            let base = start(&target, Some(gate.hook())).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let (a, b) = tokio::join!(
                call(&client, Method::PUT, &url, Some(&etag), edit("A")),
                call(&client, Method::PUT, &url, Some(&etag), edit("B")),
            );
            let statuses = [a.status, b.status];
            assert!(
                statuses.contains(&StatusCode::OK) && statuses.contains(&StatusCode::CONFLICT),
                "exactly one 200 and one 409: {a:?} {b:?}"
            );
            let (winner, loser) = if a.status == StatusCode::OK { (a, b) } else { (b, a) };
            assert_eq!(loser.body["error"], "conflict");
            assert!(loser.body["message"].as_str().unwrap().contains("GET it again"), "{loser:?}");
            assert_eq!(loser.etag, None);

            let (title, token) = stored(&target, &url).unwrap();
            assert_eq!(title, winner.body["title"].as_str().unwrap(), "the row holds the winner's write");
            assert_eq!(winner.etag, Some(format!("\"{}\"", token.0.hyphenated())));
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn invalid_bodies_get_422() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            for body in [json!({"title": ""}), json!({"title": "x".repeat(201), "body": ""}), json!({"title": "a", "body": "b", "extra": 1}), json!([1])] {
                let reply = call(&client, Method::PUT, &url, Some(&etag), Some(body.clone())).await;
                assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            }
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn database_failures_show_no_sql_or_driver_text() {
            let (_db, target) = example_db!($backend, $conn);
            let base = start(&target, None).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            // Break the database under the running service.
            diesel::sql_query("DROP TABLE articles")
                .execute(&mut target.connect().unwrap())
                .unwrap();
            for (method, body) in [
                (Method::GET, None),
                (Method::PUT, edit("X")),
                (Method::DELETE, None),
            ] {
                let reply = call(&client, method.clone(), &url, Some(&etag), body).await;
                assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{method}");
                assert_eq!(reply.body, json!({"error": "internal", "message": "Internal error."}));
            }
            let reply = call(&client, Method::POST, &format!("{base}/articles"), None, edit("New")).await;
            assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn walkthrough_tells_the_whole_story() {
            let (_db, target) = example_db!($backend, $conn);
            let mut out = Vec::new();
            diesel_occ_examples::http::client::walkthrough(&target, &mut out).await.unwrap();
            let out = String::from_utf8(out).unwrap();
            for expected in [
                "PUT without If-Match                         -> 428 precondition_required",
                "PUT with If-Match: not-an-etag               -> 400 malformed_if_match",
                "PATCH with the old ETag                      -> 412 precondition_failed",
                "-> 409 conflict",
                "GET after the delete                         -> 404 not_found",
            ] {
                assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
            }
        }
    };
}
