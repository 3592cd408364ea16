//! The async API on `SyncConnectionWrapper<SqliteConnection>`, driven by SQLite files:
//! checked operations, the retry loop, escalation and cancellation.

use std::future::Future;
use std::time::Duration;

use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use diesel_async::AsyncConnection;
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;

use super::{AsyncConnectionSource, AttemptDsl, CheckedDsl, EntityDsl, retry};
use crate::error::{Error, Operation};
use crate::retry::RetryPolicy;
use crate::test_support::{Counted, Counters, Stock, TestDb, interfere, stock};

type Conn = SyncConnectionWrapper<SqliteConnection>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn quick() -> RetryPolicy {
    RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO)
}

/// Fails to compile unless the future is `Send`.
fn assert_send<F: Future + Send>(future: F) -> F {
    future
}

/// An async source that connects for every checkout and counts.
struct CountingSource {
    url: String,
    counters: Counters,
}

impl CountingSource {
    fn new(db: &TestDb) -> Self {
        CountingSource {
            url: db.url.clone(),
            counters: Counters::default(),
        }
    }
}

impl AsyncConnectionSource for CountingSource {
    type Connection = Conn;
    type Pooled<'a> = Counted<Conn>;

    async fn checkout(&self) -> Result<Counted<Conn>, crate::PoolError> {
        let conn = Conn::establish(&self.url).await?;
        Ok(self.counters.checkout(conn))
    }

    fn discard(&self, pooled: Counted<Conn>) {
        self.counters.discard(pooled);
    }
}

#[test]
fn checked_operations_have_the_sync_semantics() {
    let db = TestDb::new();
    runtime().block_on(async {
        let mut conn = Conn::establish(&db.url).await.expect("connect");
        let mut mine = assert_send(Stock::find(&mut conn, 1)).await.expect("find");
        let mut theirs = Stock::find(&mut conn, 1).await.expect("find");

        theirs.available -= 1;
        assert_send(theirs.save_checked(&mut conn))
            .await
            .expect("first save wins");
        assert_eq!(theirs.version, 2);

        mine.available -= 2;
        let before = mine.clone();
        let error = mine.save_checked(&mut conn).await.unwrap_err();
        let conflict = error.as_conflict().expect("a conflict");
        assert_eq!(conflict.operation(), Operation::Update);
        assert_eq!(conflict.current::<i32>(), Some(2));
        assert_eq!(mine, before, "the loser is left as it was");

        let stale = Stock::find_checked(&mut conn, 1, &1).await.unwrap_err();
        assert_eq!(
            stale.as_conflict().map(|c| c.operation()),
            Some(Operation::ClientToken)
        );
        let current = assert_send(Stock::find_checked(&mut conn, 1, &2))
            .await
            .expect("current token");
        assert_eq!(current, theirs);

        let deleted = mine.delete_checked(&mut conn).await.unwrap_err();
        assert!(!deleted.as_conflict().unwrap().is_deleted());
        assert_send(theirs.delete_checked(&mut conn))
            .await
            .expect("delete with the current token");
        let gone = theirs.delete_checked(&mut conn).await.unwrap_err();
        assert!(gone.as_conflict().unwrap().is_deleted());
        assert!(Stock::find(&mut conn, 1).await.unwrap_err().is_not_found());
    });
}

#[test]
fn a_perpetual_conflict_exhausts_after_exactly_max_attempts_each_on_a_fresh_connection() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let result: Result<(), Error> = runtime().block_on(assert_send(retry(
        &source,
        &quick().max_attempts(3),
        async |conn, attempt| {
            assert_eq!(source.counters.checkouts(), attempt.number());
            assert_eq!(source.counters.live(), 1);
            let mut stock: Stock = attempt.find(conn, 1).await?;
            interfere(&db);
            stock.available -= 1;
            stock.save_checked(conn).await
        },
    )));
    let Err(Error::RetriesExhausted(exhausted)) = result else {
        panic!("expected exhaustion, got {result:?}");
    };
    assert_eq!(exhausted.attempts(), 3);
    assert_eq!(exhausted.last_conflict().unwrap().current::<i32>(), Some(4));
    assert_eq!(source.counters.checkouts(), 3);
    assert_eq!(source.counters.live(), 0);
    assert_eq!(source.counters.discards(), 0);
    assert_eq!(db.stock().available, 10);
}

