//! The blocking retry helper, driven by SQLite files: real conflicts, real lock errors.

use std::cell::RefCell;
use std::time::Duration;

use diesel::prelude::*;

use super::{Attempt, AttemptDsl, RetryPolicy, retry};
use crate::blocking::{CheckedDsl, EntityDsl};
use crate::error::{Error, Operation, PoolErrorKind};
use crate::test_support::{CountingSource, Stock, TestDb, interfere, stock};

fn quick() -> RetryPolicy {
    RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO)
}

#[derive(Debug, PartialEq)]
struct SoldOut;

#[test]
fn a_perpetual_conflict_exhausts_after_exactly_max_attempts_each_on_a_fresh_connection() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let mut seen = Vec::new();
    let result: Result<(), Error> = retry(&source, &quick().max_attempts(4), |conn, attempt| {
        seen.push((
            attempt.number(),
            source.counters.checkouts(),
            source.counters.live(),
        ));
        let mut stock: Stock = attempt.find(conn, 1)?;
        interfere(&db);
        stock.available -= 1;
        stock.save_checked(conn)
    });

    let Err(Error::RetriesExhausted(exhausted)) = result else {
        panic!("expected exhaustion, got {result:?}");
    };
    assert_eq!(exhausted.attempts(), 4);
    assert!(!exhausted.deadline_reached());
    let conflict = exhausted
        .last_conflict()
        .expect("the last error is the conflict");
    assert_eq!(conflict.operation(), Operation::Update);
    assert_eq!(conflict.current::<i32>(), Some(5));
    // One checkout per attempt, one connection alive during each, none after.
    assert_eq!(seen, [(1, 1, 1), (2, 2, 1), (3, 3, 1), (4, 4, 1)]);
    assert_eq!(source.counters.checkouts(), 4);
    assert_eq!(source.counters.live(), 0);
    assert_eq!(source.counters.discards(), 0);
    // Nothing of the failed attempts was written: only the interfering writes.
    assert_eq!(
        db.stock(),
        Stock {
            id: 1,
            available: 10,
            version: 5
        }
    );
}

#[test]
fn conflicts_are_retried_until_an_attempt_wins_with_a_fresh_read() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let result = retry(&source, &quick(), |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        if attempt.number() < 3 {
            interfere(&db);
        }
        stock.available -= 1;
        stock.save_checked(conn)?;
        Ok((attempt.number(), stock))
    });
    let (attempts, saved) = result.expect("the third attempt wins");
    assert_eq!(attempts, 3);
    // The winner read version 3 (after two interfering writes) and wrote version 4.
    assert_eq!(
        saved,
        Stock {
            id: 1,
            available: 9,
            version: 4
        }
    );
    assert_eq!(db.stock(), saved);
    assert_eq!(source.counters.checkouts(), 3);
}

#[test]
fn a_domain_outcome_ends_the_loop_on_the_first_attempt() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let result = retry(&source, &quick(), |conn, attempt| {
        let stock: Stock = attempt.find(conn, 1)?;
        if stock.available < 50 {
            return Ok(Err(SoldOut));
        }
        Ok(Ok(stock))
    });
    assert_eq!(result.expect("no database error"), Err(SoldOut));
    assert_eq!(source.counters.checkouts(), 1);
}

#[test]
fn errors_that_retrying_cannot_fix_end_the_loop_at_once() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);

    let missing = retry(&source, &quick(), |conn, attempt| {
        attempt.find::<Stock>(conn, 404)
    });
    assert!(matches!(missing, Err(Error::NotFound(_))), "{missing:?}");

    // A stale client token stays stale however often the row is re-read.
    let stale = retry(&source, &quick(), |conn, _| {
        Stock::find_checked(conn, 1, &0)
    });
    match stale {
        Err(Error::Conflict(conflict)) => assert_eq!(conflict.operation(), Operation::ClientToken),
        other => panic!("expected the client-token conflict, got {other:?}"),
    }

    let constraint = retry(&source, &quick(), |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        stock.available = -1; // CHECK (available >= 0)
        stock.save_checked(conn)
    });
    assert!(
        matches!(&constraint, Err(Error::Database(e)) if e.transient().is_none()),
        "{constraint:?}"
    );
    assert_eq!(source.counters.checkouts(), 3);
}

#[test]
fn a_busy_database_is_retried() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    // Another connection holds SQLite's write lock during the first attempt.
    let holder = RefCell::new(db.connect());
    diesel::sql_query("BEGIN IMMEDIATE")
        .execute(&mut *holder.borrow_mut())
        .expect("take the write lock");

    let mut errors = Vec::new();
    let result = retry(&source, &quick(), |conn, attempt| {
        if attempt.number() == 2 {
            diesel::sql_query("COMMIT")
                .execute(&mut *holder.borrow_mut())
                .expect("release the write lock");
        }
        let mut stock: Stock = attempt.find(conn, 1)?;
        stock.available -= 2;
        stock
            .save_checked(conn)
            .inspect_err(|e| errors.push(e.transient_kind()))?;
        Ok(attempt.number())
    });
    assert_eq!(result.expect("the second attempt wins"), 2);
    assert_eq!(errors, [Some(crate::TransientKind::Busy)]);
    assert_eq!(db.stock().available, 8);
}

