//! diesel-async's deadpool pool (feature `deadpool`): its types, and what building one
//! takes.
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
//! use diesel_occ::asynchronous::pool::deadpool::{AsyncDieselConnectionManager, Pool};
//! use diesel_occ::asynchronous::{self, prelude::*};
//! use diesel_occ::retry::RetryPolicy;
//!
//! type Conn = SyncConnectionWrapper<SqliteConnection>;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let (url, _keep) = shared_database("deadpool_module_doc");
//! let manager = AsyncDieselConnectionManager::<Conn>::new(url);
//! let pool = Pool::builder(manager).max_size(4).build()?;
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

pub use diesel_async::pooled_connection::deadpool::{
    BuildError, Hook, HookError, Object, Pool, PoolBuilder, PoolError,
};
pub use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolError as ManagerError, RecyclingMethod,
};