#[test]
fn a_domain_outcome_ends_the_loop_and_backoff_sleeps_on_tokio() {
    #[derive(Debug, PartialEq)]
    struct SoldOut;

    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let policy = RetryPolicy::new().backoff(Duration::from_millis(1), Duration::from_millis(2));
    let want = 4;
    let outcome = runtime().block_on(retry(&source, &policy, async |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1).await?;
        if stock.available < want {
            return Ok(Err(SoldOut));
        }
        if attempt.is_first() {
            interfere(&db);
        }
        stock.available -= want;
        stock.save_checked(conn).await?;
        Ok(Ok(stock.available))
    }));
    assert_eq!(outcome.expect("no database error"), Ok(6));
    assert_eq!(source.counters.checkouts(), 2);
}

#[test]
fn an_escalated_attempt_holds_the_write_lock_and_commits() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let result = runtime().block_on(retry(
        &source,
        &quick().escalate_after(1),
        async |conn, attempt| {
            let mut stock: Stock = attempt.find(conn, 1).await?;
            // Another writer, between our read and our save.
            let outsider = diesel::update(stock::table.find(1))
                .set((
                    stock::available.eq(5),
                    stock::version.eq(stock::version + 1),
                ))
                .execute(&mut db.connect())
                .map_err(Error::from);
            if attempt.is_escalated() {
                let busy = outsider.expect_err("BEGIN IMMEDIATE holds the write lock");
                assert_eq!(busy.transient_kind(), Some(crate::TransientKind::Busy));
            } else {
                outsider.expect("no lock before escalation");
            }
            stock.available -= 1;
            stock.save_checked(conn).await?; // conflicts on the first attempt only
            Ok((attempt.number(), stock))
        },
    ));
    let (attempts, saved) = result.expect("the escalated attempt wins");
    assert_eq!(attempts, 2);
    assert_eq!(
        saved,
        Stock {
            id: 1,
            available: 4,
            version: 3
        }
    );
    assert_eq!(db.stock(), saved, "committed");
    assert_eq!(source.counters.discards(), 0);
}

#[test]
fn dropping_the_retry_future_mid_attempt_rolls_back_and_releases_the_lock_at_once() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let rt = runtime();
    let cancelled = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_millis(100),
            retry(
                &source,
                &quick().escalate_after(0),
                async |conn, attempt| -> Result<(), Error> {
                    let mut stock: Stock = attempt.find(conn, 1).await?;
                    stock.available -= 1;
                    stock.save_checked(conn).await?;
                    // Written, not committed; the caller gives up here.
                    std::future::pending::<()>().await;
                    Ok(())
                },
            ),
        )
        .await
    });
    assert!(cancelled.is_err(), "the timeout fired");
    assert_eq!(
        source.counters.discards(),
        1,
        "the connection was discarded"
    );
    assert_eq!(source.counters.live(), 0);
    // Rolled back, and the write lock is free for the next writer right away.
    assert_eq!(db.stock().available, 10);
    diesel::update(stock::table.find(1))
        .set(stock::available.eq(9))
        .execute(&mut db.connect())
        .expect("no lock left behind");
}

/// What the retry helper protects against: diesel-async leaves a cancelled
/// transaction open on its connection, holding its locks while the connection lives.
#[test]
fn a_cancelled_diesel_async_transaction_stays_open_on_its_connection() {
    let db = TestDb::new();
    let rt = runtime();
    rt.block_on(async {
        let mut conn = Conn::establish(&db.url).await.expect("connect");
        let cancelled = tokio::time::timeout(
            Duration::from_millis(50),
            conn.transaction(async |conn| -> Result<(), Error> {
                let mut stock = Stock::find(conn, 1).await?;
                stock.available -= 1;
                stock.save_checked(conn).await?;
                std::future::pending::<()>().await;
                Ok(())
            }),
        )
        .await;
        assert!(cancelled.is_err());
        let blocked = diesel::update(stock::table.find(1))
            .set(stock::available.eq(9))
            .execute(&mut db.connect())
            .map_err(Error::from);
        assert_eq!(
            blocked.map_err(|e| e.transient_kind()),
            Err(Some(crate::TransientKind::Busy)),
            "the dropped transaction still holds SQLite's write lock"
        );
        drop(conn);
        assert_eq!(
            db.stock().available,
            10,
            "closing the connection rolled back"
        );
    });
}

