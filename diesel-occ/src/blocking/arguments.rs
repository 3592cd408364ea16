//! The traits of a checked write's arguments: the changes of
//! [`update_by_key`](super::VersionColumnDsl::update_by_key) and
//! [`soft_delete_checked`](super::VersionColumnDsl::soft_delete_checked), the predicate of
//! [`save_checked_where`](super::CheckedDsl::save_checked_where), the form of
//! [`insert_checked_from`](super::InsertDsl::insert_checked_from).
//!
//! Each is implemented for every argument the write can run with, as Diesel's
//! `AsChangeset` and `Expression` are: apps need not concern themselves with them, beyond
//! naming one in a function generic over the changes or the predicate.

use diesel::associations::HasTable;
use diesel::connection::Connection;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::{ExecuteDsl, FilterDsl};
use diesel::{Insertable, QueryResult, Table};

use crate::statement::{CachedUpdate, GuardedUpdate, Narrow, NoTokenAssignment};
use crate::versioned::{KeyGuarded, TokenIs, Versioned, VersionedParts, key_guarded};

/// Changes a checked write can make to a row of `T` on `Conn`, beside the fresh token:
/// Diesel assignments (`column.eq(value)`, a tuple of them, an `AsChangeset` struct, a
/// [`ChangesetColumns`](crate::ChangesetColumns) form) to `T`'s table that neither
/// assign nor read the token column.
///
/// Implemented for every such changeset; the bound of
/// [`VersionColumnDsl::update_by_key`](super::VersionColumnDsl::update_by_key) and
/// [`soft_delete_checked`](super::VersionColumnDsl::soft_delete_checked). A changeset
/// that touches the token column is a compile error naming it.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::prelude::*;
/// use diesel_occ::prelude::*;
///
/// /// A write from a client's ETag, generic over the entity and its changes.
/// fn apply<T, C>(conn: &mut SqliteConnection, key: T::Key, etag: &T::Token, changes: C)
///     -> Result<T::Token, diesel_occ::Error>
/// where
///     T: VersionColumnDsl<SqliteConnection>,
///     C: CheckedChanges<T, SqliteConnection>,
/// {
///     T::update_by_key(conn, key, etag, changes)
/// }
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let etag = apply::<Stock, _>(&mut conn, 1, &1, stock::available.eq(2))?;
/// assert_eq!(etag, 2);
/// # Ok(())
/// # }
/// ```
pub trait CheckedChanges<T: Versioned, Conn>: Sized {
    /// `UPDATE t SET <self>, token = <fresh> WHERE <key> AND token = <expected>`: the rows
    /// written.
    #[doc(hidden)]
    fn run_by_key(
        self,
        conn: &mut Conn,
        key: T::Key,
        expected: &T::Token,
        fresh: &T::Token,
    ) -> QueryResult<usize>;
}

impl<C, T, Conn> CheckedChanges<T, Conn> for C
where
    T: VersionedParts,
    Conn: Connection,
    C: NoTokenAssignment<T::TokenColumn>,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    <KeyGuarded<T> as HasTable>::Table: Table,
    (C, T::TokenAssignment): AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    CachedUpdate<KeyGuarded<T>, (C, T::TokenAssignment)>: ExecuteDsl<Conn>,
{
    fn run_by_key(
        self,
        conn: &mut Conn,
        key: T::Key,
        expected: &T::Token,
        fresh: &T::Token,
    ) -> QueryResult<usize> {
        let target = key_guarded::<T>(key, expected);
        let changes = (self, T::token_assignment(fresh));
        let update = CachedUpdate::new(target, changes)
            .cached_if(<C as NoTokenAssignment<T::TokenColumn>>::FIXED_TEXT);
        ExecuteDsl::execute(update, conn)
    }
}

/// A condition of the caller's that a checked save of `T` on `Conn` can add to its
/// `WHERE`: a boolean Diesel expression on `T`'s table (`stock::available.ge(10)`).
///
/// Implemented for every such expression; the bound of
/// [`CheckedDsl::save_checked_where`](super::CheckedDsl::save_checked_where).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::prelude::*;
/// use diesel_occ::prelude::*;
///
/// fn save_if<T, P>(entity: &mut T, conn: &mut SqliteConnection, predicate: P)
///     -> Result<(), diesel_occ::Error>
/// where
///     T: CheckedDsl<SqliteConnection>,
///     P: CheckedPredicate<T, SqliteConnection>,
/// {
///     entity.save_checked_where(conn, predicate)
/// }
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut stock = Stock::find(&mut conn, 1)?;
/// stock.available -= 1;
/// save_if(&mut stock, &mut conn, stock::available.ge(1))?;
/// # Ok(())
/// # }
/// ```
pub trait CheckedPredicate<T: Versioned, Conn>: Sized {
    /// Runs `update` with `AND <self>` in its `WHERE`: the rows written and their token.
    #[doc(hidden)]
    fn run_narrowed(
        self,
        update: T::UpdateStatement,
        conn: &mut Conn,
        fresh: T::Token,
    ) -> QueryResult<(usize, T::Token)>;
}

impl<P, T, Conn> CheckedPredicate<T, Conn> for P
where
    T: Versioned,
    T::UpdateStatement: Narrow<P>,
    <T::UpdateStatement as Narrow<P>>::Output: GuardedUpdate<Conn, T::Token>,
{
    fn run_narrowed(
        self,
        update: T::UpdateStatement,
        conn: &mut Conn,
        fresh: T::Token,
    ) -> QueryResult<(usize, T::Token)> {
        update.narrow(self).run_guarded(conn, fresh)
    }
}

/// A new row of `T` without its token column, which a checked insert on `Conn` completes
/// with the initial token: a struct deriving Diesel's `Insertable` for `T`'s table (the
/// form of a create request).
///
/// Implemented for every such struct; the bound of
/// [`InsertDsl::insert_checked_from`](super::InsertDsl::insert_checked_from).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::prelude::*;
/// use diesel_occ::prelude::*;
///
/// #[derive(Insertable)]
/// #[diesel(table_name = stock)]
/// struct NewStock {
///     id: i32,
///     available: i32,
///     deleted: bool,
/// }
///
/// fn create<T, F>(conn: &mut SqliteConnection, form: F) -> Result<T::Token, diesel_occ::Error>
/// where
///     T: InsertDsl<SqliteConnection>,
///     F: InsertableForm<T, SqliteConnection>,
/// {
///     T::insert_checked_from(conn, form)
/// }
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let etag = create::<Stock, _>(&mut conn, NewStock { id: 9, available: 1, deleted: false })?;
/// assert_eq!(etag, 1);
/// # Ok(())
/// # }
/// ```
pub trait InsertableForm<T: Versioned, Conn>: Sized {
    /// `INSERT INTO t (<self's columns>, token) VALUES (..., <initial>)`: the rows written.
    #[doc(hidden)]
    fn insert_with_token(self, conn: &mut Conn, initial: &T::Token) -> QueryResult<usize>;
}

impl<New, T, Conn> InsertableForm<T, Conn> for New
where
    T: VersionedParts,
    T::Table: Table + Default,
    Conn: Connection,
    (New, T::TokenAssignment): Insertable<T::Table>,
    InsertStatement<T::Table, <(New, T::TokenAssignment) as Insertable<T::Table>>::Values>:
        ExecuteDsl<Conn>,
{
    fn insert_with_token(self, conn: &mut Conn, initial: &T::Token) -> QueryResult<usize> {
        let row = (self, T::token_assignment(initial));
        ExecuteDsl::execute(diesel::insert_into(T::Table::default()).values(row), conn)
    }
}
