//! `retry_with_standby`, blocking and async, on two SQLite files: a primary, and a
//! standby copy that lags (an older version of the row) or never catches up.

use std::time::Duration;

use diesel::connection::TransactionManager;
use diesel::prelude::*;

use crate::blocking::CheckedDsl;
use crate::blocking::{AttemptDsl, retry_with_standby};
use crate::error::Error;
use crate::retry::RetryPolicy;
use crate::test_support::{CountingSource, Stock, TestDb, interfere, stock};

fn quick() -> RetryPolicy {
    RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO)
}

/// A primary that has moved on (7 available, version 3) and a standby that still shows
/// the row as it was (10 available, version 1).
fn lagging_pair() -> (TestDb, TestDb) {
    let primary = TestDb::new();
    let standby = TestDb::new();
    advance(&primary, 7, 3);
    (primary, standby)
}

fn advance(db: &TestDb, available: i32, version: i32) {
    diesel::update(stock::table.find(1))
        .set((stock::available.eq(available), stock::version.eq(version)))
        .execute(&mut db.connect())
        .expect("advance the row");
}

fn row(available: i32, version: i32) -> Stock {
    Stock {
        id: 1,
        available,
        version,
    }
}

#[test]
fn a_stale_standby_read_conflicts_once_then_the_retry_reads_the_primary() {
    let (primary_db, standby_db) = lagging_pair();
    let primary = CountingSource::new(&primary_db);
    let standby = CountingSource::new(&standby_db);
    let mut seen = Vec::new();
    let left = retry_with_standby(&primary, &standby, &quick(), |conns, attempt| {
        seen.push((attempt.number(), conns.reads_from_primary()));
        let mut stock: Stock = attempt.find(conns.read()?, 1)?;
        stock.available -= 1;
        stock.save_checked(conns.write()?)?;
        Ok(stock.available)
    })
    .expect("the second attempt wins");
    // The stale read (10) would have written 9 over the primary's 7: a lost update. The
    // checked save refused it; the retry read the primary.
    assert_eq!(left, 6);
    assert_eq!(seen, [(1, false), (2, true)]);
    assert_eq!(primary_db.stock(), row(6, 4));
    assert_eq!(standby_db.stock(), row(10, 1));
    // Standby once (attempt 1), primary twice (attempt 1's save, attempt 2), none left.
    assert_eq!(standby.counters.checkouts(), 1);
    assert_eq!(primary.counters.checkouts(), 2);
    assert_eq!(standby.counters.live() + primary.counters.live(), 0);
    assert_eq!(standby.counters.discards() + primary.counters.discards(), 0);
}

#[test]
fn a_standby_that_never_catches_up_costs_each_operation_one_conflict_at_most() {
    let (primary_db, standby_db) = lagging_pair();
    let primary = CountingSource::new(&primary_db);
    let standby = CountingSource::new(&standby_db);
    let policy = quick().max_attempts(10);
    let mut attempts = Vec::new();
    for _ in 0..5 {
        let used = retry_with_standby(&primary, &standby, &policy, |conns, attempt| {
            let mut stock: Stock = attempt.find(conns.read()?, 1)?;
            stock.available -= 1;
            stock.save_checked(conns.write()?)?;
            Ok(attempt.number())
        })
        .expect("bounded");
        attempts.push(used);
    }
    assert_eq!(attempts, [2, 2, 2, 2, 2]);
    assert_eq!(primary_db.stock(), row(2, 8)); // five decrements, none lost
    assert_eq!(standby.counters.checkouts(), 5);
}