#[test]
fn an_escalated_attempt_holds_the_write_lock_from_the_read_to_the_commit() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let policy = quick().escalate_after(1);
    let mut outsider_errors = Vec::new();
    let result = retry(&source, &policy, |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        if attempt.is_escalated() {
            // BEGIN IMMEDIATE: nobody else can write between our read and our save.
            let outsider = diesel::update(stock::table.find(1))
                .set(stock::available.eq(0))
                .execute(&mut db.connect());
            outsider_errors.push(outsider.map_err(|e| Error::from(e).transient_kind()));
        } else {
            interfere(&db);
        }
        stock.available -= 1;
        stock.save_checked(conn)?;
        Ok(attempt)
    });
    let attempt: Attempt = result.expect("the escalated attempt wins");
    assert_eq!((attempt.number(), attempt.is_escalated()), (2, true));
    assert_eq!(outsider_errors, [Err(Some(crate::TransientKind::Busy))]);
    // Committed: visible on another connection.
    assert_eq!(
        db.stock(),
        Stock {
            id: 1,
            available: 9,
            version: 3
        }
    );
    assert_eq!(source.counters.discards(), 0);
}

#[test]
fn an_escalated_attempt_that_fails_is_rolled_back() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let policy = quick().max_attempts(2).escalate_after(0);
    let result: Result<(), Error> = retry(&source, &policy, |conn, attempt| {
        assert!(attempt.is_escalated());
        let mut stock: Stock = attempt.find(conn, 1)?;
        stock.available -= 1;
        stock.save_checked(conn)?;
        // Written inside the transaction, then a conflict on another row's write.
        Err(crate::ConcurrencyConflict::new(
            "stock",
            crate::EntityKey::new(&["id"], vec!["2".into()]),
            Operation::Update,
            crate::VersionToken::to_value(&1_i32),
            crate::ConflictState::Deleted,
        )
        .into())
    });
    assert!(
        matches!(result, Err(Error::RetriesExhausted(_))),
        "{result:?}"
    );
    // Both attempts' saves were rolled back.
    assert_eq!(db.stock().available, 10);
    assert_eq!(db.stock().version, 1);
    assert_eq!(source.counters.discards(), 0);
}

/// Another writer tries to take row 1's token on a connection of its own; false when
/// the database refuses it because the attempt holds the write lock.
fn outsider_gets_in(db: &TestDb) -> bool {
    let write = diesel::update(stock::table.find(1))
        .set(stock::version.eq(stock::version + 1))
        .execute(&mut db.connect());
    match write {
        Ok(rows) => rows == 1,
        Err(error) => {
            let kind = Error::from(error).transient_kind();
            assert_eq!(
                kind,
                Some(crate::TransientKind::Busy),
                "only the lock refuses it"
            );
            false
        }
    }
}

#[test]
fn after_a_conflict_a_hot_row_is_locked_from_the_first_read_of_every_operation() {
    let db = TestDb::new();
    diesel::sql_query("INSERT INTO stock VALUES (2, 10, 1)")
        .execute(&mut db.connect())
        .expect("a second, cold row");
    let source = CountingSource::new(&db);
    let policy = quick().escalate_hot_rows(1, Duration::from_secs(3600));
    let seen = RefCell::new(Vec::new());
    let reserve = |id: i32| {
        retry(&source, &policy, |conn, attempt| {
            let locks = attempt.locks_row::<Stock>(&id);
            let mut stock: Stock = attempt.find(conn, id)?;
            // The other writer tries after every read.
            let got_in = outsider_gets_in(&db);
            seen.borrow_mut()
                .push((id, attempt.number(), locks, got_in));
            stock.available -= 1;
            stock.save_checked(conn)?;
            Ok(stock.available)
        })
    };

    assert_eq!(reserve(1).expect("the second attempt wins"), 9);
    assert_eq!(reserve(1).expect("the first attempt wins"), 8);
    assert_eq!(reserve(2).expect("a cold row"), 9);
    assert_eq!(
        seen.take(),
        [
            // Row 1 is cold: the first read takes no lock, the other writer gets in.
            (1, 1, false, true),
            // The conflict made it hot: the retry locks it at once, and wins.
            (1, 2, true, false),
            // The next operation on row 1 locks it from its first read.
            (1, 1, true, false),
            // Row 2 never conflicted: its read takes no lock. But while row 1 is hot
            // every attempt runs in the helper's transaction, and SQLite's
            // `BEGIN IMMEDIATE` locks the whole database: the other writer waits.
            (2, 1, false, false),
        ]
    );
    // Every locking transaction was committed: visible on another connection, and
    // every connection went back clean.
    assert_eq!(db.stock().available, 8);
    assert_eq!(source.counters.discards(), 0);
    assert!(outsider_gets_in(&db), "no lock is left behind");
}

