//! What the async API reports: conflicts and retries as `tracing` events inside their
//! attempt's span, as `metrics` counters and histograms, and the async checked writes'
//! and retry loop's spans as OpenTelemetry receives them.

use std::time::Duration;

use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::asynchronous as occ;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::AsyncTestDb;
use tokio::sync::Mutex;

use super::AsyncConn as Conn;
use super::counters::{Counter, bump, exhausted, seed};
use crate::pools::warm_pool;

#[test]
fn conflicts_and_retries_are_traced_and_counted() {
    use crate::observe::{Captured, KeyValues, Totals};
    use diesel_occ::observe::{ATTEMPTS, CONFLICTS, RETRIES, RETRIES_EXHAUSTED};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Not `async_test_db!`: a skipped backend must end the test, not only the block.
    crate::observe::interested_everywhere();
    let Some(db) = runtime.block_on(AsyncTestDb::<Conn>::create(concat!(
        module_path!(),
        "_",
        line!()
    ))) else {
        return;
    };
    runtime.block_on(seed(&db, 1));
    let system = crate::observe::system_name(<Conn as diesel_occ_tests::AsyncTestConnection>::BACKEND);
    let _keys = KeyValues::set(true);
    let captured = Captured::default();
    let totals = Totals::default();
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
        assert_eq!(conflict.field("db.collection.name"), "counters");
        assert_eq!(conflict.field("diesel_occ.key"), "(id=1)");
        assert_eq!(conflict.field("diesel_occ.operation"), "update");
        assert_eq!(conflict.field("diesel_occ.conflict.state"), "stale");
        assert_eq!(conflict.level, tracing::Level::DEBUG);
    }
    assert_eq!(
        conflicts
            .iter()
            .map(|c| c.span_field("occ.attempt", "attempt"))
            .collect::<Vec<_>>(),
        ["1", "1", "2"],
        "each conflict inside its attempt's span"
    );
    let retries = captured.named("occ retry");
    assert_eq!(retries.len(), 2, "{events:#?}");
    for retry in &retries {
        assert_eq!(retry.field("db.collection.name"), "counters");
        assert_eq!(retry.field("diesel_occ.key"), "(id=1)");
        assert_eq!(retry.field("diesel_occ.attempt"), "1");
        assert_eq!(retry.field("diesel_occ.outcome"), "stale");
        assert_eq!(retry.field("diesel_occ.escalate"), "false");
        let backoff: u64 = retry
            .field("diesel_occ.backoff_ms")
            .parse()
            .expect("backoff_ms");
        assert!(
            backoff <= 5,
            "full jitter within the 5 ms ceiling: {backoff}"
        );
    }
    let succeeded = captured.named("occ retry succeeded");
    assert_eq!(succeeded.len(), 1);
    assert_eq!(succeeded[0].field("diesel_occ.retry.attempts"), "2");
    let gave_up = captured.named("occ retries exhausted");
    assert_eq!(gave_up.len(), 1);
    assert_eq!(gave_up[0].level, tracing::Level::WARN);
    for (field, value) in [
        ("db.collection.name", "counters"),
        ("diesel_occ.key", "(id=1)"),
        ("diesel_occ.retry.attempts", "2"),
        ("diesel_occ.outcome", "stale"),
        ("diesel_occ.deadline_reached", "false"),
    ] {
        assert_eq!(gave_up[0].field(field), value, "{field}");
    }
    // The writes inside attempts: the other writer's 3, and the winning save.
    let applied = captured.named("occ write applied");
    assert_eq!(applied.len(), 4, "{events:#?}");
    assert!(
        applied
            .iter()
            .all(|e| e.field("db.collection.name") == "counters")
    );

    assert_eq!(
        totals.snapshot(),
        [
            (
                format!(
                    "{CONFLICTS}{{db.system.name={system},db.collection.name=counters,db.operation.name=save_checked}}"
                ),
                3
            ),
            (format!("{RETRIES_EXHAUSTED}{{db.collection.name=counters}}"), 1),
            (format!("{RETRIES}{{db.collection.name=counters}}"), 2),
        ]
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>()
    );
    let histograms = totals.histograms();
    for outcome in ["success", "exhausted"] {
        assert_eq!(
            histograms.get(&format!("{ATTEMPTS}{{outcome={outcome}}}")),
            Some(&vec![2.0]),
            "{histograms:?}"
        );
    }
}

/// The async checked writes and retry loop export the same spans as the blocking
/// ones: a conflict forced by another writer between the attempt's read and its save
/// fails the attempt's `save_checked` span with `error.type = conflict`, and the retry
/// span around both attempts records two of them.
#[test]
fn async_writes_and_retries_are_opentelemetry_spans() {
    use crate::observe::{Exported, system_name};
    use diesel_occ_tests::AsyncTestConnection;
    use opentelemetry::trace::{SpanKind, Status};
    use tracing_subscriber::filter::LevelFilter;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    crate::observe::interested_everywhere();
    let Some(db) = runtime.block_on(AsyncTestDb::<Conn>::create(concat!(
        module_path!(),
        "_",
        line!()
    ))) else {
        return;
    };
    runtime.block_on(seed(&db, 1));
    let system = system_name(Conn::BACKEND);
    let exported = Exported::new();
    exported.run(LevelFilter::TRACE, || {
        runtime.block_on(async {
            let pool = warm_pool(&db, 2).await;
            let other = Mutex::new(db.conn().await);
            let policy = RetryPolicy::new().backoff(Duration::ZERO, Duration::from_millis(2));
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
        })
    });
    let spans = exported.spans();
    let retries = exported.named("diesel_occ retry");
    assert_eq!(retries.len(), 1, "{spans:#?}");
    assert_eq!(retries[0].attribute("diesel_occ.retry.attempts"), "2");
    assert_eq!(retries[0].status, Status::Unset);
    let saves = exported.named("save_checked counters");
    assert_eq!(saves.len(), 3, "theirs, the conflict, the retry: {spans:#?}");
    for save in &saves {
        assert_eq!(save.kind, SpanKind::Client);
        assert_eq!(save.attribute("db.system.name"), system);
        assert_eq!(save.attribute("db.collection.name"), "counters");
        assert_eq!(save.attribute("db.operation.name"), "save_checked");
    }
    let failed: Vec<_> = saves.iter().map(|save| save.failed()).collect();
    assert_eq!(failed, [false, true, false], "{saves:#?}");
    assert_eq!(saves[1].attribute("error.type"), "conflict");
    let conflict = saves[1].events_named("occ conflict");
    assert_eq!(conflict[0]["diesel_occ.token.expected"], "1");
    assert_eq!(conflict[0]["diesel_occ.token.current"], "2");
    let attempts = exported.named("occ.attempt");
    assert_eq!(attempts.len(), 2);
    assert!(attempts.iter().all(|attempt| attempt.parent == retries[0].id));
    assert_eq!(saves[1].parent, attempts[0].id);
    assert_eq!(saves[2].parent, attempts[1].id);
}
