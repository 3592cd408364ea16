//! [`MultiHost`]: one connection source over several database nodes, so that the
//! attempts of a retry helper spread over them and a node that is down is skipped.
//!
//! A multi-primary cluster (MariaDB Galera, where every node takes writes) or a set of
//! equivalent replicas is several servers that can each serve an attempt. `MultiHost`
//! holds one source per node (a pool, a closure that connects, a [`UrlSource`]) and
//! hands out each checkout from the next node in turn (round-robin, shared by every
//! caller of the same `MultiHost`), so consecutive attempts of one retry loop, and the
//! attempts of concurrent workers, land on different nodes.
//!
//! - **A node that is down is skipped.** When a node's checkout fails, the next node is
//!   tried at once, and the failed node *cools down* for a short while
//!   ([`cool_down`](MultiHost::cool_down), default 1 s): checkouts pass it by without
//!   asking it, so a dead node costs one failed connect per cool-down, not one per
//!   attempt, and the turns go round the nodes that are up, so they share its load
//!   evenly. When every node is cooling down, they are all tried anyway (a node may
//!   be back early). When every node fails, the checkout fails with the
//!   [`PoolError`] of the last one.
//! - **Deadlines hold.** `checkout_within` passes each node the time left, and stops
//!   skipping from node to node once it has run out (a
//!   [`PoolErrorKind::Timeout`]).
//! - **Discards go home.** A connection the helper discards goes back to the source of
//!   the node it came from.
//! - **Observable.** [`node_stats`](MultiHost::node_stats) counts, per node, the
//!   checkouts it served, its failures and its discarded connections; every checkout
//!   and failure is a `tracing` event (target `diesel_occ`) naming the node.
//!
//! `MultiHost<S>` is a [`ConnectionSource`] when `S` is one, and with feature `async`
//! an `AsyncConnectionSource` (`diesel_occ::asynchronous`) when `S` is one.
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel_occ::multi_host::{MultiHost, UrlSource};
//! use diesel_occ::prelude::*;
//! use diesel_occ::blocking;
//! use diesel_occ::retry::RetryPolicy;
//!
//! # fn main() -> Result<(), diesel_occ::Error> {
//! # let (url, _keep) = shared_database("multi_host_module_doc");
//! // Three "nodes": here three URLs of one SQLite database; in production the
//! // nodes of a Galera cluster, `mysql://app@db1/shop`, `mysql://app@db2/shop`, ...
//! let nodes: MultiHost<UrlSource<SqliteConnection>> =
//!     MultiHost::from_urls([url.clone(), url.clone(), url.clone()]);
//! let policy = RetryPolicy::new();
//!
//! for _ in 0..3 {
//!     blocking::retry(&nodes, &policy, |conn, attempt| {
//!         let mut stock: Stock = attempt.find(conn, 1)?;
//!         stock.available -= 1;
//!         stock.save_checked(conn)?;
//!         Ok(())
//!     })?;
//! }
//! // One attempt each, one per node.
//! let served: Vec<u64> = nodes.node_stats().iter().map(|node| node.served).collect();
//! assert_eq!(served, [1, 1, 1]);
//! # Ok(())
//! # }
//! ```
//!
//! Pools work the same: `MultiHost::new([pool1, pool2, pool3])` with r2d2 pools
//! (feature `r2d2`) or diesel-async's deadpool pools (feature `deadpool`). Give each
//! pool a short connection timeout: a pool waits that long for a node that is down
//! before `MultiHost` can move on.
//!
//! The async twin takes diesel-async connections (or deadpool pools) the same way:
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
//! use diesel_occ::asynchronous::prelude::*;
//! use diesel_occ::asynchronous;
//! use diesel_occ::retry::RetryPolicy;
//! use diesel_occ::multi_host::{MultiHost, UrlSource};
//!
//! type Conn = SyncConnectionWrapper<SqliteConnection>; // AsyncMysqlConnection on Galera
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), diesel_occ::Error> {
//! # let (url, _keep) = shared_database("multi_host_async_doc");
//! let nodes: MultiHost<UrlSource<Conn>> = MultiHost::from_urls([&url, &url]);
//! let left = asynchronous::retry(&nodes, &RetryPolicy::new(), async |conn, attempt| {
//!     let mut stock: Stock = attempt.find(conn, 1).await?;
//!     stock.available -= 2;
//!     stock.save_checked(conn).await?;
//!     Ok(stock.available)
//! })
//! .await?;
//! assert_eq!(left, 8);
//! assert_eq!(nodes.node_stats()[0].served, 1);
//! # Ok(())
//! # }
//! ```
//!
//! What a node serves is only as fresh as the node: on Galera, a read on a node that
//! has not applied the latest writes yet (`wsrep_sync_wait=0`) may be stale. A checked
//! save still cannot lose an update, because the token check runs where the write
//! runs; the stale attempt meets a conflict and the retry re-reads. For a
//! primary with read-only standbys, see
//! [`retry_with_standby`](crate::blocking::retry_with_standby).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::blocking::ConnectionSource;
use crate::error::{PoolError, PoolErrorKind};
use crate::retry::OwnedConnection;

#[cfg(feature = "async")]
mod asynchronous;
#[cfg(test)]
mod tests;

/// How long a node whose checkout failed is passed by, unless set with
/// [`MultiHost::cool_down`].
pub const DEFAULT_COOL_DOWN: Duration = Duration::from_secs(1);

/// A connection source over several nodes: each checkout goes to the next node in turn,
/// skipping nodes that are down. See the [module documentation](self).
pub struct MultiHost<S> {
    nodes: Vec<Node<S>>,
    /// The rotation: the node the next checkout starts from, modulo the node count.
    next: AtomicUsize,
    cool_down: Duration,
    /// What the nodes' cool-down ends are measured from.
    epoch: Instant,
}

/// One node: its source, its name and its counters.
struct Node<S> {
    name: String,
    source: S,
    served: AtomicU64,
    failures: AtomicU64,
    discarded: AtomicU64,
    /// Nanoseconds after the epoch until which the node cools down; 0 when it is up.
    down_until: AtomicU64,
}

/// What [`MultiHost::node_stats`] reports about one node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct NodeStats {
    /// The node's name (given, or `node1`, `node2`, ... by position; from a URL its
    /// host and port, never its user or password).
    pub name: String,
    /// Checkouts the node served.
    pub served: u64,
    /// Checkouts that failed on the node.
    pub failures: u64,
    /// Connections of the node that a retry helper discarded (their state was unknown).
    pub discarded: u64,
    /// True while the node cools down after a failure: checkouts pass it by.
    pub cooling_down: bool,
}