#[cfg(feature = "deadpool")]
#[test]
fn a_deadpool_pool_is_a_source_and_cancelled_objects_leave_the_pool() {
    use diesel_async::pooled_connection::AsyncDieselConnectionManager;
    use diesel_async::pooled_connection::deadpool::Pool;

    let db = TestDb::new();
    let rt = runtime();
    let pool: Pool<Conn> = Pool::builder(AsyncDieselConnectionManager::<Conn>::new(&db.url))
        .max_size(2)
        .build()
        .expect("pool");

    let attempts = rt
        .block_on(retry(&pool, &quick(), async |conn, attempt| {
            let mut stock: Stock = attempt.find(conn, 1).await?;
            if attempt.is_first() {
                interfere(&db);
            }
            stock.available -= 1;
            stock.save_checked(conn).await?;
            Ok(attempt.number())
        }))
        .expect("the second attempt wins");
    assert_eq!(attempts, 2);
    assert_eq!(pool.status().size, 1, "one connection, reused and returned");

    let cancelled = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_millis(100),
            retry(
                &pool,
                &quick().escalate_after(0),
                async |conn, attempt| -> Result<(), Error> {
                    let _: Stock = attempt.find(conn, 1).await?;
                    std::future::pending::<()>().await;
                    Ok(())
                },
            ),
        )
        .await
    });
    assert!(cancelled.is_err());
    assert_eq!(
        pool.status().size,
        0,
        "the cancelled attempt's object was detached"
    );
    diesel::update(stock::table.find(1))
        .set(stock::available.eq(1))
        .execute(&mut db.connect())
        .expect("no lock left behind");
}

/// `retry_in_blocking_task`: the blocking closure, one blocking call per attempt, each on
/// a fresh connection; the conflict retries and the escalated attempt commits.
#[cfg(feature = "async-tuning")]
#[test]
fn the_blocking_task_retry_runs_the_blocking_closure_once_per_attempt() {
    use crate::blocking::AttemptDsl as BlockingAttemptDsl;
    use crate::blocking::CheckedDsl as BlockingCheckedDsl;

    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let url = db.url.clone();
    let policy = quick().escalate_after(1);
    let outcome = runtime().block_on(assert_send(super::retry_in_blocking_task(
        &source,
        &policy,
        move |conn, attempt| {
            let mut stock: Stock = BlockingAttemptDsl::find(&attempt, conn, 1)?;
            if attempt.is_first() {
                // Another writer between the read and the save: a conflict.
                diesel::update(stock::table.find(1))
                    .set(stock::version.eq(stock::version + 1))
                    .execute(&mut SqliteConnection::establish(&url).expect("other writer"))
                    .expect("interfering write");
            } else {
                assert!(
                    attempt.runs_in_transaction(),
                    "escalated after one conflict"
                );
            }
            stock.available -= 1;
            BlockingCheckedDsl::save_checked(&mut stock, conn)?;
            Ok((attempt.number(), stock.available))
        },
    )));
    assert_eq!(outcome.expect("second attempt saves"), (2, 9));
    assert_eq!(source.counters.checkouts(), 2);
    assert_eq!(source.counters.live(), 0);
    assert_eq!(source.counters.discards(), 0);
    assert_eq!(db.stock().available, 9);
}

