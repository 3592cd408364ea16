//! The same features on an async connection (diesel-async), instantiated per backend:
//! `AsyncPgConnection`, `AsyncMysqlConnection` and `SyncConnectionWrapper<SqliteConnection>`.
//!
//! The database is created and migrated by the blocking harness (`TestDb`), then the
//! test connects with the async driver. Races meet at a `tokio::sync::Barrier` after
//! both writers have read.

macro_rules! async_suite {
    ($backend:ident, $conn:ty, $sync_conn:ty, $schema:path, $guard_backend:ident, $setup:expr) => {
        mod $backend {
            use std::sync::Arc;

            use diesel::prelude::{ExpressionMethods, Insertable, QueryDsl, Queryable, Selectable};
            use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
            use diesel_occ::asynchronous::prelude::*;
            use diesel_occ::guard::{BypassGuard, GuardBackend};
            use diesel_occ::{Error, Operation, SaveOutcome, Tracked};
            use diesel_occ_tests::TestDb;
            use tokio::sync::Barrier;

            use crate::sql_log::{SqlLog, sql_only, updates};
            use $schema as schema;

            type Conn = $conn;
            const GUARD: GuardBackend = GuardBackend::$guard_backend;

            macro_rules! test_db {
                () => {
                    match TestDb::<$sync_conn>::create(concat!(
                        "beyond_",
                        stringify!($backend),
                        "_",
                        line!()
                    )) {
                        Some(db) => db,
                        None => return,
                    }
                };
            }

            async fn connect(db: &TestDb<$sync_conn>) -> Conn {
                let mut conn = Conn::establish(db.url()).await.expect("async connection");
                conn.batch_execute($setup).await.expect("session setup");
                conn
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::wiki_articles)]
            #[occ(track)]
            struct Article {
                id: i32,
                title: String,
                body: String,
                summary: Option<String>,
                #[occ(skip)]
                views: i32,
                #[occ(version)]
                version: i32,
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::accounts)]
            struct Account {
                id: i32,
                balance: i32,
                deleted: bool,
                #[occ(version)]
                version: i32,
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::purchase_orders)]
            struct Order {
                id: i32,
                note: String,
                #[occ(version)]
                version: i32,
            }

            async fn seed(conn: &mut Conn) {
                diesel::insert_into(schema::wiki_articles::table)
                    .values(Article {
                        id: 1,
                        title: "Title".into(),
                        body: "Body".into(),
                        summary: None,
                        views: 0,
                        version: 1,
                    })
                    .execute(conn)
                    .await
                    .expect("insert article");
                for id in 1..=3 {
                    // One by one: SQLite has no multi-row insert through diesel-async.
                    diesel::insert_into(schema::accounts::table)
                        .values(Account {
                            id,
                            balance: 100,
                            deleted: false,
                            version: 1,
                        })
                        .execute(conn)
                        .await
                        .expect("insert account");
                }
                diesel::insert_into(schema::purchase_orders::table)
                    .values(Order {
                        id: 1,
                        note: "order".into(),
                        version: 1,
                    })
                    .execute(conn)
                    .await
                    .expect("insert order");
            }

            async fn article(conn: &mut Conn) -> Article {
                Article::find(conn, 1).await.expect("article row")
            }

            async fn account(conn: &mut Conn, id: i32) -> Account {
                Account::find(conn, id).await.expect("account row")
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn tracked_save_writes_only_the_edited_columns() {
                let db = test_db!();
                let mut conn = connect(&db).await;
                seed(&mut conn).await;
                let mut tracked = Tracked::new(article(&mut conn).await);
                diesel::sql_query("UPDATE wiki_articles SET body = 'Bypass' WHERE id = 1")
                    .execute(&mut connect(&db).await)
                    .await
                    .unwrap();
                tracked.title = "New".into();
                let log = SqlLog::install_async(&mut conn);
                tracked.save_checked(&mut conn).await.expect("tracked save");
                let statements = log.take();
                assert_eq!(statements.len(), 1, "{statements:?}");
                assert!(!sql_only(&statements[0]).contains("body"), "{statements:?}");
                let stored = article(&mut conn).await;
                assert_eq!(
                    (stored.title.as_str(), stored.body.as_str(), stored.version),
                    ("New", "Bypass", 2)
                );
                assert_eq!(tracked.version, 2);
            }

            /// Two tracked writers from one version, released by a barrier.
            async fn race_tracked(
                db: &TestDb<$sync_conn>,
                edit: fn(usize, &mut Article),
            ) -> Vec<(Result<SaveOutcome<Article>, Error>, Tracked<Article>)> {
                let barrier = Arc::new(Barrier::new(2));
                let mut writers = Vec::new();
                for writer in 0..2 {
                    let barrier = Arc::clone(&barrier);
                    let mut conn = connect(db).await;
                    writers.push(tokio::spawn(async move {
                        let mut tracked = Tracked::new(article(&mut conn).await);
                        barrier.wait().await;
                        edit(writer, &mut tracked);
                        let outcome = tracked.save_merging(&mut conn).await;
                        (outcome, tracked)
                    }));
                }
                let mut outcomes = Vec::new();
                for writer in writers {
                    outcomes.push(writer.await.expect("writer task"));
                }
                outcomes
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn non_overlapping_edits_merge_and_both_survive() {
                let db = test_db!();
                seed(&mut connect(&db).await).await;
                let outcomes = race_tracked(&db, |writer, a| match writer {
                    0 => a.title = "Title by 0".into(),
                    _ => a.body = "Body by 1".into(),
                })
                .await;
                let saved = outcomes
                    .iter()
                    .filter(|(o, _)| matches!(o, Ok(SaveOutcome::Saved)))
                    .count();
                let merged = outcomes
                    .iter()
                    .filter(|(o, _)| matches!(o, Ok(SaveOutcome::Merged { .. })))
                    .count();
                assert_eq!((saved, merged), (1, 1), "{outcomes:?}");
                let stored = article(&mut connect(&db).await).await;
                assert_eq!(
                    (stored.title.as_str(), stored.body.as_str(), stored.version),
                    ("Title by 0", "Body by 1", 3)
                );
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn overlapping_edits_return_both_values_and_write_nothing() {
                let db = test_db!();
                seed(&mut connect(&db).await).await;
                let outcomes =
                    race_tracked(&db, |writer, a| a.title = format!("Title by {writer}")).await;
                let winner = outcomes
                    .iter()
                    .position(|(o, _)| matches!(o, Ok(SaveOutcome::Saved)))
                    .expect("a winner");
                let (outcome, loser) = &outcomes[1 - winner];
                let Ok(SaveOutcome::Overlap(overlap)) = outcome else {
                    panic!("expected an overlap, got {outcome:?}");
                };
                assert_eq!(overlap.fields().names().collect::<Vec<_>>(), ["title"]);
                assert_eq!(overlap.mine().title, format!("Title by {}", 1 - winner));
                assert_eq!(overlap.theirs().title, format!("Title by {winner}"));
                assert_eq!(loser.version, 1);
                assert_eq!(article(&mut connect(&db).await).await.version, 2);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn batch_saves_one_update_each_or_reports_every_conflict() {
                let db = test_db!();
                let mut conn = connect(&db).await;
                seed(&mut conn).await;
                let mut batch = vec![
                    account(&mut conn, 1).await,
                    account(&mut conn, 2).await,
                    account(&mut conn, 3).await,
                ];
                for a in &mut batch {
                    a.balance -= 1;
                }
                let log = SqlLog::install_async(&mut conn);
                batch.save_all_checked(&mut conn).await.expect("batch save");
                assert_eq!(updates(&log.take()).len(), 3);
                assert!(batch.iter().all(|a| a.version == 2));

                // Account 1 goes stale, account 3 is deleted: both are reported.
                let mut other = connect(&db).await;
                let mut one = account(&mut other, 1).await;
                one.balance = 50;
                one.save_checked(&mut other).await.unwrap();
                account(&mut other, 3)
                    .await
                    .delete_checked(&mut other)
                    .await
                    .unwrap();
                for a in &mut batch {
                    a.balance = 0;
                }
                let before = batch.clone();
                let error = batch.save_all_checked(&mut conn).await.unwrap_err();
                let conflict = error.as_batch_conflict().expect("a batch conflict");
                assert_eq!(conflict.indices().collect::<Vec<_>>(), [0, 2]);
                assert!(conflict.conflict_at(2).unwrap().is_deleted());
                assert_eq!(batch, before, "no token advanced");
                assert_eq!(account(&mut conn, 2).await.balance, 99, "rolled back");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn force_increment_conflicts_on_the_root_and_rolls_back() {
                let db = test_db!();
                let mut first = connect(&db).await;
                seed(&mut first).await;
                let mut second = connect(&db).await;
                let mut root_1 = Order::find(&mut first, 1).await.unwrap();
                let mut root_2 = Order::find(&mut second, 1).await.unwrap();
                let mut child_1 = account(&mut first, 1).await;
                let mut child_2 = account(&mut second, 2).await;

                first
                    .transaction(async |conn| {
                        child_1.balance = 1;
                        child_1.save_checked(conn).await?;
                        root_1.force_increment(conn).await
                    })
                    .await
                    .expect("first writer");
                let error = second
                    .transaction(async |conn| {
                        child_2.balance = 2;
                        child_2.save_checked(conn).await?;
                        root_2.force_increment(conn).await
                    })
                    .await
                    .unwrap_err();
                let conflict = error.as_conflict().expect("a conflict on the root");
                assert_eq!(conflict.operation(), Operation::ForceIncrement);
                assert_eq!(conflict.table(), "purchase_orders");
                assert_eq!(
                    account(&mut first, 2).await.balance,
                    100,
                    "the second child write rolled back"
                );
                assert_eq!(root_1.version, 2);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn soft_delete_and_bulk_update_advance_tokens() {
                let db = test_db!();
                let mut conn = connect(&db).await;
                seed(&mut conn).await;
                let mut one = account(&mut conn, 1).await;
                let mut stale_one = one.clone();
                one.soft_delete_checked(&mut conn, schema::accounts::deleted.eq(true))
                    .await
                    .unwrap();
                assert_eq!(one.version, 2);
                assert!(account(&mut conn, 1).await.deleted);
                stale_one.balance = 3;
                assert!(
                    stale_one
                        .save_checked(&mut conn)
                        .await
                        .unwrap_err()
                        .is_conflict()
                );

                let mut in_flight = account(&mut conn, 2).await;
                let touched = Account::bulk_update(
                    schema::accounts::table.filter(schema::accounts::id.ge(2)),
                    schema::accounts::balance.eq(0),
                )
                .execute(&mut conn)
                .await
                .unwrap();
                assert_eq!(touched, 2);
                in_flight.balance = 7;
                let error = in_flight.save_checked(&mut conn).await.unwrap_err();
                assert_eq!(error.as_conflict().unwrap().current::<i32>(), Some(2));
                assert_eq!(account(&mut conn, 2).await.balance, 0);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn raw_update_is_a_conflict_with_the_guard_and_a_lost_update_without() {
                let db = test_db!();
                let mut conn = connect(&db).await;
                seed(&mut conn).await;
                let mut raw = connect(&db).await;

                // Without the guard: the raw write is silently overwritten.
                let mut mine = account(&mut conn, 1).await;
                diesel::sql_query("UPDATE accounts SET balance = 7 WHERE id = 1")
                    .execute(&mut raw)
                    .await
                    .unwrap();
                mine.balance = 90;
                mine.save_checked(&mut conn).await.expect("lost update");
                assert_eq!(account(&mut conn, 1).await.balance, 90);

                // With the guard: the stale save conflicts, the raw write survives.
                let guard = BypassGuard::of::<Account>();
                conn.batch_execute(&guard.install_sql(GUARD).expect("guard DDL"))
                    .await
                    .expect("install guard");
                let mut mine = account(&mut conn, 1).await;
                diesel::sql_query("UPDATE accounts SET balance = 7 WHERE id = 1")
                    .execute(&mut raw)
                    .await
                    .unwrap();
                mine.balance = 80;
                let error = mine.save_checked(&mut conn).await.unwrap_err();
                assert_eq!(error.as_conflict().unwrap().current::<i32>(), Some(3));
                assert_eq!(account(&mut conn, 1).await.balance, 7);
            }
        }
    };
}