#[test]
fn two_policies_on_the_same_table_and_key_never_share_a_hot_row() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let hour = Duration::from_secs(3600);
    let first = quick().escalate_hot_rows(1, hour);
    let second = quick().escalate_hot_rows(1, hour);
    let shared = quick().escalate_hot_rows_with(
        first
            .hot_row_memory()
            .expect("a hot-row policy has a memory"),
        1,
        hour,
    );
    // A conflict on row 1 under the first policy makes it hot there.
    let mut conflicted = false;
    retry(&source, &first, |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        if !conflicted {
            conflicted = true;
            interfere(&db);
        }
        stock.available -= 1;
        stock.save_checked(conn)
    })
    .expect("the retry wins");
    assert!(conflicted);

    let locks = |policy: &RetryPolicy| {
        retry(&source, policy, |conn, attempt| {
            let locks = attempt.locks_row::<Stock>(&1);
            let _: Stock = attempt.find(conn, 1)?;
            Ok((locks, outsider_gets_in(&db)))
        })
        .expect("a read")
    };
    assert_eq!(locks(&first), (true, false), "hot under the first policy");
    assert_eq!(locks(&first.clone()), (true, false), "and its clones");
    assert_eq!(
        locks(&shared),
        (true, false),
        "and a policy given its memory"
    );
    assert_eq!(
        locks(&second),
        (false, true),
        "the same table and key are cold under another policy"
    );
    assert_eq!(source.counters.discards(), 0);
}

#[test]
fn a_row_turns_hot_only_at_the_threshold_of_conflicts() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let policy = quick().escalate_hot_rows(2, Duration::from_secs(3600));
    let mut seen = Vec::new();
    let result = retry(&source, &policy, |conn, attempt| {
        let locks = attempt.locks_row::<Stock>(&1);
        let mut stock: Stock = attempt.find(conn, 1)?;
        seen.push((attempt.number(), locks, outsider_gets_in(&db)));
        stock.available -= 1;
        stock.save_checked(conn)?;
        Ok(())
    });
    result.expect("the third attempt wins");
    assert_eq!(
        seen,
        [
            // One conflict is not enough...
            (1, false, true),
            // ...the second makes the row hot, and the next attempt locks it.
            (2, false, true),
            (3, true, false),
        ]
    );
    assert_eq!(db.stock().available, 9);
}

#[test]
fn a_hot_row_attempt_that_fails_is_rolled_back() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let policy = quick()
        .max_attempts(1)
        .escalate_hot_rows(1, Duration::from_secs(3600));
    // Make row 1 hot with a conflict.
    let warm_up: Result<(), Error> = retry(&source, &policy, |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        interfere(&db);
        stock.save_checked(conn)?;
        Ok(())
    });
    assert!(
        matches!(warm_up, Err(Error::RetriesExhausted(_))),
        "{warm_up:?}"
    );
    let before = db.stock();

    let result: Result<(), Error> = retry(&source, &policy, |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        assert!(!outsider_gets_in(&db), "the hot row is locked");
        stock.available -= 1;
        stock.save_checked(conn)?;
        Err(Error::from(diesel::result::Error::NotFound))
    });
    assert!(matches!(result, Err(Error::Database(_))), "{result:?}");
    assert_eq!(db.stock(), before, "the save was rolled back");
    assert_eq!(source.counters.discards(), 0);
}

#[test]
fn a_checkout_failure_is_a_pool_error_without_the_url() {
    let source = || SqliteConnection::establish("/nonexistent/dir/secret-name.sqlite");
    let result: Result<(), Error> = retry(&source, &quick(), |_, _| Ok(()));
    let Err(Error::Pool(error)) = result else {
        panic!("expected a pool error, got {result:?}");
    };
    assert_eq!(error.kind(), PoolErrorKind::Connect);
    assert!(!error.to_string().contains("secret"), "{error}");
    assert!(!format!("{error:?}").contains("secret"), "{error:?}");
    // The cause is still there for those who look.
    assert!(std::error::Error::source(&error).is_some());
}