/// A connection checked out of one node of a [`MultiHost`]: the node's own pooled
/// connection, which it derefs to, and the node it came from.
pub struct NodeConnection<P> {
    node: usize,
    pooled: P,
}

impl<P> NodeConnection<P> {
    /// The position of the node the connection came from (in the order the nodes were
    /// given, from 0; the same as in [`MultiHost::node_stats`]).
    pub fn node(&self) -> usize {
        self.node
    }

    /// The node's own pooled connection.
    pub fn into_inner(self) -> P {
        self.pooled
    }
}

impl<P: Deref> Deref for NodeConnection<P> {
    type Target = P::Target;

    fn deref(&self) -> &P::Target {
        &self.pooled
    }
}

impl<P: DerefMut> DerefMut for NodeConnection<P> {
    fn deref_mut(&mut self) -> &mut P::Target {
        &mut self.pooled
    }
}

impl<P> fmt::Debug for NodeConnection<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeConnection")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl<S> MultiHost<S> {
    /// A source over these nodes, named `node1`, `node2`, ... in order. An empty list
    /// makes a source whose every checkout fails ([`PoolErrorKind::Other`]).
    pub fn new(sources: impl IntoIterator<Item = S>) -> Self {
        Self::named(
            sources
                .into_iter()
                .enumerate()
                .map(|(index, source)| (format!("node{}", index.saturating_add(1)), source)),
        )
    }

    /// A source over these nodes, each with the name `tracing` events and
    /// [`node_stats`](Self::node_stats) give it. Do not put secrets in a name.
    pub fn named<N: Into<String>>(nodes: impl IntoIterator<Item = (N, S)>) -> Self {
        MultiHost {
            nodes: nodes
                .into_iter()
                .map(|(name, source)| Node {
                    name: name.into(),
                    source,
                    served: AtomicU64::new(0),
                    failures: AtomicU64::new(0),
                    discarded: AtomicU64::new(0),
                    down_until: AtomicU64::new(0),
                })
                .collect(),
            next: AtomicUsize::new(0),
            cool_down: DEFAULT_COOL_DOWN,
            epoch: Instant::now(),
        }
    }

    /// How long a node whose checkout failed is passed by (default
    /// [`DEFAULT_COOL_DOWN`], 1 s). `Duration::ZERO` asks every node every time.
    #[must_use]
    pub fn cool_down(mut self, cool_down: Duration) -> Self {
        self.cool_down = cool_down;
        self
    }

    /// The cool-down.
    pub fn cool_down_period(&self) -> Duration {
        self.cool_down
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True without nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The source of node `index` (from 0), to reach its pool directly.
    pub fn node(&self, index: usize) -> Option<&S> {
        self.nodes.get(index).map(|node| &node.source)
    }

    /// Per node, in the order the nodes were given: checkouts served, failures,
    /// discards, and whether it cools down now.
    pub fn node_stats(&self) -> Vec<NodeStats> {
        let now = self.now();
        self.nodes
            .iter()
            .map(|node| NodeStats {
                name: node.name.clone(),
                served: node.served.load(Ordering::Relaxed),
                failures: node.failures.load(Ordering::Relaxed),
                discarded: node.discarded.load(Ordering::Relaxed),
                cooling_down: node.cooling_down(now),
            })
            .collect()
    }

    /// Ends every node's cool-down: the next checkouts ask every node again (after you
    /// learnt that a node is back, for example).
    pub fn reset_cool_downs(&self) {
        for node in &self.nodes {
            node.down_until.store(0, Ordering::Relaxed);
        }
    }

    /// Nanoseconds since the epoch, at least 1 (0 means "up").
    fn now(&self) -> u64 {
        let nanos = self.epoch.elapsed().as_nanos();
        u64::try_from(nanos).unwrap_or(u64::MAX).max(1)
    }

    /// The order this checkout asks the nodes in: the nodes that are up, from the
    /// next one in turn among them, then those cooling down (a last resort), also in
    /// turn. Turns are taken among the nodes that are up, so that while one is down the
    /// others share its checkouts evenly (its successor does not get them all).
    fn plan(&self) -> Vec<usize> {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        let now = self.now();
        let (up, cooling): (Vec<usize>, Vec<usize>) = (0..self.nodes.len()).partition(|&index| {
            !self
                .nodes
                .get(index)
                .is_some_and(|node| node.cooling_down(now))
        });
        let mut plan = rotated(up, ticket);
        plan.extend(rotated(cooling, ticket));
        plan
    }

    fn served(&self, index: usize) {
        if let Some(node) = self.nodes.get(index) {
            node.served.fetch_add(1, Ordering::Relaxed);
            node.down_until.store(0, Ordering::Relaxed);
            tracing::trace!(target: "diesel_occ", node = %node.name, "occ checkout served by node");
        }
    }

    fn failed(&self, index: usize, error: &PoolError) {
        if let Some(node) = self.nodes.get(index) {
            node.failures.fetch_add(1, Ordering::Relaxed);
            let cool_down = u64::try_from(self.cool_down.as_nanos()).unwrap_or(u64::MAX);
            let until = self.now().saturating_add(cool_down);
            node.down_until.store(until, Ordering::Relaxed);
            tracing::warn!(
                target: "diesel_occ",
                node = %node.name,
                error = %error,
                cool_down_ms = u64::try_from(self.cool_down.as_millis()).unwrap_or(u64::MAX),
                "occ node checkout failed; trying the next node"
            );
        }
    }

    fn discarded(&self, index: usize) {
        if let Some(node) = self.nodes.get(index) {
            node.discarded.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(target: "diesel_occ", node = %node.name, "occ connection discarded on its node");
        }
    }
}

