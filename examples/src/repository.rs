//! A generic repository over any versioned entity: the layer an application writes
//! around diesel-occ, once, for all its entities. Each method needs the one public
//! bound of the checked write it calls ([`EntityDsl`], [`CheckedDsl`], [`InsertDsl`],
//! [`VersionColumnDsl`], and their async twins), nothing about Diesel's statement types.
//! Its arguments are bounded the same way: a changeset by [`CheckedChanges`], a predicate
//! by [`CheckedPredicate`], a create request's form by [`InsertableForm`].
//!
//! Every example app reads and writes its versioned rows through one of these.
//!
//! ```
//! use diesel::prelude::*;
//! use diesel_occ::prelude::*;
//! use diesel_occ_examples::repository::Repository;
//!
//! diesel::table! {
//!     notes (id) { id -> Integer, body -> Text, version -> Integer }
//! }
//!
//! #[derive(Debug, Clone, Queryable, Selectable, Insertable, Versioned)]
//! #[diesel(table_name = notes)]
//! struct Note {
//!     id: i32,
//!     body: String,
//!     #[occ(version)]
//!     version: i32,
//! }
//!
//! # fn main() -> Result<(), diesel_occ::Error> {
//! let mut conn = SqliteConnection::establish(":memory:").unwrap();
//! # diesel::sql_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, version INTEGER NOT NULL)").execute(&mut conn).unwrap();
//! let notes = Repository::<Note>::new();
//! let mut note = Note { id: 1, body: "draft".into(), version: 0 };
//! notes.create(&mut conn, &mut note)?;
//! note.body = "final".into();
//! notes.save(&mut conn, &mut note)?;
//! let etag = notes.update(&mut conn, 1, &note.version, notes::body.eq("edited"))?;
//! notes.delete(&mut conn, 1, &etag)?;
//! assert!(notes.get(&mut conn, 1).unwrap_err().is_not_found());
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::marker::PhantomData;

use diesel::Connection;
use diesel_async::AsyncConnection;
use diesel_occ::blocking::{AttemptDsl, LockingConnection};
use diesel_occ::retry::Attempt;
use diesel_occ::{CheckedChanges, CheckedDsl, CheckedPredicate, EntityDsl, Error, InsertDsl};
use diesel_occ::{InsertableForm, VersionColumnDsl, Versioned, asynchronous};

/// The checked reads and writes of entity `T` on any blocking connection.
pub struct Repository<T>(PhantomData<fn() -> T>);

impl<T: Versioned> Repository<T> {
    /// A repository of `T`; `const`, so an app can keep one in a `const` item.
    pub const fn new() -> Self {
        Repository(PhantomData)
    }

    /// The row with `key`, or [`Error::NotFound`].
    pub fn get<C: Connection>(&self, conn: &mut C, key: T::Key) -> Result<T, Error>
    where
        T: EntityDsl<C>,
    {
        T::find(conn, key)
    }

    /// The row with `key` as an attempt of the retry helper reads it: a plain read, or a
    /// locking one once the attempt has escalated on a hot row.
    pub fn get_within<C: LockingConnection>(
        &self,
        attempt: &Attempt,
        conn: &mut C,
        key: T::Key,
    ) -> Result<T, Error>
    where
        T: EntityDsl<C>,
    {
        attempt.find::<T>(conn, key)
    }

    /// The row with `key` if it still holds the client's `etag`: a conflict when it
    /// holds another token, so a stale client is refused before any edit.
    pub fn get_checked<C: Connection>(
        &self,
        conn: &mut C,
        key: T::Key,
        etag: &T::Token,
    ) -> Result<T, Error>
    where
        T: EntityDsl<C>,
    {
        T::find_checked(conn, key, etag)
    }

    /// Inserts `entity` with its initial token, which it returns (the first ETag).
    pub fn create<C: Connection>(&self, conn: &mut C, entity: &mut T) -> Result<T::Token, Error>
    where
        T: InsertDsl<C>,
    {
        entity.insert_checked(conn)
    }

    /// Inserts a row from `form`, an `Insertable` struct without the token column (a
    /// create request), with the initial token, which it returns (the first ETag).
    pub fn create_from<C: Connection, F: InsertableForm<T, C>>(
        &self,
        conn: &mut C,
        form: F,
    ) -> Result<T::Token, Error>
    where
        T: InsertDsl<C>,
    {
        T::insert_checked_from(conn, form)
    }

    /// Saves `entity` if the row still holds the token it was read with.
    pub fn save<C: Connection>(&self, conn: &mut C, entity: &mut T) -> Result<(), Error>
    where
        T: CheckedDsl<C>,
    {
        entity.save_checked(conn)
    }

    /// Saves `entity` if the row still holds the token it was read with and matches
    /// `predicate` (a status or fencing token that was read, say).
    pub fn save_where<C: Connection, P: CheckedPredicate<T, C>>(
        &self,
        conn: &mut C,
        entity: &mut T,
        predicate: P,
    ) -> Result<(), Error>
    where
        T: CheckedDsl<C>,
    {
        entity.save_checked_where(conn, predicate)
    }

