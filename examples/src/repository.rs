//! A generic repository over any versioned entity: the layer an application writes
//! around diesel-occ, once, for all its entities. Each method needs the one public
//! bound of the checked write it calls ([`EntityDsl`], [`CheckedDsl`], [`InsertDsl`],
//! [`VersionColumnDsl`], and their async twins), nothing about Diesel's statement types.
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
//! #[derive(Clone, Queryable, Selectable, Insertable, Versioned)]
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
use diesel_occ::{CheckedChanges, CheckedDsl, EntityDsl, Error, InsertDsl};
use diesel_occ::{VersionColumnDsl, Versioned, asynchronous};

/// The checked reads and writes of entity `T` on any blocking connection.
pub struct Repository<T>(PhantomData<fn() -> T>);

impl<T: Versioned> Repository<T> {
    /// A repository of `T`.
    pub fn new() -> Self {
        Repository(PhantomData)
    }

    /// The row with `key`, or [`Error::NotFound`].
    pub fn get<C: Connection>(&self, conn: &mut C, key: T::Key) -> Result<T, Error>
    where
        T: EntityDsl<C>,
    {
        T::find(conn, key)
    }

    /// Inserts `entity` with its initial token, which it returns (the first ETag).
    pub fn create<C: Connection>(&self, conn: &mut C, entity: &mut T) -> Result<T::Token, Error>
    where
        T: InsertDsl<C>,
    {
        entity.insert_checked(conn)
    }

    /// Saves `entity` if the row still holds the token it was read with.
    pub fn save<C: Connection>(&self, conn: &mut C, entity: &mut T) -> Result<(), Error>
    where
        T: CheckedDsl<C>,
    {
        entity.save_checked(conn)
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
    /// A repository of `T`.
    pub fn new() -> Self {
        AsyncRepository(PhantomData)
    }

    /// The row with `key`, or [`Error::NotFound`].
    pub async fn get<C: AsyncConnection>(&self, conn: &mut C, key: T::Key) -> Result<T, Error>
    where
        T: asynchronous::EntityDsl<C>,
    {
        T::find(conn, key).await
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
