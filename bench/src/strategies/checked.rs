//! diesel-occ's checked operations on a [`Stock`], implemented per connection type by
//! `checked_stock!` in the backend modules.
//!
//! The rest of the strategies is generic over the connection, bounded by diesel-occ's
//! public traits (`LockingConnection`, `ConnectionSource`, `Combinable`, `BatchDsl`).
//! These three calls are not: `EntityDsl::find`, `CheckedDsl::save_checked` and
//! `AttemptDsl::find` carry bounds of their own on the entity's hidden statement types
//! (`<Stock as Versioned>::UpdateStatement: GuardedUpdate<C, _>`,
//! `CurrentToken<<Stock as Versioned>::TokenQuery>: LoadQuery<..>`, and for a locking
//! read `C::Backend: LockingBackend`), which code generic over the connection cannot
//! name with public items. On a concrete connection they hold without being written,
//! so each backend module implements these traits with one macro call.

use std::future::Future;

use diesel_occ::Error;
use diesel_occ::retry::Attempt;

use crate::model::Stock;

/// `Stock::find`, `attempt.find` and `save_checked` on a blocking connection.
pub trait CheckedStock: diesel::Connection {
    /// `EntityDsl::find`.
    fn find_stock(&mut self, key: i32) -> Result<Stock, Error>;
    /// `AttemptDsl::find`: a locking read when the attempt escalates.
    fn find_in(&mut self, attempt: &Attempt, key: i32) -> Result<Stock, Error>;
    /// `CheckedDsl::save_checked`.
    fn save_stock(&mut self, stock: &mut Stock) -> Result<(), Error>;
}

/// The same on a diesel-async connection.
pub trait AsyncCheckedStock: diesel_async::AsyncConnection {
    /// `asynchronous::AttemptDsl::find`.
    fn find_in(
        &mut self,
        attempt: &Attempt,
        key: i32,
    ) -> impl Future<Output = Result<Stock, Error>> + Send;
    /// `asynchronous::CheckedDsl::save_checked`.
    fn save_stock(&mut self, stock: &mut Stock) -> impl Future<Output = Result<(), Error>> + Send;
}

/// Implements [`CheckedStock`] for a blocking connection type and [`AsyncCheckedStock`]
/// for an async one: each method is the diesel-occ call of the same name.
macro_rules! checked_stock {
    ($blocking:ty, $asynchronous:ty) => {
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
        }

        impl crate::strategies::checked::AsyncCheckedStock for $asynchronous {
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
        }
    };
}
pub(crate) use checked_stock;