    /// Writes `changes` to the row with `key` if it holds the client's `etag`; returns
    /// the next ETag.
    pub fn update<C: Connection, Changes: CheckedChanges<T, C>>(
        &self,
        conn: &mut C,
        key: T::Key,
        etag: &T::Token,
        changes: Changes,
    ) -> Result<T::Token, Error>
    where
        T: VersionColumnDsl<C>,
    {
        T::update_by_key(conn, key, etag, changes)
    }

    /// Deletes the row with `key` if it holds the client's `etag`.
    pub fn delete<C: Connection>(
        &self,
        conn: &mut C,
        key: T::Key,
        etag: &T::Token,
    ) -> Result<(), Error>
    where
        T: VersionColumnDsl<C>,
    {
        T::delete_by_key(conn, key, etag)
    }

    /// Deletes `entity`'s row if it still holds the token `entity` was read with.
    pub fn remove<C: Connection>(&self, conn: &mut C, entity: &T) -> Result<(), Error>
    where
        T: EntityDsl<C>,
    {
        entity.delete_checked(conn)
    }
}

impl<T: Versioned> Default for Repository<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Repository<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Repository")
    }
}

/// The checked reads and writes of entity `T` on any async connection: the twin of
/// [`Repository`], whose futures are `Send`.
pub struct AsyncRepository<T>(PhantomData<fn() -> T>);

impl<T: Versioned> AsyncRepository<T> {
    /// A repository of `T`; `const`, so an app can keep one in a `const` item.
    pub const fn new() -> Self {
        AsyncRepository(PhantomData)
    }

    /// The row with `key`, or [`Error::NotFound`].
    pub async fn get<C: AsyncConnection>(&self, conn: &mut C, key: T::Key) -> Result<T, Error>
    where
        T: asynchronous::EntityDsl<C>,
    {
        T::find(conn, key).await
    }

    /// The row with `key` as an attempt of the retry helper reads it: a plain read, or a
    /// locking one once the attempt has escalated on a hot row.
    pub async fn get_within<C: asynchronous::AsyncLockingConnection>(
        &self,
        attempt: &Attempt,
        conn: &mut C,
        key: T::Key,
    ) -> Result<T, Error>
    where
        T: asynchronous::EntityDsl<C>,
    {
        asynchronous::AttemptDsl::find::<T>(attempt, conn, key).await
    }

    /// Inserts `entity` with its initial token, which it returns (the first ETag).
    pub async fn create<C: AsyncConnection>(
        &self,
        conn: &mut C,
        entity: &mut T,
    ) -> Result<T::Token, Error>
    where
        T: asynchronous::InsertDsl<C>,
    {
        entity.insert_checked(conn).await
    }

    /// Inserts a row from `form`, an `Insertable` struct without the token column (a
    /// create request), with the initial token, which it returns (the first ETag).
    pub async fn create_from<C: AsyncConnection, F: asynchronous::InsertableForm<T, C>>(
        &self,
        conn: &mut C,
        form: F,
    ) -> Result<T::Token, Error>
    where
        T: asynchronous::InsertDsl<C>,
    {
        T::insert_checked_from(conn, form).await
    }

    /// Saves `entity` if the row still holds the token it was read with.
    pub async fn save<C: AsyncConnection>(&self, conn: &mut C, entity: &mut T) -> Result<(), Error>
    where
        T: asynchronous::CheckedDsl<C>,
    {
        entity.save_checked(conn).await
    }

    /// Writes `changes` to the row with `key` if it holds the client's `etag`; returns
    /// the next ETag.
    pub async fn update<C: AsyncConnection, Changes: asynchronous::CheckedChanges<T, C>>(
        &self,
        conn: &mut C,
        key: T::Key,
        etag: &T::Token,
        changes: Changes,
    ) -> Result<T::Token, Error>
    where
        T: asynchronous::VersionColumnDsl<C>,
    {
        T::update_by_key(conn, key, etag, changes).await
    }

    /// Deletes the row with `key` if it holds the client's `etag`.
    pub async fn delete<C: AsyncConnection>(
        &self,
        conn: &mut C,
        key: T::Key,
        etag: &T::Token,
    ) -> Result<(), Error>
    where
        T: asynchronous::VersionColumnDsl<C>,
    {
        T::delete_by_key(conn, key, etag).await
    }

    /// Deletes `entity`'s row if it still holds the token `entity` was read with.
    pub async fn remove<C: AsyncConnection>(&self, conn: &mut C, entity: &T) -> Result<(), Error>
    where
        T: asynchronous::EntityDsl<C>,
    {
        entity.delete_checked(conn).await
    }
}

impl<T: Versioned> Default for AsyncRepository<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for AsyncRepository<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AsyncRepository")
    }
}
