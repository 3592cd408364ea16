//! The traits of an async checked write's arguments: the twins of
//! [`blocking::CheckedChanges`](crate::blocking::CheckedChanges),
//! [`blocking::CheckedPredicate`](crate::blocking::CheckedPredicate) and
//! [`blocking::InsertableForm`](crate::blocking::InsertableForm), implemented for the
//! same arguments.

use diesel::associations::HasTable;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::FilterDsl;
use diesel::{Insertable, Table};
use diesel_async::AsyncConnection;
use diesel_async::methods::ExecuteDsl;

use super::GuardedUpdate;
use crate::statement::{CachedUpdate, Narrow, NoTokenAssignment};
use crate::versioned::{KeyGuarded, TokenIs, Versioned, VersionedParts, key_guarded};

/// Changes an async checked write can make to a row of `T` on `Conn`, beside the fresh
/// token: the twin of [`blocking::CheckedChanges`](crate::blocking::CheckedChanges), the
/// bound of [`VersionColumnDsl::update_by_key`](super::VersionColumnDsl::update_by_key)
/// and [`soft_delete_checked`](super::VersionColumnDsl::soft_delete_checked).
///
/// ```
/// use diesel::prelude::*;
/// use diesel_async::AsyncConnection;
/// use diesel_occ::asynchronous::prelude::*;
///
/// async fn apply<T, C, Changes>(conn: &mut C, key: T::Key, etag: &T::Token, changes: Changes)
///     -> Result<T::Token, diesel_occ::Error>
/// where
///     T: VersionColumnDsl<C>,
///     C: AsyncConnection,
///     Changes: CheckedChanges<T, C>,
/// {
///     T::update_by_key(conn, key, etag, changes).await
/// }
/// ```
pub trait CheckedChanges<T: Versioned, Conn: AsyncConnection> {
    /// The statement that writes them.
    #[doc(hidden)]
    type Statement: ExecuteDsl<Conn> + Send;

    /// `UPDATE t SET <self>, token = <fresh> WHERE <key> AND token = <expected>`.
    #[doc(hidden)]
    fn by_key(self, key: T::Key, expected: &T::Token, fresh: &T::Token) -> Self::Statement;
}

impl<C, T, Conn> CheckedChanges<T, Conn> for C
where
    T: VersionedParts,
    Conn: AsyncConnection,
    C: NoTokenAssignment<T::TokenColumn>,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    <KeyGuarded<T> as HasTable>::Table: Table,
    (C, T::TokenAssignment): AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    CachedUpdate<KeyGuarded<T>, (C, T::TokenAssignment)>: ExecuteDsl<Conn> + Send,
{
    type Statement = CachedUpdate<KeyGuarded<T>, (C, T::TokenAssignment)>;

    fn by_key(self, key: T::Key, expected: &T::Token, fresh: &T::Token) -> Self::Statement {
        let target = key_guarded::<T>(key, expected);
        CachedUpdate::new(target, (self, T::token_assignment(fresh)))
            .cached_if(<C as NoTokenAssignment<T::TokenColumn>>::FIXED_TEXT)
    }
}

/// A condition of the caller's that an async checked save of `T` on `Conn` can add to
/// its `WHERE`: the twin of
/// [`blocking::CheckedPredicate`](crate::blocking::CheckedPredicate), the bound of
/// [`CheckedDsl::save_checked_where`](super::CheckedDsl::save_checked_where).
///
/// ```
/// use diesel_async::AsyncConnection;
/// use diesel_occ::asynchronous::prelude::*;
///
/// async fn save_if<T, C, P>(entity: &mut T, conn: &mut C, predicate: P)
///     -> Result<(), diesel_occ::Error>
/// where
///     T: CheckedDsl<C>,
///     C: AsyncConnection,
///     P: CheckedPredicate<T, C>,
/// {
///     entity.save_checked_where(conn, predicate).await
/// }
/// ```
pub trait CheckedPredicate<T: Versioned, Conn: AsyncConnection> {
    /// The save's UPDATE with the condition in its `WHERE`.
    #[doc(hidden)]
    type Narrowed: GuardedUpdate<Conn, T::Token> + Send;

    /// Adds `AND <self>` to `update`.
    #[doc(hidden)]
    fn narrow_update(self, update: T::UpdateStatement) -> Self::Narrowed;
}

impl<P, T, Conn> CheckedPredicate<T, Conn> for P
where
    T: Versioned,
    Conn: AsyncConnection,
    T::UpdateStatement: Narrow<P>,
    <T::UpdateStatement as Narrow<P>>::Output: GuardedUpdate<Conn, T::Token> + Send,
{
    type Narrowed = <T::UpdateStatement as Narrow<P>>::Output;

    fn narrow_update(self, update: T::UpdateStatement) -> Self::Narrowed {
        update.narrow(self)
    }
}

/// A new row of `T` without its token column, which an async checked insert on `Conn`
/// completes with the initial token: the twin of
/// [`blocking::InsertableForm`](crate::blocking::InsertableForm), the bound of
/// [`InsertDsl::insert_checked_from`](super::InsertDsl::insert_checked_from).
///
/// ```
/// use diesel_async::AsyncConnection;
/// use diesel_occ::asynchronous::prelude::*;
///
/// async fn create<T, C, F>(conn: &mut C, form: F) -> Result<T::Token, diesel_occ::Error>
/// where
///     T: InsertDsl<C>,
///     C: AsyncConnection,
///     F: InsertableForm<T, C>,
/// {
///     T::insert_checked_from(conn, form).await
/// }
/// ```
pub trait InsertableForm<T: Versioned, Conn: AsyncConnection> {
    /// The statement that inserts it.
    #[doc(hidden)]
    type Statement: ExecuteDsl<Conn> + Send;

    /// `INSERT INTO t (<self's columns>, token) VALUES (..., <initial>)`.
    #[doc(hidden)]
    fn insert_statement(self, initial: &T::Token) -> Self::Statement;
}

impl<New, T, Conn> InsertableForm<T, Conn> for New
where
    T: VersionedParts,
    T::Table: Table + Default,
    Conn: AsyncConnection,
    (New, T::TokenAssignment): Insertable<T::Table>,
    InsertStatement<T::Table, <(New, T::TokenAssignment) as Insertable<T::Table>>::Values>:
        ExecuteDsl<Conn> + Send,
{
    type Statement =
        InsertStatement<T::Table, <(New, T::TokenAssignment) as Insertable<T::Table>>::Values>;

    fn insert_statement(self, initial: &T::Token) -> Self::Statement {
        diesel::insert_into(T::Table::default()).values((self, T::token_assignment(initial)))
    }
}