impl<S> Node<S> {
    fn cooling_down(&self, now: u64) -> bool {
        self.down_until.load(Ordering::Relaxed) > now
    }
}

/// `nodes` from position `ticket` (modulo their number) on, wrapping around.
fn rotated(mut nodes: Vec<usize>, ticket: usize) -> Vec<usize> {
    let start = ticket.checked_rem(nodes.len()).unwrap_or(0);
    nodes.rotate_left(start);
    nodes
}

/// What a checkout that found no node answers.
fn no_nodes() -> PoolError {
    PoolError::new(PoolErrorKind::Other, "a MultiHost source without nodes")
}

/// The error after the time ran out while skipping nodes: a timeout caused by the last
/// node's failure.
fn out_of_time(last: PoolError) -> PoolError {
    if last.kind() == PoolErrorKind::Timeout {
        last
    } else {
        PoolError::new(PoolErrorKind::Timeout, last)
    }
}

impl<S> fmt::Debug for MultiHost<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiHost")
            .field("nodes", &self.node_stats())
            .field("cool_down", &self.cool_down)
            .finish_non_exhaustive()
    }
}

impl<S: ConnectionSource> ConnectionSource for MultiHost<S> {
    type Connection = S::Connection;
    type Pooled<'a>
        = NodeConnection<S::Pooled<'a>>
    where
        Self: 'a;

    fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        self.checkout_within(None)
    }

    /// Asks the nodes in turn, each with the time left, until one serves.
    fn checkout_within(&self, remaining: Option<Duration>) -> Result<Self::Pooled<'_>, PoolError> {
        let deadline = crate::retry::deadline::instant(remaining);
        let mut last = None;
        for index in self.plan() {
            let Some(node) = self.nodes.get(index) else {
                continue;
            };
            let left = crate::retry::deadline::remaining(deadline);
            if let Some(error) = last.take() {
                // Skipping to another node is worth it only with time left.
                if left == Some(Duration::ZERO) {
                    return Err(out_of_time(error));
                }
            }
            match node.source.checkout_within(left) {
                Ok(pooled) => {
                    self.served(index);
                    return Ok(NodeConnection {
                        node: index,
                        pooled,
                    });
                }
                Err(error) => {
                    self.failed(index, &error);
                    last = Some(error);
                }
            }
        }
        Err(last.unwrap_or_else(no_nodes))
    }

    fn discard(&self, pooled: Self::Pooled<'_>) {
        self.discarded(pooled.node);
        match self.nodes.get(pooled.node) {
            Some(node) => node.source.discard(pooled.pooled),
            None => drop(pooled),
        }
    }
}

/// A source that establishes a new connection to one URL for every checkout (and
/// closes it when the attempt ends): what [`MultiHost::from_urls`] makes per node.
///
/// A [`ConnectionSource`] for a Diesel `Connection` type `C`, and with feature `async`
/// an `AsyncConnectionSource` for a diesel-async `AsyncConnection` type. Its `Debug`
/// output shows the host, never the URL (which may hold a password).
pub struct UrlSource<C> {
    url: String,
    name: String,
    connection: std::marker::PhantomData<fn() -> C>,
}

impl<C> UrlSource<C> {
    /// A source connecting to `url`.
    pub fn new(url: impl Into<String>) -> Self {
        let url = url.into();
        let name = host_of(&url).unwrap_or_else(|| String::from("url"));
        UrlSource {
            url,
            name,
            connection: std::marker::PhantomData,
        }
    }

    /// The host and port of the URL (`host:port`), without user or password: the name
    /// [`MultiHost::from_urls`] gives the node. `None` for what is not a `scheme://` URL
    /// (a SQLite file name).
    pub fn host(&self) -> Option<String> {
        host_of(&self.url)
    }
}

impl<C> fmt::Debug for UrlSource<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UrlSource")
            .field("host", &self.name)
            .finish_non_exhaustive()
    }
}

/// `host:port` of a `scheme://user:password@host:port/path?query` URL.
fn host_of(url: &str) -> Option<String> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    (!host.is_empty()).then(|| host.to_owned())
}

impl<C> MultiHost<UrlSource<C>> {
    /// A source over one node per URL, each connecting anew for every checkout
    /// ([`UrlSource`]); each node is named after its URL's host and port (or `nodeN`
    /// for a URL without a host). The connection type comes from the annotation:
    ///
    /// ```
    /// use diesel::SqliteConnection;
    /// use diesel_occ::multi_host::{MultiHost, UrlSource};
    ///
    /// let nodes: MultiHost<UrlSource<SqliteConnection>> =
    ///     MultiHost::from_urls(["mysql://app:secret@10.0.0.1:3306/shop", "mysql://app:secret@10.0.0.2/shop"]);
    /// let names: Vec<String> = nodes.node_stats().into_iter().map(|node| node.name).collect();
    /// assert_eq!(names, ["10.0.0.1:3306", "10.0.0.2"]);
    /// assert!(!format!("{nodes:?}").contains("secret"));
    /// ```
    pub fn from_urls<U: Into<String>>(urls: impl IntoIterator<Item = U>) -> Self {
        Self::named(urls.into_iter().enumerate().map(|(index, url)| {
            let source = UrlSource::new(url);
            let name = source
                .host()
                .unwrap_or_else(|| format!("node{}", index.saturating_add(1)));
            (name, source)
        }))
    }
}

impl<C: diesel::Connection> ConnectionSource for UrlSource<C> {
    type Connection = C;
    type Pooled<'a>
        = OwnedConnection<C>
    where
        Self: 'a;

    fn checkout(&self) -> Result<OwnedConnection<C>, PoolError> {
        Ok(OwnedConnection::new(C::establish(&self.url)?))
    }
}
