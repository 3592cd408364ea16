//! `MultiHost` over sources that can be switched off: rotation, skipping, cool-down,
//! deadlines, discards, and the retry helpers spreading their attempts.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

use super::{MultiHost, NodeStats, UrlSource};
use crate::blocking::CheckedDsl;
use crate::blocking::{AttemptDsl, ConnectionSource, retry};
use crate::error::{Error, PoolError, PoolErrorKind};
use crate::retry::{OwnedConnection, RetryPolicy};
use crate::test_support::{Stock, TestDb, interfere};

/// A node that can be taken down: when down, its checkouts fail with `kind`.
struct Flaky {
    up: AtomicBool,
    kind: PoolErrorKind,
    asked: AtomicU32,
    discards: AtomicU32,
}

impl Flaky {
    fn up() -> Self {
        Flaky {
            up: AtomicBool::new(true),
            kind: PoolErrorKind::Connect,
            asked: AtomicU32::new(0),
            discards: AtomicU32::new(0),
        }
    }

    fn down(kind: PoolErrorKind) -> Self {
        let node = Self::up();
        node.up.store(false, Ordering::SeqCst);
        Flaky { kind, ..node }
    }

    fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
    }

    fn asked(&self) -> u32 {
        self.asked.load(Ordering::SeqCst)
    }

    fn answer(&self) -> Result<(), PoolError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.up.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(PoolError::from_kind(self.kind))
        }
    }
}

impl ConnectionSource for Flaky {
    type Connection = SqliteConnection;
    type Pooled<'a> = OwnedConnection<SqliteConnection>;

    fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        self.answer()?;
        Ok(OwnedConnection::new(SqliteConnection::establish(
            ":memory:",
        )?))
    }

    fn discard(&self, pooled: Self::Pooled<'_>) {
        self.discards.fetch_add(1, Ordering::SeqCst);
        drop(pooled);
    }
}

fn three(nodes: [Flaky; 3]) -> MultiHost<Flaky> {
    MultiHost::new(nodes)
}

fn node_of(hosts: &MultiHost<Flaky>) -> Result<usize, PoolError> {
    ConnectionSource::checkout(hosts).map(|conn| conn.node())
}

fn served(hosts: &MultiHost<Flaky>) -> Vec<u64> {
    hosts.node_stats().iter().map(|node| node.served).collect()
}

fn failures(hosts: &MultiHost<Flaky>) -> Vec<u64> {
    hosts
        .node_stats()
        .iter()
        .map(|node| node.failures)
        .collect()
}

fn asked(hosts: &MultiHost<Flaky>) -> Vec<u32> {
    (0..hosts.len())
        .map(|index| hosts.node(index).map_or(0, Flaky::asked))
        .collect()
}

#[test]
fn checkouts_go_round_robin_over_the_nodes() {
    let hosts = three([Flaky::up(), Flaky::up(), Flaky::up()]);
    let order: Vec<usize> = (0..7).map(|_| node_of(&hosts).unwrap()).collect();
    assert_eq!(order, [0, 1, 2, 0, 1, 2, 0]);
    assert_eq!(served(&hosts), [3, 2, 2]);
    assert_eq!(failures(&hosts), [0, 0, 0]);
    let names: Vec<String> = hosts.node_stats().into_iter().map(|n| n.name).collect();
    assert_eq!(names, ["node1", "node2", "node3"]);
}

#[test]
fn a_failing_node_is_skipped_and_then_passed_by_while_it_cools_down() {
    let hosts = three([
        Flaky::up(),
        Flaky::down(PoolErrorKind::Connect),
        Flaky::up(),
    ]);
    // Turn 2 goes to node 1, fails, and node 2 serves; then the turns go round the
    // two nodes that are up, evenly.
    let order: Vec<usize> = (0..6).map(|_| node_of(&hosts).unwrap()).collect();
    assert_eq!(order, [0, 2, 0, 2, 0, 2]);
    // Asked once: after its failure it cools down (default 1 s) and is not asked again.
    assert_eq!(asked(&hosts), [3, 1, 3]);
    assert_eq!(failures(&hosts), [0, 1, 0]);
    assert_eq!(served(&hosts), [3, 0, 3]);
    let stats = hosts.node_stats();
    assert!(stats.get(1).is_some_and(|node| node.cooling_down));
    assert!(!stats.first().is_some_and(|node| node.cooling_down));
}

#[test]
fn a_node_is_asked_again_once_its_cool_down_has_expired() {
    let hosts = MultiHost::new([Flaky::down(PoolErrorKind::Connect), Flaky::up()])
        .cool_down(Duration::from_millis(50));
    assert_eq!(node_of(&hosts).unwrap(), 1); // node 0 fails, node 1 serves
    hosts.node(0).unwrap().set_up(true); // back, but still cooling down
    assert_eq!(node_of(&hosts).unwrap(), 1);
    assert_eq!(node_of(&hosts).unwrap(), 1); // node 0's turn, passed by
    assert_eq!(asked(&hosts), [1, 3]);
    std::thread::sleep(Duration::from_millis(60));
    assert!(!hosts.node_stats().iter().any(|node| node.cooling_down));
    assert_eq!(node_of(&hosts).unwrap(), 1);
    assert_eq!(node_of(&hosts).unwrap(), 0); // node 0's turn again, asked, serves
    assert_eq!(served(&hosts), [1, 4]);
}

