//! The HTTP API where the token is the ETag: the real axum server on 127.0.0.1 with an
//! ephemeral port, driven from outside by a real HTTP client and, for races, by a second
//! database connection.

macro_rules! http_suite {
    ($backend:ident, $conn:ty) => {
        use diesel::connection::SimpleConnection;
        use diesel::prelude::*;
        use diesel_occ::{UuidToken, VersionToken};
        use diesel_occ_examples::$backend::http::client::{send, Reply};
        use diesel_occ_examples::$backend::{async_pool, http, Pool};
        use diesel_occ_examples::schema::articles;
        use reqwest::{Client, Method, StatusCode};
        use serde_json::{json, Value};

        /// Starts the service on 127.0.0.1:0 over the database at `url` and returns its
        /// base URL.
        async fn start(url: &str) -> String {
            let pool = async_pool(url, 4).expect("an async pool");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            tokio::spawn(http::serve(listener, pool));
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

        fn stored(pool: &Pool, url: &str) -> Option<(String, UuidToken)> {
            let id = url.rsplit('/').next().unwrap();
            articles::table
                .find(id)
                .select((articles::title, articles::version))
                .first(&mut pool.get().unwrap())
                .optional()
                .unwrap()
        }

        /// Another writer's transaction on the article at `url`: it changes the row (or
        /// deletes it) and holds its row lock until the PATCH sent meanwhile is waiting
        /// for that lock, then commits. The PATCH has read the row and passed its
        /// precondition before the commit, so the commit lands between its check and
        /// its save.
        async fn patch_racing_a_commit(pool: &Pool, url: &str, etag: &str, delete: bool) -> Reply {
            let id = url.rsplit('/').next().unwrap().to_owned();
            let (locked_tx, locked) = std::sync::mpsc::channel();
            let (commit, commit_rx) = std::sync::mpsc::channel::<()>();
            let mut writer = pool.get().unwrap();
            let other = std::thread::spawn(move || {
                let begin = if stringify!($backend) == "sqlite" { "BEGIN IMMEDIATE" } else { "BEGIN" };
                writer.batch_execute(begin).unwrap();
                let row = articles::table.find(id);
                if delete {
                    diesel::delete(row).execute(&mut writer).unwrap();
                } else {
                    diesel::update(row)
                        .set((articles::title.eq("Theirs"), articles::version.eq(UuidToken::initial())))
                        .execute(&mut writer)
                        .unwrap();
                }
                locked_tx.send(()).unwrap();
                commit_rx.recv().unwrap();
                writer.batch_execute("COMMIT").unwrap();
            });
            locked.recv().unwrap();
            let patch = tokio::spawn({
                let (url, etag) = (url.to_owned(), etag.to_owned());
                async move {
                    call(&Client::new(), Method::PATCH, &url, Some(&etag), Some(json!({"title": "Mine"}))).await
                }
            });
            wait_for_a_lock_wait(pool).await;
            commit.send(()).unwrap();
            tokio::task::spawn_blocking(move || other.join().unwrap()).await.unwrap();
            patch.await.unwrap()
        }

        /// Returns once a statement of this test's database waits for a row lock.
        /// SQLite shows no lock waits: there the PATCH gets a second to read and reach
        /// its UPDATE, which then waits for the write lock (`busy_timeout`).
        async fn wait_for_a_lock_wait(pool: &Pool) {
            #[derive(QueryableByName)]
            struct Waiting {
                #[diesel(sql_type = diesel::sql_types::BigInt)]
                n: i64,
            }
            let query = match stringify!($backend) {
                "postgres" => "SELECT count(*) AS n FROM pg_stat_activity \
                               WHERE datname = current_database() AND wait_event_type = 'Lock'",
                "mysql" => "SELECT COUNT(*) AS n FROM information_schema.processlist \
                            WHERE db = DATABASE() AND state = 'Updating' AND info LIKE 'UPDATE%'",
                _ => {
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    return;
                }
            };
            for _ in 0..1000 {
                let waiting: Waiting = diesel::sql_query(query).get_result(&mut pool.get().unwrap()).unwrap();
                if waiting.n > 0 {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("the PATCH never waited for the row lock");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn get_returns_the_token_as_a_strong_etag() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
            let client = Client::new();
            let (url, created) = create(&client, &base).await;
            let reply = call(&client, Method::GET, &url, None, None).await;
            assert_eq!(reply.status, StatusCode::OK);
            let etag = reply.etag.clone().expect("an ETag");
            assert_eq!(etag, created);
            let (_, token) = stored(&pool, &url).unwrap();
            assert_eq!(etag, format!("\"{}\"", token.0.hyphenated()), "strong: quoted, no W/");
            assert_eq!(reply.body["title"], "Draft");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn writes_without_if_match_get_428() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
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
                assert_eq!(reply.status, StatusCode::PRECONDITION_REQUIRED, "{method} {if_match:?}");
                assert_eq!(reply.body["error"], "precondition_required");
            }
            assert_eq!(stored(&pool, &url), before, "nothing was written");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn malformed_if_match_gets_400() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
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
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let reply = call(&client, Method::PUT, &url, Some(&format!("W/{etag}")), edit("X")).await;
            assert_eq!(reply.status, StatusCode::PRECONDITION_FAILED);
            assert_eq!(stored(&pool, &url).unwrap().0, "Draft");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn stale_etag_gets_412_before_the_edit() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
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
            let (title, token) = stored(&pool, &url).unwrap();
            assert_eq!((title.as_str(), format!("\"{}\"", token.0.hyphenated())), ("Second", new));
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn patch_and_put_return_the_new_etag() {
            let (db, _pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
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
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
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
        async fn row_deleted_during_a_write_gets_404() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
            let (url, etag) = create(&Client::new(), &base).await;
            let reply = patch_racing_a_commit(&pool, &url, &etag, true).await;
            assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
            assert_eq!(stored(&pool, &url), None, "the late write did not resurrect the row");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn a_write_committed_between_check_and_save_gets_409() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
            let (url, etag) = create(&Client::new(), &base).await;
            let reply = patch_racing_a_commit(&pool, &url, &etag, false).await;
            assert_eq!(reply.status, StatusCode::CONFLICT, "{reply:?}");
            assert_eq!(reply.body["error"], "conflict");
            assert!(reply.body["message"].as_str().unwrap().contains("GET it again"), "{reply:?}");
            assert_eq!(reply.etag, None);
            let (title, _) = stored(&pool, &url).unwrap();
            assert_eq!(title, "Theirs", "the row holds the other writer's write");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn two_puts_with_the_same_etag_exactly_one_succeeds() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            let (a, b) = tokio::join!(
                call(&client, Method::PUT, &url, Some(&etag), edit("A")),
                call(&client, Method::PUT, &url, Some(&etag), edit("B")),
            );
            let (winner, loser) = if a.status == StatusCode::OK { (a, b) } else { (b, a) };
            assert_eq!(winner.status, StatusCode::OK, "{winner:?}");
            // Refused at the precondition (412) or at the save (409), depending on when
            // the winner committed: either way nothing of the loser's was written.
            assert!(
                [StatusCode::PRECONDITION_FAILED, StatusCode::CONFLICT].contains(&loser.status),
                "{loser:?}"
            );
            assert_eq!(loser.etag, None);
            let (title, token) = stored(&pool, &url).unwrap();
            assert_eq!(title, winner.body["title"].as_str().unwrap(), "the row holds the winner's write");
            assert_eq!(winner.etag, Some(format!("\"{}\"", token.0.hyphenated())));
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn invalid_bodies_get_422() {
            let (db, _pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
            let client = Client::new();
            let (url, etag) = create(&client, &base).await;
            for body in [json!({"title": ""}), json!({"title": "x".repeat(201), "body": ""}), json!({"title": "a", "body": "b", "extra": 1}), json!([1])] {
                let reply = call(&client, Method::PUT, &url, Some(&etag), Some(body.clone())).await;
                assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            }
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn database_failures_show_no_sql_or_driver_text() {
            let (db, pool) = example_db!($backend, $conn);
            let base = start(db.url()).await;
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
                assert_eq!(reply.body, json!({"error": "internal", "message": "Internal error."}));
            }
            let reply = call(&client, Method::POST, &format!("{base}/articles"), None, edit("New")).await;
            assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn walkthrough_tells_the_whole_story() {
            let (db, _pool) = example_db!($backend, $conn);
            let mut out = Vec::new();
            http::client::walkthrough(async_pool(db.url(), 4).unwrap(), &mut out).await.unwrap();
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
    };
}
