//! Pools for the retry scenarios: warm deadpool pools of test connections that say who
//! they are, a source over a deadpool or r2d2 pool that counts its checkouts and
//! discards, and a connection that does not wait for locks.

use std::sync::atomic::{AtomicU32, Ordering};

use deadpool::managed::Manager;
use diesel::r2d2::{ConnectionManager, Pool as R2d2Pool, PooledConnection, R2D2Connection};
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolError as ManagerError,
};
use diesel_occ::PoolError;
use diesel_occ::asynchronous::AsyncConnectionSource;
use diesel_occ::blocking::ConnectionSource;
use diesel_occ_tests::{AsyncTestConnection, AsyncTestDb, connect_async};

/// A deadpool pool of test connections (see `AsyncTestConnection::SETUP`), holding
/// `size` connections that are all open and idle on return. Deadpool hands idle
/// connections out first in, first out, so consecutive checkouts from this warm pool
/// are distinct connections.
pub(crate) async fn warm_pool<C: AsyncTestConnection>(db: &AsyncTestDb<C>, size: usize) -> Pool<C>
where
    AsyncDieselConnectionManager<C>: Manager<Type = C, Error = ManagerError>,
{
    let mut config = ManagerConfig::default();
    config.custom_setup = Box::new(|url| Box::pin(connect_async::<C>(url)));
    let manager = AsyncDieselConnectionManager::<C>::new_with_config(db.url(), config);
    let pool = Pool::builder(manager).max_size(size).build();
    let pool = pool.expect("deadpool pool");
    let mut warm: Vec<Object<C>> = Vec::new();
    for _ in 0..size {
        warm.push(pool.get().await.expect("warm the pool"));
    }
    drop(warm);
    assert_eq!(pool.status().available, size);
    pool
}

/// A new connection that gives up on a row lock (or SQLite's write lock) quickly.
pub(crate) async fn impatient<C: AsyncTestConnection>(db: &AsyncTestDb<C>) -> C {
    let mut conn = db.conn().await;
    let set = conn.batch_execute(C::SHORT_LOCK_WAIT).await;
    set.expect("short lock wait");
    conn
}

/// A pool (deadpool's, or r2d2's) as a connection source that also counts its
/// checkouts and discards, delegating to the pool's own implementation.
pub(crate) struct Counting<'p, P> {
    pool: &'p P,
    checkouts: AtomicU32,
    discards: AtomicU32,
}

impl<'p, P> Counting<'p, P> {
    pub(crate) fn new(pool: &'p P) -> Self {
        Counting {
            pool,
            checkouts: AtomicU32::new(0),
            discards: AtomicU32::new(0),
        }
    }

    /// How many connections the source handed out.
    pub(crate) fn checkouts(&self) -> u32 {
        self.checkouts.load(Ordering::SeqCst)
    }

    /// How many connections the source was asked to drop instead of returning.
    pub(crate) fn discards(&self) -> u32 {
        self.discards.load(Ordering::SeqCst)
    }
}

impl<C> AsyncConnectionSource for Counting<'_, Pool<C>>
where
    C: AsyncTestConnection,
    AsyncDieselConnectionManager<C>: Manager<Type = C, Error = ManagerError> + Send + Sync,
{
    type Connection = C;
    type Pooled<'a>
        = Object<C>
    where
        Self: 'a;

    fn checkout(&self) -> impl std::future::Future<Output = Result<Object<C>, PoolError>> + Send {
        self.checkouts.fetch_add(1, Ordering::SeqCst);
        self.pool.checkout()
    }

    fn discard(&self, pooled: Object<C>) {
        self.discards.fetch_add(1, Ordering::SeqCst);
        self.pool.discard(pooled);
    }
}

impl<C> ConnectionSource for Counting<'_, R2d2Pool<ConnectionManager<C>>>
where
    C: R2D2Connection + Send + 'static,
{
    type Connection = C;
    type Pooled<'a>
        = PooledConnection<ConnectionManager<C>>
    where
        Self: 'a;

    fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        self.checkouts.fetch_add(1, Ordering::SeqCst);
        self.pool.checkout()
    }

    fn discard(&self, pooled: PooledConnection<ConnectionManager<C>>) {
        self.discards.fetch_add(1, Ordering::SeqCst);
        self.pool.discard(pooled);
    }
}