#[test]
fn a_zero_cool_down_asks_every_node_every_time() {
    let hosts = MultiHost::new([Flaky::down(PoolErrorKind::Connect), Flaky::up()])
        .cool_down(Duration::ZERO);
    for _ in 0..4 {
        assert_eq!(node_of(&hosts).unwrap(), 1);
    }
    assert_eq!(asked(&hosts), [2, 4]);
}

#[test]
fn when_every_node_fails_the_checkout_fails_with_the_last_nodes_error() {
    let hosts = three([
        Flaky::down(PoolErrorKind::Connect),
        Flaky::down(PoolErrorKind::Timeout),
        Flaky::down(PoolErrorKind::Closed),
    ]);
    let error = node_of(&hosts).unwrap_err();
    assert_eq!(error.kind(), PoolErrorKind::Closed); // asked 0, 1, 2
    // All cooling down: all asked anyway, from the next in turn (1, 2, 0).
    let error = node_of(&hosts).unwrap_err();
    assert_eq!(error.kind(), PoolErrorKind::Connect);
    assert_eq!(asked(&hosts), [2, 2, 2]);
    assert_eq!(failures(&hosts), [2, 2, 2]);
    // One node back while all cool down: found.
    hosts.node(2).unwrap().set_up(true);
    assert_eq!(node_of(&hosts).unwrap(), 2);
    // No nodes at all: a typed error, no panic.
    let empty: MultiHost<Flaky> = MultiHost::new([]);
    assert!(empty.is_empty());
    assert_eq!(node_of(&empty).unwrap_err().kind(), PoolErrorKind::Other);
}

