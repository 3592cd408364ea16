//! diesel-async's bb8 pool (feature `bb8`): its types, what building one takes, and its
//! [`AsyncConnectionSource`].
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
//! use diesel_occ::asynchronous::pool::bb8::{AsyncDieselConnectionManager, Pool};
//! use diesel_occ::asynchronous::{self, prelude::*};
//! use diesel_occ::retry::RetryPolicy;
//!
//! type Conn = SyncConnectionWrapper<SqliteConnection>;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let (url, _keep) = shared_database("bb8_module_doc");
//! let manager = AsyncDieselConnectionManager::<Conn>::new(url);
//! let pool = Pool::builder().max_size(4).build(manager).await?;
//!
//! let left = asynchronous::retry(&pool, &RetryPolicy::new(), async |conn, attempt| {
//!     let mut stock: Stock = attempt.find(conn, 1).await?;
//!     stock.available -= 1;
//!     stock.save_checked(conn).await?;
//!     Ok(stock.available)
//! })
//! .await?;
//! assert_eq!(left, 9);
//! # Ok(())
//! # }
//! ```

use ::bb8::ManageConnection;
use diesel_async::TransactionManager;
use diesel_async::pooled_connection::PoolableConnection;

use crate::asynchronous::AsyncConnectionSource;
use crate::error::{PoolError as CheckoutError, PoolErrorKind};

pub use ::bb8::{Builder, QueueStrategy};
pub use diesel_async::pooled_connection::bb8::{Pool, PooledConnection, RunError};
pub use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolError as ManagerError, RecyclingMethod,
};

/// A checkout is `pool.get()`; a connection whose state is unknown is marked broken
/// before it goes back, so that the pool closes it.
///
/// bb8 has no way to take a connection out of its pool: a dropped `PooledConnection`
/// always goes back, and the pool keeps it unless the manager's `has_broken` says
/// otherwise. diesel-async's manager asks the connection's transaction manager, so
/// [`discard`](AsyncConnectionSource::discard) puts that in its error state, the one a
/// failed rollback leaves; bb8 then closes the connection (which makes the server roll
/// back what it had open) and opens a new one when it needs one.
impl<C> AsyncConnectionSource for Pool<C>
where
    C: PoolableConnection + Send + 'static,
    AsyncDieselConnectionManager<C>: ManageConnection<Connection = C, Error = ManagerError>,
{
    type Connection = C;
    type Pooled<'a> = PooledConnection<'a, C>;

    async fn checkout(&self) -> Result<Self::Pooled<'_>, CheckoutError> {
        self.get().await.map_err(checkout_error)
    }

    /// Marks the connection's transaction manager broken and gives it back; bb8 closes
    /// it instead of keeping it.
    fn discard(&self, mut pooled: Self::Pooled<'_>) {
        C::TransactionManager::transaction_manager_status_mut(&mut pooled).set_in_error();
        drop(pooled);
    }
}

/// bb8's error as a checkout failure: bb8 only tells a wait that timed out from an
/// error of the manager (connecting, or the check of an idle connection).
fn checkout_error(error: RunError) -> CheckoutError {
    match error {
        RunError::TimedOut => CheckoutError::new(PoolErrorKind::Timeout, error),
        RunError::User(_) => CheckoutError::new(PoolErrorKind::Connect, error),
    }
}