#[test]
fn after_the_first_conflict_every_attempt_reads_the_primary_even_on_new_conflicts() {
    let (primary_db, standby_db) = lagging_pair();
    let primary = CountingSource::new(&primary_db);
    let standby = CountingSource::new(&standby_db);
    let mut seen = Vec::new();
    let left = retry_with_standby(&primary, &standby, &quick(), |conns, attempt| {
        seen.push(conns.reads_from_primary());
        let mut stock: Stock = attempt.find(conns.read()?, 1)?;
        if attempt.number() == 2 {
            interfere(&primary_db); // a real concurrent writer on the primary
        }
        stock.available -= 1;
        stock.save_checked(conns.write()?)?;
        Ok(stock.available)
    })
    .unwrap();
    assert_eq!(left, 6);
    assert_eq!(seen, [false, true, true]);
    assert_eq!(primary_db.stock(), row(6, 5));
    assert_eq!(standby.counters.checkouts(), 1);
}

#[test]
fn a_fresh_standby_serves_the_read_and_the_primary_only_the_save() {
    let primary_db = TestDb::new();
    let standby_db = TestDb::new(); // same state: replayed up to date
    let primary = CountingSource::new(&primary_db);
    let standby = CountingSource::new(&standby_db);
    let left = retry_with_standby(&primary, &standby, &quick(), |conns, attempt| {
        let mut stock: Stock = attempt.find(conns.read()?, 1)?;
        stock.available -= 4;
        stock.save_checked(conns.write()?)?;
        Ok(stock.available)
    })
    .unwrap();
    assert_eq!(left, 6);
    assert_eq!(standby.counters.checkouts(), 1);
    assert_eq!(primary.counters.checkouts(), 1);
    assert_eq!(primary_db.stock(), row(6, 2));
}

#[test]
fn a_row_deleted_on_the_primary_switches_the_reads_too_and_ends_with_not_found() {
    let primary_db = TestDb::new();
    let standby_db = TestDb::new();
    diesel::delete(stock::table.find(1))
        .execute(&mut primary_db.connect())
        .unwrap();
    let primary = CountingSource::new(&primary_db);
    let standby = CountingSource::new(&standby_db);
    let mut seen = Vec::new();
    let result: Result<(), Error> =
        retry_with_standby(&primary, &standby, &quick(), |conns, attempt| {
            seen.push(conns.reads_from_primary());
            let mut stock: Stock = attempt.find(conns.read()?, 1)?;
            stock.available -= 1;
            stock.save_checked(conns.write()?)
        });
    assert!(
        result.as_ref().is_err_and(Error::is_not_found),
        "{result:?}"
    );
    assert_eq!(seen, [false, true]);
}

#[test]
fn an_escalated_attempt_reads_locks_and_saves_on_the_primary_in_one_transaction() {
    let (primary_db, standby_db) = lagging_pair();
    let primary = CountingSource::new(&primary_db);
    let standby = CountingSource::new(&standby_db);
    // Locking from the first attempt on: the standby is never asked.
    let policy = quick().escalate_after(0);
    let left = retry_with_standby(&primary, &standby, &policy, |conns, attempt| {
        assert!(attempt.is_escalated() && conns.reads_from_primary());
        let conn = conns.read()?;
        // The helper's BEGIN IMMEDIATE is open: another writer cannot get in.
        let depth = <SqliteConnection as diesel::Connection>::TransactionManager::transaction_manager_status_mut(conn)
            .transaction_depth()
            .unwrap();
        assert_eq!(depth.map(|depth| depth.get()), Some(1));
        let mut stock: Stock = attempt.find(conn, 1)?;
        stock.available -= 1;
        stock.save_checked(conns.write()?)?;
        Ok(stock.available)
    })
    .unwrap();
    assert_eq!(left, 6);
    assert_eq!(standby.counters.checkouts(), 0);
    assert_eq!(primary.counters.checkouts(), 1);
    assert_eq!(primary_db.stock(), row(6, 4));

    // After one (stale) conflict, escalate_after(1): the second attempt locks on the
    // primary; a failing closure rolls its writes back.
    let policy = quick().escalate_after(1);
    let mut seen = Vec::new();
    let result: Result<(), Error> =
        retry_with_standby(&primary, &standby, &policy, |conns, attempt| {
            seen.push((attempt.is_escalated(), conns.reads_from_primary()));
            let mut stock: Stock = attempt.find(conns.read()?, 1)?;
            stock.available -= 1;
            stock.save_checked(conns.write()?)?;
            Err(crate::outcome::not_found::<Stock>(&2))
        });
    assert!(result.is_err());
    assert_eq!(seen, [(false, false), (true, true)]);
    assert_eq!(primary_db.stock(), row(6, 4)); // rolled back
    assert_eq!(primary.counters.discards(), 0);
}