#[test]
fn the_deadline_ends_a_loop_that_keeps_conflicting() {
    let db = TestDb::new();
    let source = CountingSource::new(&db);
    let policy = RetryPolicy::new()
        .max_attempts(1_000)
        .backoff(Duration::from_millis(5), Duration::from_millis(5))
        .deadline(Duration::from_millis(60));
    let started = std::time::Instant::now();
    let result: Result<(), Error> = retry(&source, &policy, |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        interfere(&db);
        stock.available -= 1;
        stock.save_checked(conn)
    });
    let elapsed = started.elapsed();
    let Err(Error::RetriesExhausted(exhausted)) = result else {
        panic!("expected exhaustion, got {result:?}");
    };
    assert!(exhausted.deadline_reached());
    assert!(exhausted.attempts() < 1_000);
    // It retried, unless the first attempt alone left no room for a 5 ms backoff (a
    // loaded machine): the loop gives up only once `elapsed + backoff` reaches 60 ms.
    assert!(
        exhausted.attempts() > 1 || elapsed + Duration::from_millis(5) >= Duration::from_millis(60),
        "gave up after one attempt in {elapsed:?}"
    );
    assert_eq!(source.counters.checkouts(), exhausted.attempts());
    // It gave up when the next backoff would have crossed the deadline, not after.
    assert!(
        elapsed < Duration::from_millis(60) + Duration::from_secs(1),
        "{elapsed:?}"
    );
}

#[cfg(feature = "r2d2")]
#[test]
fn an_r2d2_pool_is_a_source() {
    use diesel::r2d2::{ConnectionManager, Pool};

    let db = TestDb::new();
    let pool = Pool::builder()
        .max_size(2)
        .build(ConnectionManager::<SqliteConnection>::new(&db.url))
        .expect("pool");
    let result = retry(&pool, &quick().escalate_after(1), |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        if attempt.is_first() {
            interfere(&db);
        }
        stock.available -= 3;
        stock.save_checked(conn)?;
        Ok(attempt.number())
    });
    assert_eq!(result.expect("the escalated attempt wins"), 2);
    assert_eq!(db.stock().available, 7);
}

#[cfg(feature = "metrics")]
mod counters {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use metrics::{
        Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
        SharedString, Unit,
    };

    use super::*;
    use crate::observe::{
        ATTEMPTS, CONFLICTS, OPERATION_DURATION, RETRIES, RETRIES_EXHAUSTED, RETRY_DURATION,
    };

    /// Counter values, and how many values each histogram recorded, by
    /// `name{label=value,...}`.
    #[derive(Default, Clone)]
    struct Totals(Arc<Mutex<BTreeMap<String, u64>>>);

    /// `name{label=value,...}` of a metric's key.
    fn key_name(key: &Key) -> String {
        let labels: Vec<_> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        format!("{}{{{}}}", key.name(), labels.join(","))
    }

    impl HistogramFn for Handle {
        fn record(&self, _: f64) {
            self.increment(1);
        }
    }

    struct Handle(Totals, String);

    impl CounterFn for Handle {
        fn increment(&self, value: u64) {
            *self.0.0.lock().unwrap().entry(self.1.clone()).or_default() += value;
        }

        fn absolute(&self, value: u64) {
            self.0.0.lock().unwrap().insert(self.1.clone(), value);
        }
    }

    impl Recorder for Totals {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(Arc::new(Handle(self.clone(), key_name(key))))
        }

        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }

        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(Arc::new(Handle(self.clone(), key_name(key))))
        }
    }

    /// The labels of a checked save of `stock` on SQLite, as its span's attributes.
    const SAVE: &str =
        "db.system.name=sqlite,db.collection.name=stock,db.operation.name=save_checked";

    /// Every attempt's save is one conflict and one duration, under the span's
    /// attribute names and the method's name; the retries under the table's.
    #[test]
    fn conflicts_retries_and_exhaustion_are_counted_by_table() {
        let db = TestDb::new();
        let source = CountingSource::new(&db);
        let totals = Totals::default();
        let result: Result<(), Error> = metrics::with_local_recorder(&totals, || {
            crate::observe::describe_metrics();
            retry(&source, &quick().max_attempts(3), |conn, attempt| {
                let mut stock: Stock = attempt.find(conn, 1)?;
                interfere(&db);
                stock.available -= 1;
                stock.save_checked(conn)
            })
        });
        assert!(matches!(result, Err(Error::RetriesExhausted(_))));
        let totals = totals.0.lock().unwrap().clone();
        let expected: BTreeMap<String, u64> = [
            (format!("{CONFLICTS}{{{SAVE}}}"), 3),
            (
                format!("{OPERATION_DURATION}{{{SAVE},error.type=conflict}}"),
                3,
            ),
            (format!("{ATTEMPTS}{{outcome=exhausted}}"), 1),
            (format!("{RETRY_DURATION}{{outcome=exhausted}}"), 1),
            (format!("{RETRIES}{{db.collection.name=stock}}"), 2),
            (
                format!("{RETRIES_EXHAUSTED}{{db.collection.name=stock}}"),
                1,
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(totals, expected);
    }
}