/// `BlockInPlace` runs the wrapper's calls on the task's thread on a multi-threaded
/// runtime, and on the blocking pool on a current-thread one; the checked API works on
/// it as on diesel-async's default wrapper.
#[cfg(feature = "async-tuning")]
#[test]
fn block_in_place_runs_calls_on_the_tasks_thread_where_it_can() {
    use diesel_async::sync_connection_wrapper::SpawnBlocking;

    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("multi-threaded runtime");
    let (here, there) = multi.block_on(async {
        tokio::spawn(async {
            let here = std::thread::current().id();
            let there = super::BlockInPlace
                .spawn_blocking(|| std::thread::current().id())
                .await
                .expect("ran");
            (here, there)
        })
        .await
        .expect("task")
    });
    assert_eq!(here, there, "in place on a multi-threaded runtime");
    let (here, there) = runtime().block_on(async {
        let here = std::thread::current().id();
        let there = super::BlockInPlace
            .spawn_blocking(|| std::thread::current().id())
            .await
            .expect("ran");
        (here, there)
    });
    assert_ne!(
        here, there,
        "on the blocking pool on a current-thread runtime"
    );

    let db = TestDb::new();
    let url = db.url.clone();
    multi.block_on(async move {
        type InPlace = SyncConnectionWrapper<SqliteConnection, super::BlockInPlace>;
        let source = || InPlace::establish(&url);
        let saved = retry(&source, &quick(), async |conn, attempt| {
            let mut stock: Stock = attempt.find(conn, 1).await?;
            stock.available -= 1;
            stock.save_checked(conn).await?;
            Ok(stock.available)
        })
        .await
        .expect("saves");
        assert_eq!(saved, 9);
    });
    assert_eq!(db.stock().available, 9);
}

/// The async backoff pause averages the pause the policy drew, as `thread::sleep`
/// does, though Tokio's timer rounds every sleep up to the next millisecond.
#[test]
fn sub_millisecond_backoffs_average_what_the_policy_drew() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let asked = Duration::from_micros(300);
    let runs = 200;
    let took = rt.block_on(async {
        let started = std::time::Instant::now();
        for _ in 0..runs {
            super::retry::pause(asked).await;
        }
        started.elapsed() / runs
    });
    // A plain `tokio::time::sleep(300 µs)` lasts 1 ms or more.
    assert!(
        took < Duration::from_micros(900),
        "{took:?} per 300 µs pause"
    );
}

/// `verify_when_idle`: a connection back from work within the window is handed out
/// without a test query; one idle for the window (zero here) is tested first.
#[cfg(all(feature = "async-tuning", feature = "deadpool"))]
#[test]
fn verify_when_idle_tests_only_a_connection_that_sat_idle() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use diesel::connection::InstrumentationEvent;
    use diesel_async::pooled_connection::deadpool::Pool;
    use diesel_async::pooled_connection::{
        AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
    };

    let db = TestDb::new();
    let statements = Arc::new(AtomicUsize::new(0));
    let pool = |idle: Duration| {
        let mut config = ManagerConfig::<Conn>::default();
        config.recycling_method = RecyclingMethod::Fast;
        let counted = Arc::clone(&statements);
        config.custom_setup = Box::new(move |url| {
            let counted = Arc::clone(&counted);
            Box::pin(async move {
                let mut conn = Conn::establish(url).await?;
                conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
                    if matches!(event, InstrumentationEvent::StartQuery { .. }) {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                });
                Ok(conn)
            })
        });
        let manager = AsyncDieselConnectionManager::<Conn>::new_with_config(&db.url, config);
        Pool::builder(manager)
            .max_size(1)
            .pre_recycle(super::verify_when_idle(idle))
            .build()
            .expect("a pool")
    };
    runtime().block_on(async {
        let recent = pool(Duration::from_secs(3600));
        for _ in 0..3 {
            drop(recent.get().await.expect("a connection"));
        }
        assert_eq!(
            statements.load(Ordering::SeqCst),
            0,
            "used within the window: no test query"
        );
        let idle = pool(Duration::ZERO);
        for _ in 0..3 {
            drop(idle.get().await.expect("a connection"));
        }
        assert_eq!(
            statements.load(Ordering::SeqCst),
            2,
            "idle for the window: tested at each checkout but the first (a new connection)"
        );
    });
}