#[cfg(feature = "async")]
mod asynchronous {
    use std::time::Duration;

    use diesel::sqlite::SqliteConnection;
    use diesel_async::AsyncConnection;
    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;

    use super::{lagging_pair, quick, row};
    use crate::asynchronous::prelude::*;
    use crate::asynchronous::{AsyncConnectionSource, retry_with_standby};
    use crate::test_support::{Counted, Counters, Stock, TestDb};

    type Conn = SyncConnectionWrapper<SqliteConnection>;

    struct Source {
        url: String,
        counters: Counters,
    }

    impl Source {
        fn new(db: &TestDb) -> Self {
            Source {
                url: db.url.clone(),
                counters: Counters::default(),
            }
        }
    }

    impl AsyncConnectionSource for Source {
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

    #[tokio::test]
    async fn the_async_twin_switches_to_the_primary_after_the_stale_conflict() {
        let (primary_db, standby_db) = lagging_pair();
        let primary = Source::new(&primary_db);
        let standby = Source::new(&standby_db);
        let policy = quick().max_attempts(10);
        for expected_left in [6, 5, 4] {
            let (left, attempts, reads) =
                retry_with_standby(&primary, &standby, &policy, async |conns, attempt| {
                    let reads = conns.reads_from_primary();
                    let mut stock: Stock = attempt.find(conns.read().await?, 1).await?;
                    stock.available -= 1;
                    stock.save_checked(conns.write().await?).await?;
                    Ok((stock.available, attempt.number(), reads))
                })
                .await
                .unwrap();
            // The standby never catches up: each operation, one stale conflict.
            assert_eq!((left, attempts, reads), (expected_left, 2, true));
        }
        assert_eq!(primary_db.stock(), row(4, 6));
        assert_eq!(standby_db.stock(), row(10, 1));
        assert_eq!(standby.counters.checkouts(), 3);
        assert_eq!(primary.counters.checkouts(), 6);
        assert_eq!(primary.counters.live() + standby.counters.live(), 0);
    }

    #[tokio::test]
    async fn an_escalated_async_attempt_reads_on_the_primary_and_never_asks_the_standby() {
        let (primary_db, standby_db) = lagging_pair();
        let primary = Source::new(&primary_db);
        let standby = Source::new(&standby_db);
        let policy = quick().escalate_after(0);
        let left = retry_with_standby(&primary, &standby, &policy, async |conns, attempt| {
            assert!(conns.reads_from_primary());
            let mut stock: Stock = attempt.find(conns.read().await?, 1).await?;
            stock.available -= 2;
            stock.save_checked(conns.write().await?).await?;
            Ok(stock.available)
        })
        .await
        .unwrap();
        assert_eq!(left, 5);
        assert_eq!(standby.counters.checkouts(), 0);
        assert_eq!(primary_db.stock(), row(5, 4));
    }

    #[tokio::test]
    async fn a_cancelled_async_attempt_discards_the_connections_it_holds() {
        let (primary_db, standby_db) = lagging_pair();
        let primary = Source::new(&primary_db);
        let standby = Source::new(&standby_db);
        let policy = quick();
        let running = retry_with_standby(&primary, &standby, &policy, async |conns, attempt| {
            let _: Stock = attempt.find(conns.read().await?, 1).await?;
            conns.write().await?;
            std::future::pending::<()>().await;
            Ok(())
        });
        let cut = tokio::time::timeout(Duration::from_millis(50), running).await;
        assert!(cut.is_err());
        assert_eq!(standby.counters.discards(), 1);
        assert_eq!(primary.counters.discards(), 1);
        assert_eq!(primary.counters.live() + standby.counters.live(), 0);
    }
}
