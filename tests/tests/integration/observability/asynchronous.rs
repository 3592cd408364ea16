//! What the async retry helper reports: conflicts and retries as `tracing` events
//! inside their attempt's span, and as `metrics` counters.

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
    use crate::observe::{Captured, Totals};
    use diesel_occ::observe::{CONFLICTS_TOTAL, RETRIES_EXHAUSTED_TOTAL, RETRIES_TOTAL};

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
        assert_eq!(conflict.field("table"), "counters");
        assert_eq!(conflict.field("key"), "(id=1)");
        assert_eq!(conflict.field("operation"), "update");
        assert_eq!(conflict.field("outcome"), "stale");
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
        assert_eq!(retry.field("table"), "counters");
        assert_eq!(retry.field("key"), "(id=1)");
        assert_eq!(retry.field("attempt"), "1");
        assert_eq!(retry.field("outcome"), "stale");
        assert_eq!(retry.field("escalate"), "false");
        let backoff: u64 = retry.field("backoff_ms").parse().expect("backoff_ms");
        assert!(
            backoff <= 5,
            "full jitter within the 5 ms ceiling: {backoff}"
        );
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
            (
                format!("{CONFLICTS_TOTAL}{{table=counters,operation=update}}"),
                3
            ),
            (format!("{RETRIES_EXHAUSTED_TOTAL}{{table=counters}}"), 1),
            (format!("{RETRIES_TOTAL}{{table=counters}}"), 2),
        ]
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>()
    );
}
