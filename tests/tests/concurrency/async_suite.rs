//! Issue 3 on an async connection, instantiated per backend: the foundation's scenarios
//! through diesel-async, the async retry helper through a deadpool pool (a fresh
//! checkout per attempt, on a distinct server connection), the hot row, exhaustion and
//! the deadline, escalation, cancellation and what it is observed as.
//!
//! Races are forced: writers meet at a `tokio::sync::Barrier` after they have read,
//! and interference inside a retry attempt runs at a fixed point of the attempt.

macro_rules! async_suite {
    ($backend:ident, $conn:ty, $schema:path) => {
        mod $backend {
            use std::collections::HashSet;
            use std::sync::Arc;
            use std::sync::Mutex as StdMutex;
            use std::sync::atomic::Ordering;
            use std::time::{Duration, Instant};

            use diesel::{ExpressionMethods, Insertable, QueryDsl, Queryable, Selectable};
            use diesel_async::pooled_connection::deadpool::Pool;
            use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
            use diesel_occ::asynchronous::prelude::*;
            use diesel_occ::asynchronous::{self as occ, RetryPolicy};
            use diesel_occ::{ConflictState, Error, Operation};
            use tokio::sync::{Barrier, Mutex};

            use diesel_async::pooled_connection::deadpool::Object;
            use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig};
            use diesel_occ::asynchronous::AsyncConnectionSource;

            use crate::support::{self, AsyncDb, AsyncTestConn};
            use diesel_occ_tests::statements::StatementCounter;
            use $schema as schema;

            type Conn = $conn;

            /// A fresh database, or return (after a SKIPPED line) when the backend is
            /// unreachable and not required.
            macro_rules! test_db {
                () => {
                    match AsyncDb::<Conn>::create(concat!(stringify!($backend), "_a", line!()))
                        .await
                    {
                        Some(db) => db,
                        None => return,
                    }
                };
            }

            /// Every write sets `value` and `label` together (`label` is `value` as
            /// text) and advances the integer token by one, so a row written only by
            /// whole writes has `label == value` and `version == value + 1`.
            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::counters)]
            struct Counter {
                id: i32,
                value: i32,
                label: Option<String>,
                #[occ(version)]
                version: i32,
            }

            impl Counter {
                fn increment(&mut self) {
                    self.value += 1;
                    self.label = Some(self.value.to_string());
                }

                fn assert_whole(&self) {
                    assert_eq!(
                        self.label.as_deref(),
                        Some(self.value.to_string().as_str()),
                        "value and label come from one write: {self:?}"
                    );
                    assert_eq!(self.version, self.value + 1, "one token step per write: {self:?}");
                }
            }

            #[derive(Debug, PartialEq)]
            struct SoldOut;

            /// A deadpool pool of configured connections, holding `size` connections
            /// that are all open and idle on return. Deadpool hands idle connections out
            /// first in, first out, so consecutive checkouts from this warm pool are
            /// distinct connections.
            async fn warm_pool(db: &AsyncDb<Conn>, size: usize) -> Pool<Conn> {
                let mut config = ManagerConfig::default();
                config.custom_setup = Box::new(|url| Box::pin(support::connect::<Conn>(url)));
                let manager = AsyncDieselConnectionManager::<Conn>::new_with_config(db.url(), config);
                let pool = Pool::builder(manager).max_size(size).build().expect("deadpool pool");
                let mut warm: Vec<Object<Conn>> = Vec::new();
                for _ in 0..size {
                    warm.push(pool.get().await.expect("warm the pool"));
                }
                drop(warm);
                assert_eq!(pool.status().available, size);
                pool
            }

            /// The identity of the server connection (see `AsyncTestConn::SETUP`).
            async fn connection_id(conn: &mut Conn) -> i64 {
                let query = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
                    <Conn as AsyncTestConn>::CONNECTION_ID,
                ));
                query.get_result(conn).await.expect("connection id")
            }

            /// The deadpool pool as an `AsyncConnectionSource` that also counts its
            /// checkouts and discards, delegating to the pool's own implementation.
            struct Counting<'p> {
                pool: &'p Pool<Conn>,
                checkouts: std::sync::atomic::AtomicU32,
                discards: std::sync::atomic::AtomicU32,
            }

            impl<'p> Counting<'p> {
                fn new(pool: &'p Pool<Conn>) -> Self {
                    Counting { pool, checkouts: Default::default(), discards: Default::default() }
                }

                fn checkouts(&self) -> u32 {
                    std::sync::atomic::AtomicU32::load(&self.checkouts, Ordering::SeqCst)
                }

                fn discards(&self) -> u32 {
                    std::sync::atomic::AtomicU32::load(&self.discards, Ordering::SeqCst)
                }
            }

            impl AsyncConnectionSource for Counting<'_> {
                type Connection = Conn;
                type Pooled<'a> = Object<Conn> where Self: 'a;

                fn checkout(
                    &self,
                ) -> impl std::future::Future<Output = Result<Object<Conn>, diesel_occ::PoolError>> + Send {
                    self.checkouts.fetch_add(1, Ordering::SeqCst);
                    self.pool.checkout()
                }

                fn discard(&self, pooled: Object<Conn>) {
                    self.discards.fetch_add(1, Ordering::SeqCst);
                    self.pool.discard(pooled);
                }
            }

            async fn seed(db: &AsyncDb<Conn>, id: i32) {
                let mut conn = db.conn().await;
                diesel::insert_into(schema::counters::table)
                    .values(Counter {
                        id,
                        value: 0,
                        label: Some("0".into()),
                        version: 1,
                    })
                    .execute(&mut conn)
                    .await
                    .expect("seed");
            }

            async fn load(conn: &mut Conn, id: i32) -> Counter {
                Counter::find(conn, id).await.expect("counter row")
            }

            /// Another writer's checked increment; returns the token it wrote.
            async fn bump(conn: &mut Conn, id: i32) -> i32 {
                let mut row = load(conn, id).await;
                row.increment();
                row.save_checked(conn).await.expect("the other writer");
                row.version
            }

            /// A plain increment that only a lock can stop, from a connection that
            /// waits for locks briefly.
            async fn try_plain_increment(conn: &mut Conn, key: i32) -> diesel::QueryResult<usize> {
                use schema::counters::dsl::*;
                diesel::update(counters.find(key))
                    .set((value.eq(value + 1), version.eq(version + 1)))
                    .execute(conn)
                    .await
            }

            async fn impatient(db: &AsyncDb<Conn>) -> Conn {
                let mut conn = db.conn().await;
                conn.batch_execute(<Conn as AsyncTestConn>::SHORT_LOCK_WAIT)
                    .await
                    .expect("short lock wait");
                conn
            }

            fn quick() -> RetryPolicy {
                RetryPolicy::new().backoff(Duration::ZERO, Duration::from_millis(2))
            }

            fn exhausted<T: std::fmt::Debug>(
                result: Result<T, Error>,
            ) -> diesel_occ::RetriesExhausted {
                match result {
                    Err(Error::RetriesExhausted(exhausted)) => exhausted,
                    other => panic!("expected RetriesExhausted, got {other:?}"),
                }
            }

            // ---- 1. the foundation's scenarios, async ----

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn two_writers_from_one_version_exactly_one_wins() {
                let db = test_db!();
                seed(&db, 1).await;
                let barrier = Arc::new(Barrier::new(2));
                let mut writers = Vec::new();
                for writer in 0..2_i32 {
                    let mut conn = db.conn().await;
                    let barrier = Arc::clone(&barrier);
                    // tokio::spawn: the save_checked future is Send.
                    writers.push(tokio::spawn(async move {
                        let mut row = load(&mut conn, 1).await;
                        barrier.wait().await;
                        row.value += 10 * (writer + 1);
                        row.label = Some(format!("writer {writer}"));
                        let result = row.save_checked(&mut conn).await;
                        (result, row)
                    }));
                }
                let mut outcomes = Vec::new();
                for writer in writers {
                    outcomes.push(writer.await.expect("writer task"));
                }
                let winners: Vec<_> = outcomes.iter().filter(|(r, _)| r.is_ok()).collect();
                assert_eq!(winners.len(), 1, "exactly one winner: {outcomes:?}");
                let winner = &winners[0].1;
                let (loss, loser) = outcomes.iter().find(|(r, _)| r.is_err()).unwrap();
                let conflict = loss.as_ref().unwrap_err().as_conflict().expect("a conflict");
                assert_eq!(conflict.operation(), Operation::Update);
                assert_eq!(conflict.table(), "counters");
                assert_eq!(conflict.expected::<i32>(), Some(1));
                assert_eq!(conflict.current::<i32>(), Some(winner.version), "names the winner's token");
                assert_eq!(loser.version, 1, "the loser's token is not advanced");
                assert_eq!(&load(&mut db.conn().await, 1).await, winner);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn update_after_delete_and_delete_after_update() {
                let db = test_db!();
                seed(&db, 1).await;
                seed(&db, 2).await;
                let (mut a, mut b) = (db.conn().await, db.conn().await);

                // Delete first, then update: Deleted.
                let deleter = load(&mut a, 1).await;
                let mut writer = load(&mut b, 1).await;
                deleter.delete_checked(&mut a).await.expect("delete wins");
                writer.value = 7;
                let error = writer.save_checked(&mut b).await.unwrap_err();
                let conflict = error.as_conflict().expect("a conflict");
                assert_eq!(conflict.state(), &ConflictState::Deleted);
                assert_eq!((writer.version, writer.value), (1, 7), "token untouched, edits kept");
                assert!(Counter::find(&mut a, 1).await.unwrap_err().is_not_found(), "not resurrected");

                // Update first, then delete: Stale, naming the update's token.
                let mut writer = load(&mut a, 2).await;
                let deleter = load(&mut b, 2).await;
                writer.increment();
                writer.save_checked(&mut a).await.expect("update wins");
                let error = deleter.delete_checked(&mut b).await.unwrap_err();
                let conflict = error.as_conflict().expect("a conflict");
                assert_eq!(conflict.operation(), Operation::Delete);
                assert_eq!(conflict.current::<i32>(), Some(writer.version));
                assert_eq!(load(&mut a, 2).await, writer, "the row survives with the update");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn one_statement_on_success_and_a_stale_client_token_is_rejected_unwritten() {
                let db = test_db!();
                seed(&db, 1).await;
                let mut conn = db.conn().await;
                let client_token = load(&mut conn, 1).await.version;
                let mut row = load(&mut conn, 1).await;
                let statements = StatementCounter::install_async(&mut conn);

                row.increment();
                row.save_checked(&mut conn).await.expect("save");
                assert_eq!(statements.take(), 1, "one UPDATE on success");
                assert_eq!(row.version, 2);
                row.increment();
                row.save_checked(&mut conn).await.expect("second save");
                assert_eq!(statements.take(), 1);
                let cached = statements.take_cached();
                assert_eq!(cached.len(), 1, "the UPDATE is prepared once, then reused: {cached:?}");
                assert!(cached[0].starts_with("UPDATE"), "{cached:?}");

                let mut stale = row.clone();
                stale.version = 1;
                assert!(stale.save_checked(&mut conn).await.unwrap_err().is_conflict());
                assert_eq!(statements.take(), 2, "the conflict path adds one read");

                let error = Counter::find_checked(&mut conn, 1, &client_token).await.unwrap_err();
                assert_eq!(statements.take(), 1, "one SELECT, no write");
                let conflict = error.as_conflict().expect("stale client token");
                assert_eq!(conflict.operation(), Operation::ClientToken);
                assert_eq!(conflict.expected::<i32>(), Some(client_token), "the client's token is kept");
                assert_eq!(conflict.current::<i32>(), Some(row.version));
                assert_eq!(load(&mut conn, 1).await, row, "nothing written");
                let fresh = Counter::find_checked(&mut conn, 1, &row.version).await.expect("current");
                assert_eq!(fresh, row);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn retry_futures_are_send_and_run_on_spawned_tasks() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 2).await;
                let tasks: Vec<_> = (0..4)
                    .map(|_| {
                        let pool = pool.clone();
                        tokio::spawn(async move {
                            let policy = quick().max_attempts(50).escalate_after(1);
                            occ::retry(&pool, &policy, async |conn, attempt| {
                                let mut row: Counter = attempt.find(conn, 1).await?;
                                row.increment();
                                row.save_checked(conn).await?;
                                Ok(row.value)
                            })
                            .await
                        })
                    })
                    .collect();
                let mut values = Vec::new();
                for task in tasks {
                    values.push(task.await.expect("task").expect("retry"));
                }
                values.sort();
                assert_eq!(values, [1, 2, 3, 4]);
                load(&mut db.conn().await, 1).await.assert_whole();
            }

            // ---- 2. a fresh connection per attempt, and exhaustion after exactly N ----

            /// Deadpool hands idle connections out first in, first out; the pool has
            /// four warm idle connections, so if every attempt really returns its
            /// connection and checks one out anew, four attempts land on four distinct
            /// server connections (PostgreSQL `pg_backend_pid()`, MariaDB
            /// `CONNECTION_ID()`, on SQLite a random id each connection stores in a
            /// TEMP table when it opens).
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn each_attempt_runs_on_a_distinct_server_connection_until_exactly_n() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 4).await;
                let source = Counting::new(&pool);
                let other = Mutex::new(db.conn().await);
                let other_id = connection_id(&mut *other.lock().await).await;
                let seen = StdMutex::new(Vec::new());
                let last_bump = StdMutex::new(0);

                let result: Result<(), Error> =
                    occ::retry(&source, &quick().max_attempts(4), async |conn, attempt| {
                        let id = connection_id(conn).await;
                        let in_use = pool.status().size - pool.status().available;
                        seen.lock().unwrap().push((attempt.number(), id, in_use));
                        let mut row: Counter = attempt.find(conn, 1).await?;
                        // Another writer commits between the read and the save, always.
                        *last_bump.lock().unwrap() = bump(&mut *other.lock().await, 1).await;
                        row.increment();
                        row.save_checked(conn).await
                    })
                    .await;

                let exhausted = exhausted(result);
                assert_eq!(exhausted.attempts(), 4);
                assert!(!exhausted.deadline_reached());
                let conflict = exhausted.last_conflict().expect("the last conflict");
                assert_eq!(conflict.current::<i32>(), Some(*last_bump.lock().unwrap()));

                let seen = seen.into_inner().unwrap();
                assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
                assert!(seen.iter().all(|s| s.2 == 1), "one connection out at a time: {seen:?}");
                let ids: HashSet<i64> = seen.iter().map(|s| s.1).collect();
                assert_eq!(ids.len(), 4, "four distinct server connections: {seen:?}");
                assert!(!ids.contains(&other_id));
                assert_eq!(source.checkouts(), 4, "one checkout per attempt");
                assert_eq!(source.discards(), 0, "clean attempts go back");
                assert_eq!(pool.status().available, 4, "every connection returned");
                load(&mut db.conn().await, 1).await.assert_whole();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn a_domain_outcome_ends_the_loop_after_one_attempt() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 2).await;
                let source = Counting::new(&pool);
                let outcome = occ::retry(&source, &quick(), async |conn, attempt| {
                    let row: Counter = attempt.find(conn, 1).await?;
                    if row.value < 5 {
                        return Ok(Err(SoldOut));
                    }
                    Ok(Ok(row.value))
                })
                .await
                .expect("a domain outcome is not an error");
                assert_eq!(outcome, Err(SoldOut));
                assert_eq!(source.checkouts(), 1);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn the_deadline_stops_a_perpetual_conflict() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 2).await;
                let other = Mutex::new(db.conn().await);
                let budget = Duration::from_millis(300);
                let policy = RetryPolicy::new()
                    .max_attempts(10_000)
                    .backoff(Duration::from_millis(1), Duration::from_millis(10))
                    .deadline(budget);
                let started = Instant::now();
                let starts = StdMutex::new(Vec::new());
                let result: Result<(), Error> = occ::retry(&pool, &policy, async |conn, attempt| {
                    starts.lock().unwrap().push(started.elapsed());
                    let mut row: Counter = attempt.find(conn, 1).await?;
                    bump(&mut *other.lock().await, 1).await;
                    row.increment();
                    row.save_checked(conn).await
                })
                .await;
                let elapsed = started.elapsed();
                let exhausted = exhausted(result);
                assert!(exhausted.deadline_reached(), "{exhausted:?}");
                assert!(exhausted.attempts() < 10_000);
                assert!(exhausted.last_error().is_conflict());
                let starts = starts.into_inner().unwrap();
                assert_eq!(starts.len() as u32, exhausted.attempts());
                // Generous bounds: no attempt starts long after the budget and the loop
                // does not run on for long.
                assert!(starts.iter().all(|s| *s < budget + Duration::from_secs(2)), "{starts:?}");
                assert!(elapsed < budget + Duration::from_secs(10), "{elapsed:?}");
                eprintln!(
                    "{}: deadline {budget:?}: {} attempts in {elapsed:?}",
                    stringify!($backend),
                    exhausted.attempts()
                );
            }

            // ---- 3. the hot row ----

            const WORKERS: usize = 8;
            const INCREMENTS: usize = 250;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn eight_workers_times_250_retried_increments_end_at_exactly_2000() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, WORKERS).await;
                let policy = RetryPolicy::new()
                    .max_attempts(100)
                    .backoff(Duration::ZERO, Duration::from_millis(2))
                    .escalate_after(1);
                let started = Instant::now();
                let workers: Vec<_> = (0..WORKERS)
                    .map(|_| {
                        let pool = pool.clone();
                        let policy = policy.clone();
                        tokio::spawn(async move {
                            let (mut attempts, mut escalated) = (0_u32, 0_u32);
                            for _ in 0..INCREMENTS {
                                let (number, locked) = occ::retry(&pool, &policy, async |conn, attempt| {
                                    let mut row: Counter = attempt.find(conn, 1).await?;
                                    row.increment();
                                    row.save_checked(conn).await?;
                                    Ok((attempt.number(), attempt.is_escalated()))
                                })
                                .await
                                .expect("every increment lands within the policy");
                                attempts += number;
                                escalated += u32::from(locked);
                                assert!(number <= 2, "an escalated attempt cannot lose");
                            }
                            (attempts, escalated)
                        })
                    })
                    .collect();
                let (mut attempts, mut escalated) = (0, 0);
                for worker in workers {
                    let (a, e) = worker.await.expect("worker");
                    attempts += a;
                    escalated += e;
                }
                let row = load(&mut db.conn().await, 1).await;
                assert_eq!(row.value, (WORKERS * INCREMENTS) as i32, "no increment lost");
                row.assert_whole();
                eprintln!(
                    "{}: hot row {WORKERS}x{INCREMENTS}: {attempts} attempts, {escalated} escalated, {:?}",
                    stringify!($backend),
                    started.elapsed()
                );
            }

            /// The control: the same load through plain load-mutate-save. Every round,
            /// all eight workers read, meet at a barrier, write `read + 1` and meet
            /// again, so each round adds exactly one: 250, not 2000, by construction.
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn control_the_same_load_through_plain_load_mutate_save_loses_updates() {
                let db = test_db!();
                seed(&db, 1).await;
                let barrier = Arc::new(Barrier::new(WORKERS));
                let mut workers = Vec::new();
                for _ in 0..WORKERS {
                    let mut conn = db.conn().await;
                    let barrier = Arc::clone(&barrier);
                    workers.push(tokio::spawn(async move {
                        for _ in 0..INCREMENTS {
                            let row = load(&mut conn, 1).await;
                            barrier.wait().await;
                            use schema::counters::dsl::*;
                            diesel::update(counters.find(1))
                                .set(value.eq(row.value + 1))
                                .execute(&mut conn)
                                .await
                                .expect("plain write");
                            barrier.wait().await;
                        }
                    }));
                }
                for worker in workers {
                    worker.await.expect("worker");
                }
                let row = load(&mut db.conn().await, 1).await;
                assert_eq!(row.value, INCREMENTS as i32, "7 of every 8 increments lost");
                assert!(row.value < (WORKERS * INCREMENTS) as i32);
            }

            // ---- 6. escalation ----

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn after_one_conflict_the_attempt_holds_the_row_lock_until_it_commits() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 2).await;
                let other = Mutex::new(impatient(&db).await);
                let seen = StdMutex::new(Vec::new());
                let result = occ::retry(
                    &pool,
                    &quick().max_attempts(3).escalate_after(1),
                    async |conn, attempt| {
                        let mut row: Counter = attempt.find(conn, 1).await?;
                        // The other writer tries in every attempt, after the read.
                        let blocked = try_plain_increment(&mut *other.lock().await, 1).await;
                        seen.lock().unwrap().push((attempt.number(), attempt.is_escalated(), blocked.is_err()));
                        row.increment();
                        row.save_checked(conn).await?;
                        Ok(row)
                    },
                )
                .await
                .expect("the escalated attempt wins");
                assert_eq!(
                    seen.into_inner().unwrap(),
                    [(1, false, false), (2, true, true)],
                    "attempt 1 is lock-free and loses; attempt 2 holds the lock, so the other writer cannot get in"
                );
                let stored = load(&mut db.conn().await, 1).await;
                assert_eq!(stored, result, "the escalated write is committed and visible");
                assert_eq!(stored.value, 2, "the other writer's first increment and ours");
                // The lock is gone with the commit.
                assert_eq!(try_plain_increment(&mut *other.lock().await, 1).await.expect("unblocked"), 1);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn a_row_that_conflicted_is_locked_from_the_first_read_of_the_next_operation() {
                let db = test_db!();
                seed(&db, 1).await;
                seed(&db, 2).await;
                let pool = warm_pool(&db, 2).await;
                let other = Mutex::new(impatient(&db).await);
                let policy = quick().max_attempts(3).escalate_hot_rows(1, Duration::from_secs(3600));
                let seen = StdMutex::new(Vec::new());
                for id in [1, 1, 2] {
                    occ::retry(&pool, &policy, async |conn, attempt| {
                        let locks = attempt.locks_row::<Counter>(&id);
                        let mut row: Counter = attempt.find(conn, id).await?;
                        // The other writer tries in every attempt, after the read.
                        let blocked = try_plain_increment(&mut *other.lock().await, id).await;
                        seen.lock().unwrap().push((id, attempt.number(), locks, blocked.is_err()));
                        row.increment();
                        row.save_checked(conn).await?;
                        Ok(row)
                    })
                    .await
                    .expect("every operation lands");
                }
                let sqlite = <Conn as AsyncTestConn>::BACKEND == diesel_occ_tests::Backend::Sqlite;
                let row_two: &[(i32, u32, bool, bool)] = if sqlite {
                    // While row 1 is hot every attempt runs in the helper's transaction,
                    // and SQLite's `BEGIN IMMEDIATE` locks the whole database: the other
                    // writer waits, so row 2's first attempt cannot lose.
                    &[(2, 1, false, true)]
                } else {
                    // Row 2 has its own history: cold until its own conflict.
                    &[(2, 1, false, false), (2, 2, true, true)]
                };
                let mut expected = vec![
                    // Row 1 is cold: the first read is lock-free, and loses.
                    (1, 1, false, false),
                    // The conflict made it hot: the retry locks it and wins.
                    (1, 2, true, true),
                    // The next operation locks it from its first read: no attempt lost.
                    (1, 1, true, true),
                ];
                expected.extend_from_slice(row_two);
                assert_eq!(seen.into_inner().unwrap(), expected);
                // Every locking transaction was committed and the locks are gone.
                assert_eq!(load(&mut db.conn().await, 1).await.value, 3);
                assert_eq!(load(&mut db.conn().await, 2).await.value, if sqlite { 1 } else { 2 });
                assert_eq!(try_plain_increment(&mut *other.lock().await, 1).await.expect("unblocked"), 1);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn a_failing_escalated_attempt_leaves_nothing_written() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 2).await;
                let result: Result<(), Error> = occ::retry(
                    &pool,
                    &quick().escalate_after(0),
                    async |conn, attempt| {
                        assert!(attempt.is_escalated());
                        let mut row: Counter = attempt.find(conn, 1).await?;
                        row.increment();
                        row.save_checked(conn).await?;
                        // Not retryable: the loop ends and the transaction rolls back.
                        Err(diesel::result::Error::NotFound.into())
                    },
                )
                .await;
                assert!(matches!(result, Err(Error::Database(_))), "{result:?}");
                let row = load(&mut db.conn().await, 1).await;
                assert_eq!((row.value, row.version), (0, 1), "the saved row was rolled back");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn low_contention_never_escalates() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 2).await;
                for _ in 0..20 {
                    let attempt = occ::retry(&pool, &quick().escalate_after(1), async |conn, attempt| {
                        let mut row: Counter = attempt.find(conn, 1).await?;
                        row.increment();
                        row.save_checked(conn).await?;
                        Ok(attempt)
                    })
                    .await
                    .expect("uncontended");
                    assert_eq!((attempt.number(), attempt.is_escalated()), (1, false));
                }
                assert_eq!(load(&mut db.conn().await, 1).await.value, 20);
            }

            // ---- 6b. an attempt's atomicity and the caller's transaction ----

            /// Makes row `id` hot in `policy`'s memory: one attempt that another writer
            /// overtakes.
            async fn make_hot(db: &AsyncDb<Conn>, pool: &Pool<Conn>, policy: &RetryPolicy, id: i32) {
                let other = Mutex::new(db.conn().await);
                let _ = occ::retry(pool, &policy.clone().max_attempts(1), async |conn, attempt| {
                    let mut row: Counter = attempt.find(conn, id).await?;
                    bump(&mut *other.lock().await, id).await;
                    row.increment();
                    row.save_checked(conn).await
                })
                .await;
                assert!(policy.hot_row_memory().expect("a memory").is_hot::<Counter>(&id));
            }

            /// Writes row 2, then fails to write row 1 (a stale token), inside the
            /// closure's own transaction when `own` is set.
            async fn two_rows(conn: &mut Conn, attempt: &diesel_occ::retry::Attempt, own: bool) -> Result<(), Error> {
                let change = async |conn: &mut Conn| -> Result<(), Error> {
                    let mut cold: Counter = attempt.find(conn, 2).await?;
                    cold.increment();
                    cold.save_checked(conn).await?;
                    let mut hot: Counter = attempt.find(conn, 1).await?;
                    hot.increment();
                    hot.version += 100; // the second write fails
                    hot.save_checked(conn).await
                };
                if own {
                    conn.transaction(change).await
                } else {
                    change(conn).await
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn a_two_row_change_lands_whole_or_not_at_all_as_the_atomicity_rule_says() {
                let db = test_db!();
                seed(&db, 1).await;
                seed(&db, 2).await;
                let pool = warm_pool(&db, 2).await;
                let hot = quick().max_attempts(1).escalate_hot_rows(1, Duration::from_secs(3600));
                make_hot(&db, &pool, &hot, 1).await;
                let values = async || {
                    let mut conn = db.conn().await;
                    (load(&mut conn, 1).await.value, load(&mut conn, 2).await.value)
                };
                let cases = [
                    ("optimistic", quick().max_attempts(1), false),
                    ("optimistic, closure's transaction", quick().max_attempts(1), true),
                    ("escalated", quick().max_attempts(1).escalate_after(0), false),
                    ("escalated, closure's transaction", quick().max_attempts(1).escalate_after(0), true),
                    ("hot row", hot.clone(), false),
                    ("hot row, closure's transaction", hot.clone(), true),
                ];
                for (kind, policy, own) in cases {
                    let before = values().await;
                    let result: Result<(), Error> = occ::retry(&pool, &policy, async |conn, attempt| {
                        two_rows(conn, &attempt, own).await
                    })
                    .await;
                    exhausted(result);
                    let after = values().await;
                    if kind == "optimistic" {
                        // No transaction encloses the writes: the first one stands.
                        assert_eq!(after, (before.0, before.1 + 1), "{kind}");
                    } else {
                        assert_eq!(after, before, "{kind}: neither write");
                    }
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn the_helper_never_ends_the_callers_transaction() {
                let db = test_db!();
                seed(&db, 1).await;
                seed(&db, 2).await;
                let pool = warm_pool(&db, 2).await;
                let policy = quick().escalate_hot_rows(1, Duration::from_secs(3600));
                make_hot(&db, &pool, &policy, 1).await;
                let before = load(&mut db.conn().await, 1).await;

                // A source whose one connection is inside the caller's test transaction.
                struct Held(Mutex<Conn>);
                impl AsyncConnectionSource for Held {
                    type Connection = Conn;
                    type Pooled<'a> = tokio::sync::MutexGuard<'a, Conn> where Self: 'a;
                    async fn checkout(&self) -> Result<Self::Pooled<'_>, diesel_occ::PoolError> {
                        Ok(self.0.lock().await)
                    }
                }
                let mut conn = db.conn().await;
                conn.begin_test_transaction().await.expect("test transaction");
                // The caller's own work, before the helper runs.
                bump(&mut conn, 2).await;
                let held = Held(Mutex::new(conn));
                for (kind, policy) in [
                    ("cold attempt", quick().escalate_hot_rows(1, Duration::from_secs(3600))),
                    ("hot row", policy.clone()),
                    ("escalated", quick().escalate_after(0)),
                ] {
                    let value = occ::retry(&held, &policy, async |conn, attempt| {
                        let mut row: Counter = attempt.find(conn, 1).await?;
                        row.increment();
                        row.save_checked(conn).await?;
                        Ok(row.value)
                    })
                    .await
                    .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
                    let mut conn = held.0.lock().await;
                    let depth = <<Conn as AsyncConnection>::TransactionManager as diesel_async::TransactionManager<Conn>>::transaction_manager_status_mut(&mut conn)
                        .transaction_depth()
                        .expect("a sound transaction manager");
                    assert_eq!(depth.map(|d| d.get()), Some(1), "{kind}: the caller's transaction is still open");
                    assert_eq!(load(&mut conn, 1).await.value, value, "{kind}: seen inside it");
                }
                // Nothing of it is committed: not the caller's write, not the helper's.
                let mut outside = db.conn().await;
                assert_eq!(load(&mut outside, 1).await, before);
                assert_eq!(load(&mut outside, 2).await.value, 0);
            }

            // ---- 7. cancellation ----

            /// The retry future is dropped while its escalated attempt has saved and
            /// holds the lock: the connection is discarded (closed), so the server
            /// rolls back and the lock is free at once.
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn dropping_a_retry_inside_an_escalated_attempt_rolls_back_and_frees_the_lock() {
                let db = test_db!();
                seed(&db, 1).await;
                let pool = warm_pool(&db, 2).await;
                let source = Counting::new(&pool);
                let saved = Arc::new(tokio::sync::Notify::new());
                let policy = quick().escalate_after(0);
                let retry = occ::retry(&source, &policy, async |conn, attempt| {
                    let mut row: Counter = attempt.find(conn, 1).await?;
                    row.increment();
                    row.save_checked(conn).await?;
                    saved.notify_one();
                    std::future::pending::<()>().await;
                    Ok(())
                });
                tokio::select! {
                    _ = retry => panic!("the attempt never ends"),
                    () = saved.notified() => {}
                }
                // The retry future is dropped here, after its save.
                assert_eq!(source.discards(), 1, "the attempt's connection is discarded");
                let mut other = impatient(&db).await;
                let row = load(&mut other, 1).await;
                assert_eq!((row.value, row.version), (0, 1), "nothing committed");
                // Nothing holds the lock any more: an impatient writer gets in at once.
                // (SQLite: the wrapper closes the connection when its blocking task
                // ends; wait for that briefly.)
                let mut tries = 0;
                while let Err(error) = try_plain_increment(&mut other, 1).await {
                    tries += 1;
                    assert!(tries < 20, "the lock outlived the dropped retry: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                assert_eq!(pool.status().size, 1, "the discarded connection left the pool");
                drop(pool.get().await.expect("the pool still hands out connections"));
            }

            /// A retry dropped while the server is still running its attempt's
            /// statement: the attempt's connection is discarded, not returned, so the
            /// pool never hands out a connection whose last response is unread (an
            /// `AsyncMysqlConnection` returned in that state answers the next query
            /// with the previous one's rows).
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn a_retry_dropped_mid_statement_leaves_no_out_of_step_connection_in_the_pool() {
                let db = test_db!();
                seed(&db, 1).await;
                // One connection: whatever the next checkout gets, it is not the old one.
                let pool = warm_pool(&db, 1).await;
                let source = Counting::new(&pool);
                let policy = quick().escalate_after(0);
                let before = connection_id(&mut *pool.get().await.unwrap()).await;
                let cancelled = tokio::time::timeout(
                    Duration::from_millis(100),
                    occ::retry(&source, &policy, async |conn, attempt| {
                        let mut row: Counter = attempt.find(conn, 1).await?;
                        row.increment();
                        row.save_checked(conn).await?;
                        conn.batch_execute(<Conn as AsyncTestConn>::SLOW_STATEMENT).await?;
                        Ok(())
                    }),
                )
                .await;
                assert!(cancelled.is_err(), "the timeout fired mid-statement");
                assert_eq!(source.discards(), 1);
                let mut conn = pool.get().await.expect("a new connection");
                assert_ne!(connection_id(&mut conn).await, before, "not the discarded one");
                for _ in 0..5 {
                    let row = load(&mut conn, 1).await;
                    assert_eq!((row.value, row.version), (0, 1), "the escalated save was rolled back");
                }
            }

            /// The control: a plain diesel-async transaction future, dropped the same
            /// way, keeps its transaction and locks on the connection.
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn control_a_dropped_plain_transaction_keeps_its_lock() {
                let db = test_db!();
                seed(&db, 1).await;
                let mut conn = db.conn().await;
                let saved = Arc::new(tokio::sync::Notify::new());
                let notify = Arc::clone(&saved);
                {
                    let transaction = conn.transaction::<(), Error, _>(async |conn| {
                        let mut row: Counter = Counter::find(conn, 1).await?;
                        row.increment();
                        row.save_checked(conn).await?;
                        notify.notify_one();
                        std::future::pending::<()>().await;
                        Ok(())
                    });
                    tokio::select! {
                        _ = transaction => panic!("never ends"),
                        () = saved.notified() => {}
                    }
                }
                let mut other = impatient(&db).await;
                assert!(
                    try_plain_increment(&mut other, 1).await.is_err(),
                    "the dropped transaction still holds the lock"
                );
                drop(conn);
                let mut tries = 0;
                while try_plain_increment(&mut other, 1).await.is_err() {
                    tries += 1;
                    assert!(tries < 20, "closing the connection frees the lock");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let row = load(&mut other, 1).await;
                assert_eq!((row.value, row.version), (1, 2), "only the other writer's increment");
            }

            /// Futures dropped at arbitrary points: a few hundred saves and retries
            /// under `tokio::time::timeout` with varied short deadlines. After every run
            /// the row holds values and token of whole writes, and the pool still works.
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn cancelled_saves_and_retries_never_leave_a_half_applied_write() {
                const RUNS: u32 = 240;
                let db = test_db!();
                seed(&db, 1).await;
                let pool: Pool<Conn> = warm_pool(&db, 3).await;
                let (mut completed, mut cancelled, mut conflicts) = (0, 0, 0);
                let mut checker = db.conn().await;
                // Deadlines from almost nothing to twice what a whole save takes here
                // and now, so that the cuts fall at every stage on a fast or a busy
                // machine alike.
                let typical = {
                    let mut conn = pool.get().await.expect("pooled connection");
                    let started = Instant::now();
                    for _ in 0..5 {
                        let mut row = load(&mut conn, 1).await;
                        row.increment();
                        row.save_checked(&mut *conn).await.expect("uncontended save");
                    }
                    started.elapsed() / 5
                };
                for run in 0..RUNS {
                    let deadline = Duration::from_micros(20) + typical * ((run * 379) % 200) / 100;
                    let outcome = if run % 2 == 0 {
                        let mut conn = pool.get().await.expect("pooled connection");
                        let outcome = tokio::time::timeout(deadline, async {
                            let mut row = load(&mut conn, 1).await;
                            row.increment();
                            row.save_checked(&mut *conn).await
                        })
                        .await;
                        if outcome.is_err() {
                            // A connection whose query future was dropped must not go
                            // back to the pool: AsyncMysqlConnection can be left out of
                            // step with the server (the next user then fails with
                            // "cannot read a column value"). Detach and close it, as
                            // the retry helper does with a cancelled attempt's.
                            drop(Object::take(conn));
                        }
                        outcome
                    } else {
                        let policy = quick().max_attempts(5).escalate_after(run % 3);
                        tokio::time::timeout(
                            deadline,
                            occ::retry(&pool, &policy, async |conn, attempt| {
                                let mut row: Counter = attempt.find(conn, 1).await?;
                                row.increment();
                                row.save_checked(conn).await
                            }),
                        )
                        .await
                    };
                    match outcome {
                        Ok(Ok(())) => completed += 1,
                        Ok(Err(error)) if error.is_conflict() => conflicts += 1,
                        Ok(Err(error)) => panic!("run {run}: {error:?}"),
                        Err(_elapsed) => cancelled += 1,
                    }
                    load(&mut checker, 1).await.assert_whole();
                }
                // Writes whose futures were dropped after sending may land late; they
                // land whole, too.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let before = load(&mut checker, 1).await;
                before.assert_whole();
                assert!(before.value >= completed + 5, "every acknowledged write is stored");
                let after = occ::retry(&pool, &quick().max_attempts(10), async |conn, attempt| {
                    let mut row: Counter = attempt.find(conn, 1).await?;
                    row.increment();
                    row.save_checked(conn).await?;
                    Ok(row)
                })
                .await
                .expect("the pool is usable after all that");
                after.assert_whole();
                assert!(pool.status().size <= 3);
                eprintln!(
                    "{}: {RUNS} cancellation runs (a save takes {typical:?}): {completed} completed, {cancelled} cancelled, {conflicts} conflicts; {} writes stored",
                    stringify!($backend),
                    before.value - 5
                );
                assert!(cancelled > 0, "some deadlines cut the work short");
            }

            // ---- 8. observability ----

            #[test]
            fn conflicts_and_retries_are_traced_and_counted() {
                use crate::observe::{Captured, Totals};
                use diesel_occ::observe::{CONFLICTS_TOTAL, RETRIES_EXHAUSTED_TOTAL, RETRIES_TOTAL};

                let setup = tokio::runtime::Runtime::new().expect("runtime");
                let Some(db) = setup.block_on(async {
                    let db = AsyncDb::<Conn>::create(concat!(stringify!($backend), "_observe")).await?;
                    seed(&db, 1).await;
                    Some(db)
                }) else {
                    return;
                };
                let captured = Captured::default();
                let totals = Totals::default();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                let policy = RetryPolicy::new()
                    .max_attempts(2)
                    .backoff(Duration::from_millis(5), Duration::from_millis(5));
                captured.run(&totals, || {
                    runtime.block_on(async {
                        let pool = warm_pool(&db, 2).await;
                        let other = Mutex::new(db.conn().await);
                        // One conflict, then success on the second attempt.
                        let value = occ::retry(&pool, &policy, async |conn, attempt| {
                            let mut row: Counter = attempt.find(conn, 1).await?;
                            if attempt.is_first() {
                                bump(&mut *other.lock().await, 1).await;
                            }
                            row.increment();
                            row.save_checked(conn).await?;
                            Ok(row.value)
                        })
                        .await
                        .expect("second attempt");
                        assert_eq!(value, 2);
                        // A perpetual conflict: exhausted after two attempts.
                        let result: Result<(), Error> = occ::retry(&pool, &policy, async |conn, attempt| {
                            let mut row: Counter = attempt.find(conn, 1).await?;
                            bump(&mut *other.lock().await, 1).await;
                            row.increment();
                            row.save_checked(conn).await
                        })
                        .await;
                        assert_eq!(exhausted(result).attempts(), 2);
                    })
                });

                let events = captured.events();
                let conflicts = captured.named("occ conflict");
                assert_eq!(conflicts.len(), 3, "{events:#?}");
                for conflict in &conflicts {
                    assert_eq!(conflict.field("table"), "counters");
                    assert_eq!(conflict.field("key"), "(id=1)");
                    assert_eq!(conflict.field("operation"), "update");
                    assert_eq!(conflict.field("outcome"), "stale");
                    assert_eq!(conflict.level, tracing::Level::DEBUG);
                }
                assert_eq!(
                    conflicts.iter().map(|c| c.span_field("occ.attempt", "attempt")).collect::<Vec<_>>(),
                    ["1", "1", "2"],
                    "each conflict inside its attempt's span"
                );
                let retries = captured.named("occ retry");
                assert_eq!(retries.len(), 2, "{events:#?}");
                for retry in &retries {
                    assert_eq!(retry.field("table"), "counters");
                    assert_eq!(retry.field("key"), "(id=1)");
                    assert_eq!(retry.field("attempt"), "1");
                    assert_eq!(retry.field("outcome"), "stale");
                    assert_eq!(retry.field("escalate"), "false");
                    let backoff: u64 = retry.field("backoff_ms").parse().expect("backoff_ms");
                    assert!(backoff <= 5, "full jitter within the 5 ms ceiling: {backoff}");
                }
                let succeeded = captured.named("occ retry succeeded");
                assert_eq!(succeeded.len(), 1);
                assert_eq!(succeeded[0].field("attempts"), "2");
                let gave_up = captured.named("occ retries exhausted");
                assert_eq!(gave_up.len(), 1);
                assert_eq!(gave_up[0].level, tracing::Level::WARN);
                for (field, value) in [
                    ("table", "counters"),
                    ("key", "(id=1)"),
                    ("attempts", "2"),
                    ("outcome", "stale"),
                    ("deadline_reached", "false"),
                ] {
                    assert_eq!(gave_up[0].field(field), value, "{field}");
                }
                // The writes inside attempts: the other writer's 3, and the winning save.
                let applied = captured.named("occ write applied");
                assert_eq!(applied.len(), 4, "{events:#?}");
                assert!(applied.iter().all(|e| e.field("table") == "counters"));

                assert_eq!(
                    totals.snapshot(),
                    [
                        (format!("{CONFLICTS_TOTAL}{{table=counters,operation=update}}"), 3),
                        (format!("{RETRIES_EXHAUSTED_TOTAL}{{table=counters}}"), 1),
                        (format!("{RETRIES_TOTAL}{{table=counters}}"), 2),
                    ]
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>()
                );
            }
        }
    };
}
