//! diesel-occ's checked operations on a [`Stock`], implemented per connection type by
//! `checked_stock!` in the backend modules.
//!
//! The rest of the strategies is generic over the connection, bounded by diesel-occ's
//! public traits (`LockingConnection`, `ConnectionSource`). These calls are not:
//! `EntityDsl::find`, `CheckedDsl::save_checked` and `AttemptDsl::find` carry bounds of
//! their own on the entity's hidden statement types (`<Stock as
//! Versioned>::UpdateStatement: GuardedUpdate<C, _>`, `CurrentToken<<Stock as
//! Versioned>::TokenQuery>: LoadQuery<..>`, and for a locking read `C::Backend:
//! LockingBackend`), which code generic over the connection cannot name with public
//! items; `BatchDsl`, `Combinable` and diesel-async's pool manager would have every
//! generic caller repeat theirs. On a concrete connection they hold without being
//! written, so each backend module implements these traits with one macro call.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use diesel_occ::Error;
use diesel_occ::asynchronous::AsyncConnectionSource;
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::{asynchronous, blocking};

use crate::harness::Held;
use crate::model::Stock;

/// `Stock::find`, `attempt.find`, `save_checked`, `save_all_checked` and
/// `Combiner::apply` on a blocking connection.
pub trait CheckedStock: diesel::Connection + Sized {
    /// `EntityDsl::find`.
    fn find_stock(&mut self, key: i32) -> Result<Stock, Error>;
    /// `AttemptDsl::find`: a locking read when the attempt escalates.
    fn find_in(&mut self, attempt: &Attempt, key: i32) -> Result<Stock, Error>;
    /// `CheckedDsl::save_checked`.
    fn save_stock(&mut self, stock: &mut Stock) -> Result<(), Error>;
    /// `BatchDsl::save_all_checked`.
    fn save_all(&mut self, stocks: &mut [Stock]) -> Result<(), Error>;
    /// One reservation ([`Stock::take_one`]) through `combiner`, with the worker's
    /// connection as its source.
    fn combine(
        held: &Held<Self>,
        combiner: &blocking::Combiner<Stock>,
        policy: &RetryPolicy,
        key: i32,
    ) -> Result<bool, Error>;
}

/// The same on a diesel-async connection, and its deadpool pool.
pub trait AsyncCheckedStock: diesel_async::AsyncConnection + 'static {
    /// Statements every new connection runs first (SQLite's pragmas).
    const AFTER_CONNECT: &'static str;
    /// Its deadpool pool, `Pool<Self>`.
    type Pool: AsyncConnectionSource<Connection = Self> + Clone + Send + Sync + 'static;
    /// `asynchronous::AttemptDsl::find`.
    fn find_in(
        &mut self,
        attempt: &Attempt,
        key: i32,
    ) -> impl Future<Output = Result<Stock, Error>> + Send;
    /// `asynchronous::CheckedDsl::save_checked`.
    fn save_stock(&mut self, stock: &mut Stock) -> impl Future<Output = Result<(), Error>> + Send;
    /// `asynchronous::BatchDsl::save_all_checked`.
    fn save_all(&mut self, stocks: &mut [Stock]) -> impl Future<Output = Result<(), Error>> + Send;
    /// One reservation ([`Stock::take_one`]) through `combiner`, with `pool` as its
    /// source.
    fn combine<'a>(
        combiner: &'a asynchronous::Combiner<Stock>,
        pool: &'a Self::Pool,
        policy: &'a RetryPolicy,
        key: i32,
    ) -> impl Future<Output = Result<bool, Error>> + Send + 'a;
    /// `strategies::asynchronous::pool`: `size` connections counting their statements
    /// into `statements`.
    fn pool(
        url: &str,
        size: usize,
        statements: Arc<AtomicU64>,
    ) -> impl Future<Output = Result<Self::Pool, String>> + Send + '_;
}

/// Implements [`CheckedStock`] for a blocking connection type and [`AsyncCheckedStock`]
/// for an async one (whose new connections first run `$after_connect`): each method is
/// the diesel-occ call of the same name.
macro_rules! checked_stock {
    ($blocking:ty, $asynchronous:ty, $after_connect:expr) => {
        impl crate::strategies::checked::CheckedStock for $blocking {
            fn find_stock(&mut self, key: i32) -> Result<crate::model::Stock, diesel_occ::Error> {
                <crate::model::Stock as diesel_occ::blocking::EntityDsl<Self>>::find(self, key)
            }

            fn find_in(
                &mut self,
                attempt: &diesel_occ::retry::Attempt,
                key: i32,
            ) -> Result<crate::model::Stock, diesel_occ::Error> {
                diesel_occ::blocking::AttemptDsl::find(attempt, self, key)
            }

            fn save_stock(&mut self, stock: &mut crate::model::Stock) -> Result<(), diesel_occ::Error> {
                diesel_occ::blocking::CheckedDsl::save_checked(stock, self)
            }

            fn save_all(&mut self, stocks: &mut [crate::model::Stock]) -> Result<(), diesel_occ::Error> {
                diesel_occ::blocking::BatchDsl::save_all_checked(stocks, self)
            }

            fn combine(
                held: &crate::harness::Held<Self>,
                combiner: &diesel_occ::blocking::Combiner<crate::model::Stock>,
                policy: &diesel_occ::retry::RetryPolicy,
                key: i32,
            ) -> Result<bool, diesel_occ::Error> {
                combiner.apply(held, policy, key, crate::model::Stock::take_one)
            }
        }

        impl crate::strategies::checked::AsyncCheckedStock for $asynchronous {
            const AFTER_CONNECT: &'static str = $after_connect;
            type Pool = diesel_async::pooled_connection::deadpool::Pool<Self>;

            fn find_in(
                &mut self,
                attempt: &diesel_occ::retry::Attempt,
                key: i32,
            ) -> impl std::future::Future<Output = Result<crate::model::Stock, diesel_occ::Error>> + Send
            {
                diesel_occ::asynchronous::AttemptDsl::find(attempt, self, key)
            }

            fn save_stock(
                &mut self,
                stock: &mut crate::model::Stock,
            ) -> impl std::future::Future<Output = Result<(), diesel_occ::Error>> + Send {
                diesel_occ::asynchronous::CheckedDsl::save_checked(stock, self)
            }

            fn save_all(
                &mut self,
                stocks: &mut [crate::model::Stock],
            ) -> impl std::future::Future<Output = Result<(), diesel_occ::Error>> + Send {
                diesel_occ::asynchronous::BatchDsl::save_all_checked(stocks, self)
            }

            fn combine<'a>(
                combiner: &'a diesel_occ::asynchronous::Combiner<crate::model::Stock>,
                pool: &'a Self::Pool,
                policy: &'a diesel_occ::retry::RetryPolicy,
                key: i32,
            ) -> impl std::future::Future<Output = Result<bool, diesel_occ::Error>> + Send + 'a {
                combiner.apply(pool, policy, key, crate::model::Stock::take_one)
            }

            fn pool(
                url: &str,
                size: usize,
                statements: std::sync::Arc<std::sync::atomic::AtomicU64>,
            ) -> impl std::future::Future<Output = Result<Self::Pool, String>> + Send + '_ {
                crate::strategies::asynchronous::pool::<Self>(url, size, statements)
            }
        }
    };
}
pub(crate) use checked_stock;
