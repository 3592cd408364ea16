//! diesel-occ's checked operations on a [`Stock`], one impl per connection type in
//! the backend modules.
//!
//! The rest of the strategies is generic over the connection, bounded by diesel-occ's
//! public traits (`LockingConnection`, `ConnectionSource`, `Combinable`, `BatchDsl`).
//! These three calls are not: `EntityDsl::find`, `CheckedDsl::save_checked` and
//! `AttemptDsl::find` carry bounds of their own on the entity's hidden statement types
//! (`<Stock as Versioned>::UpdateStatement: GuardedUpdate<C, _>`,
//! `CurrentToken<<Stock as Versioned>::TokenQuery>: LoadQuery<..>`, and for a locking
//! read `C::Backend: LockingBackend`), which code generic over the connection cannot
//! name with public items. On a concrete connection they hold without being written,
//! so each backend module implements these traits in three lines.

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