#[test]
fn no_node_is_skipped_to_once_the_time_is_up() {
    let hosts = three([
        Flaky::down(PoolErrorKind::Connect),
        Flaky::up(),
        Flaky::up(),
    ]);
    let error = hosts.checkout_within(Some(Duration::ZERO)).unwrap_err();
    assert_eq!(error.kind(), PoolErrorKind::Timeout);
    assert_eq!(asked(&hosts), [1, 0, 0]);
    // With time left, a node that is up serves (turn 1 of the two that are up: node 2).
    let conn = hosts.checkout_within(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(conn.node(), 2);
}

#[test]
fn a_discarded_connection_goes_back_to_its_own_node() {
    let hosts = three([Flaky::up(), Flaky::up(), Flaky::up()]);
    let _first = ConnectionSource::checkout(&hosts).unwrap();
    let second = ConnectionSource::checkout(&hosts).unwrap();
    assert_eq!(second.node(), 1);
    ConnectionSource::discard(&hosts, second);
    let discards: Vec<u32> = (0..3)
        .map(|index| hosts.node(index).unwrap().discards.load(Ordering::SeqCst))
        .collect();
    assert_eq!(discards, [0, 1, 0]);
    assert_eq!(
        hosts.node_stats().get(1),
        Some(&NodeStats {
            name: "node2".into(),
            served: 1,
            failures: 0,
            discarded: 1,
            cooling_down: false,
        })
    );
}

#[test]
fn debug_output_names_the_nodes_and_hides_the_urls() {
    let hosts: MultiHost<UrlSource<SqliteConnection>> = MultiHost::from_urls([
        "mysql://root:hunter2@127.0.0.1:13306/test",
        "mysql://127.0.0.1:13307/test?ssl_mode=disabled",
        "/tmp/file.sqlite",
    ]);
    let debug = format!("{hosts:?}");
    assert!(debug.contains("127.0.0.1:13306"), "{debug}");
    assert!(debug.contains("127.0.0.1:13307"), "{debug}");
    assert!(debug.contains("node3"), "{debug}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(!debug.contains("root"), "{debug}");
    assert!(!format!("{:?}", hosts.node(0).unwrap()).contains("hunter2"));
}

#[test]
fn the_retry_helper_spreads_its_attempts_over_the_nodes_and_skips_a_dead_one() {
    let db = TestDb::new();
    let missing = tempfile::tempdir().unwrap();
    // A SQLite URL that cannot be opened: a file in a directory that does not exist.
    let dead = missing
        .path()
        .join("no/such/dir/db.sqlite")
        .display()
        .to_string();
    let hosts: MultiHost<UrlSource<SqliteConnection>> =
        MultiHost::from_urls([db.url.clone(), dead, db.url.clone()]);
    let policy = RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO);
    let (attempts, stock) = retry(&hosts, &policy, |conn, attempt| {
        let mut stock: Stock = attempt.find(conn, 1)?;
        if attempt.number() < 4 {
            interfere(&db);
        }
        stock.available -= 1;
        stock.save_checked(conn)?;
        Ok((attempt.number(), stock))
    })
    .unwrap();
    assert_eq!(attempts, 4);
    assert_eq!(stock.available, 9);
    // Turns 0, 1 (dead: to 2), 2, 0.
    let stats = hosts.node_stats();
    let served: Vec<u64> = stats.iter().map(|node| node.served).collect();
    let failures: Vec<u64> = stats.iter().map(|node| node.failures).collect();
    assert_eq!(served, [2, 0, 2]);
    assert_eq!(failures, [0, 1, 0]);
    assert_eq!(db.stock().available, 9);
}

#[test]
fn a_pool_error_ends_the_retry_loop_only_when_every_node_failed() {
    let hosts = three([
        Flaky::down(PoolErrorKind::Connect),
        Flaky::down(PoolErrorKind::Connect),
        Flaky::down(PoolErrorKind::Timeout),
    ]);
    let result: Result<(), Error> = retry(&hosts, &RetryPolicy::new(), |_conn, _attempt| Ok(()));
    match result {
        Err(Error::Pool(error)) => assert_eq!(error.kind(), PoolErrorKind::Timeout),
        other => panic!("expected the last node's pool error, got {other:?}"),
    }
}

#[cfg(feature = "async")]
mod asynchronous {
    use diesel_async::AsyncConnection;
    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;

    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use diesel::sqlite::SqliteConnection;

    use super::{Flaky, asked, failures};
    use crate::asynchronous::{self as occ_async, AsyncConnectionSource};
    use crate::error::{PoolError, PoolErrorKind};
    use crate::multi_host::{MultiHost, UrlSource};
    use crate::retry::{OwnedConnection, RetryPolicy};
    use crate::test_support::{Stock, TestDb, interfere};

    type AsyncSqlite = SyncConnectionWrapper<SqliteConnection>;

    impl AsyncConnectionSource for Flaky {
        type Connection = AsyncSqlite;
        type Pooled<'a> = OwnedConnection<AsyncSqlite>;

        async fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
            self.answer()?;
            Ok(OwnedConnection::new(
                AsyncSqlite::establish(":memory:").await?,
            ))
        }

        fn discard(&self, pooled: Self::Pooled<'_>) {
            self.discards.fetch_add(1, Ordering::SeqCst);
            drop(pooled);
        }
    }

    async fn node_of(hosts: &MultiHost<Flaky>) -> Result<usize, PoolError> {
        AsyncConnectionSource::checkout(hosts)
            .await
            .map(|conn| conn.node())
    }

    #[tokio::test]
    async fn async_checkouts_rotate_skip_cool_down_and_fail_with_the_last_error() {
        let hosts = MultiHost::new([
            Flaky::up(),
            Flaky::down(PoolErrorKind::Connect),
            Flaky::up(),
        ])
        .cool_down(Duration::from_millis(50));
        let mut order = Vec::new();
        for _ in 0..6 {
            order.push(node_of(&hosts).await.unwrap());
        }
        assert_eq!(order, [0, 2, 0, 2, 0, 2]);
        assert_eq!(asked(&hosts), [3, 1, 3]);
        hosts.node(1).unwrap().set_up(true);
        tokio::time::sleep(Duration::from_millis(60)).await;
        let mut order = Vec::new();
        for _ in 0..3 {
            order.push(node_of(&hosts).await.unwrap());
        }
        assert_eq!(order, [0, 1, 2]);

        for index in 0..3 {
            hosts.node(index).unwrap().set_up(false);
        }
        let error = node_of(&hosts).await.unwrap_err();
        assert_eq!(error.kind(), PoolErrorKind::Connect);
        assert_eq!(failures(&hosts), [1, 2, 1]);

        let timed_out = AsyncConnectionSource::checkout_within(&hosts, Some(Duration::ZERO))
            .await
            .unwrap_err();
        assert_eq!(timed_out.kind(), PoolErrorKind::Timeout);

        hosts.node(0).unwrap().set_up(true);
        let conn = AsyncConnectionSource::checkout(&hosts).await.unwrap();
        assert_eq!(conn.node(), 0);
        AsyncConnectionSource::discard(&hosts, conn);
        assert_eq!(hosts.node(0).unwrap().discards.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_async_retry_helper_spreads_its_attempts_over_the_nodes() {
        use crate::asynchronous::prelude::*;

        let db = TestDb::new();
        let hosts: MultiHost<UrlSource<AsyncSqlite>> =
            MultiHost::from_urls([db.url.clone(), db.url.clone(), db.url.clone()]);
        let policy = RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO);
        let db = &db;
        let attempts = occ_async::retry(&hosts, &policy, async |conn, attempt| {
            let mut stock: Stock = attempt.find(conn, 1).await?;
            if attempt.number() < 3 {
                interfere(db);
            }
            stock.available -= 1;
            stock.save_checked(conn).await?;
            Ok(attempt.number())
        })
        .await
        .unwrap();
        assert_eq!(attempts, 3);
        let served: Vec<u64> = hosts.node_stats().iter().map(|node| node.served).collect();
        assert_eq!(served, [1, 1, 1]);
        assert_eq!(db.stock().available, 9);
    }
}
