//! [`InsertDsl`]: checked inserts and the checked upsert on a blocking connection.

use diesel::associations::HasTable;
use diesel::connection::Connection;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::{ExecuteDsl, FilterDsl};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{Insertable, OptionalExtension, Table};

use super::transaction::recoverable;
use crate::blocking::{InsertableForm, classify};
use crate::error::{Error, Operation, unique_error};
use crate::insert::{
    InsertIfAbsentOf, UpsertTokens, UpsertUpdate, Upserted, insert_if_absent, upsert_conflict,
    upsert_update, upserted,
};
use crate::statement::{AssignedToken, CurrentToken};
use crate::token::VersionToken;
use crate::versioned::{KeyGuarded, TokenIs, Versioned, VersionedParts};
use crate::{observe, outcome};

/// Checked inserts and the checked upsert on a blocking Diesel connection: a new row
/// gets the initial token of its kind, and the token comes back as the first ETag.
///
/// Implemented for every entity deriving [`Versioned`](crate::Versioned) whose token
/// the application assigns; in the prelude. The async twin is
/// `diesel_occ::asynchronous::InsertDsl`.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
/// use diesel_occ::Upserted;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// // `Stock` derives Diesel's `Insertable` beside `Versioned`.
/// let mut stock = Stock { id: 7, available: 3, deleted: false, version: 0 };
/// let etag = stock.insert_checked(&mut conn)?;
/// assert_eq!((etag, stock.version), (1, 1));
///
/// // PUT with `If-Match: 1`: the row holds 1, so it is updated.
/// stock.available = 5;
/// assert_eq!(stock.upsert_checked(&mut conn, Some(&1))?, Upserted::Updated(2));
/// // A second PUT with the same `If-Match` is a conflict naming the current token.
/// let conflict = stock.upsert_checked(&mut conn, Some(&1)).unwrap_err();
/// assert_eq!(conflict.as_conflict().unwrap().current::<i32>(), Some(2));
///
/// // A PUT with `If-Match` for a row deleted since is a conflict, never an insert.
/// Stock::delete_by_key(&mut conn, 7, &2)?;
/// assert!(stock.upsert_checked(&mut conn, Some(&2)).unwrap_err().as_conflict().unwrap().is_deleted());
/// # Ok(())
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no checked insert on `{Conn}`",
    label = "no `insert_checked` / `upsert_checked` for this entity here",
    note = "a checked insert needs an entity deriving Diesel's `Insertable` and `Clone` whose token the \
            application assigns (`#[occ(version)]`); for a token the database generates \
            (`#[occ(version, generated)]`), insert the row with Diesel's `insert_into`, then read it \
            and its token with `find`"
)]
pub trait InsertDsl<Conn: Connection>: Versioned {
    /// Inserts the entity as a new row with the initial token of its kind (1 for a
    /// counter, a random UUID, the clock at the token's declared precision for a
    /// timestamp, so the column stores it exactly), whatever its token field held, and
    /// returns that token. On success the entity holds it.
    ///
    /// The entity derives Diesel's `Insertable` (and `Clone`: the row is inserted from
    /// a copy, so a failed insert leaves the entity as it was). A row with the same key,
    /// or another value a unique index covers, is an [`Error::UniqueViolation`], never
    /// retried, which leaves a transaction of the caller's usable on every backend (on
    /// PostgreSQL the INSERT runs in a savepoint when a Diesel transaction is open: two
    /// more round trips there). An entity whose token the database generates does not
    /// compile here ([`AssignedToken`]).
    fn insert_checked(&mut self, conn: &mut Conn) -> Result<Self::Token, Error>;

    /// Inserts a new row from an `Insertable` struct without the token column (the
    /// form of a create request), adding the initial token, and returns that token.
    ///
    /// `INSERT INTO t (<new's columns>, token) VALUES (..., <initial>)`. A taken key
    /// or unique value is an [`Error::UniqueViolation`], which leaves a transaction of
    /// the caller's usable, as [`insert_checked`](Self::insert_checked)'s does.
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
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// let etag = Stock::insert_checked_from(&mut conn, NewStock { id: 8, available: 1, deleted: false })?;
    /// assert_eq!(Stock::find(&mut conn, 8)?.version, etag);
    /// # Ok(())
    /// # }
    /// ```
    fn insert_checked_from<New: InsertableForm<Self, Conn>>(
        conn: &mut Conn,
        new: New,
    ) -> Result<Self::Token, Error>;

    /// Writes the entity as the client expects the row to be: `None`, no row (create
    /// it); `Some(token)`, the row holding `token` (the client's `If-Match`: update it
    /// with every column a checked save writes). Returns what it did and the token the
    /// row holds now, which the entity takes.
    ///
    /// - `None`: a free key is inserted with the initial token
    ///   ([`Upserted::Inserted`]); an existing row is left alone and the result is
    ///   [`Error::Conflict`] holding its current token; another unique value taken is
    ///   [`Error::UniqueViolation`].
    /// - `Some(expected)`: the checked `UPDATE ... WHERE <key> AND token = <expected>`,
    ///   never an insert ([`Upserted::Updated`]). A row holding another token is a
    ///   [`Error::Conflict`] with its current token, and a row deleted since the client
    ///   read it a [`Deleted`](crate::ConflictState::Deleted) conflict: an acknowledged
    ///   delete is never undone by a writer that read the row before it.
    ///
    /// Its conflicts are client-token conflicts
    /// ([`Operation::ClientToken`](crate::Operation::ClientToken)): calling it again with
    /// the same expectation meets the same row, so the retry helpers do not retry them.
    /// The entity is unchanged on any error.
    ///
    /// The statements: with `None`, one `INSERT ... ON CONFLICT (<key>) DO NOTHING
    /// RETURNING token` on PostgreSQL and SQLite; on MySQL and MariaDB, which have no
    /// conditional insert that says what it did, the `INSERT` and, on a duplicate key, a
    /// locking read of the row's token (the latest row even inside a `REPEATABLE READ`
    /// transaction). A conflict costs one more read.
    ///
    /// **The caller's transaction**: a conflict and [`Error::UniqueViolation`] leave it
    /// usable on every backend. On PostgreSQL, where a failed statement aborts the
    /// transaction, the statement runs in a savepoint when a Diesel transaction is open
    /// (two more round trips there); MySQL, MariaDB and SQLite roll back only the
    /// failed statement. The key must be unique in the database (a primary key or a
    /// unique index: [`SchemaCheck`](crate::schema_check::SchemaCheck) checks it).
    fn upsert_checked(
        &mut self,
        conn: &mut Conn,
        expected: Option<&Self::Token>,
    ) -> Result<Upserted<Self::Token>, Error>;
}

impl<T, Conn> InsertDsl<Conn> for T
where
    T: VersionedParts + Clone + Insertable<T::Table>,
    Conn: Connection,
    T::Table: Table + Default,
    T: AssignedToken,
    InsertStatement<T::Table, <T as Insertable<T::Table>>::Values>: ExecuteDsl<Conn>,
    Conn::Backend: UpsertBackend<T, Conn>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn insert_checked(&mut self, conn: &mut Conn) -> Result<Self::Token, Error> {
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked");
        observe::in_write_span(span, || {
            let initial = Self::Token::initial_at(Self::TOKEN_PRECISION);
            let mut row = self.clone();
            row.set_token(initial.clone());
            let key = Self::entity_key(&self.key());
            recoverable(conn, |conn| {
                let insert = diesel::insert_into(Self::Table::default()).values(row);
                ExecuteDsl::execute(insert, conn)
                    .map_err(|e| unique_error(e, Self::sql_table_name(), Some(key)))
            })?;
            outcome::trace_written::<Self>(self, Operation::Insert);
            self.set_token(initial.clone());
            Ok(initial)
        })
    }

    fn insert_checked_from<New: InsertableForm<T, Conn>>(
        conn: &mut Conn,
        new: New,
    ) -> Result<T::Token, Error> {
        let span =
            observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked_from");
        observe::in_write_span(span, || {
            let initial = T::Token::initial_at(T::TOKEN_PRECISION);
            recoverable(conn, |conn| {
                new.insert_with_token(conn, &initial)
                    .map_err(|e| unique_error(e, T::sql_table_name(), None))
            })?;
            Ok(initial)
        })
    }

    fn upsert_checked(
        &mut self,
        conn: &mut Conn,
        expected: Option<&Self::Token>,
    ) -> Result<Upserted<Self::Token>, Error> {
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "upsert_checked");
        observe::in_write_span(span, || {
            let tokens = UpsertTokens::draw(expected, Self::TOKEN_PRECISION)?;
            let mut row = self.clone();
            row.set_token(tokens.initial.clone());
            let key = self.key();
            let returned = recoverable(conn, |conn| {
                <Conn::Backend as UpsertBackend<Self, Conn>>::upsert(
                    conn,
                    row,
                    expected,
                    &tokens.fresh,
                )
            })?;
            match returned {
                Some(token) => {
                    outcome::trace_written_key::<Self>(&key, Operation::Upsert);
                    self.set_token(token.clone());
                    Ok(upserted(expected.is_some(), token))
                }
                None => {
                    let against = tokens.against(expected);
                    let classified =
                        classify::<Self, Conn>(&key, against, Operation::ClientToken, conn);
                    Err(upsert_conflict::<Self>(expected, classified))
                }
            }
        })
    }
}

/// How a backend runs a checked upsert on a blocking connection: the statements, and
/// the token the row holds after them (`None`: the row was left alone). Not public API.
pub trait UpsertBackend<T: VersionedParts, Conn> {
    /// With `expected`, updates the row with `row`'s key holding it with `row`'s columns
    /// and `fresh`; without, inserts `row` (which holds the initial token) if its key
    /// is free.
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<&T::Token>,
        fresh: &T::Token,
    ) -> Result<Option<T::Token>, Error>;
}

/// PostgreSQL and SQLite: `INSERT ... ON CONFLICT (<key>) DO NOTHING RETURNING token`.
pub trait OnConflictReturning {}

#[cfg(feature = "postgres")]
impl OnConflictReturning for diesel::pg::Pg {}
#[cfg(feature = "sqlite")]
impl OnConflictReturning for diesel::sqlite::Sqlite {}

/// [`upsert_update`], run: the fresh token when it wrote the row.
fn run_upsert_update<T, Conn>(
    conn: &mut Conn,
    row: &T,
    expected: &T::Token,
    fresh: &T::Token,
) -> Result<Option<T::Token>, Error>
where
    T: VersionedParts,
    Conn: Connection,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    UpsertUpdate<T>: ExecuteDsl<Conn>,
{
    let key = row.key();
    let affected = ExecuteDsl::execute(upsert_update(row, expected, fresh), conn)
        .map_err(|e| unique_error(e, T::sql_table_name(), Some(T::entity_key(&key))))?;
    Ok(outcome::written_key::<T>(&key, affected)?.then(|| fresh.clone()))
}

impl<DB, T, Conn> UpsertBackend<T, Conn> for DB
where
    DB: OnConflictReturning,
    Conn: Connection,
    T: VersionedParts + Insertable<T::Table>,
    T::Table: Table + Default,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    UpsertUpdate<T>: ExecuteDsl<Conn>,
    InsertIfAbsentOf<T>: LoadQuery<'static, Conn, T::Token>,
{
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<&T::Token>,
        fresh: &T::Token,
    ) -> Result<Option<T::Token>, Error> {
        if let Some(expected) = expected {
            return run_upsert_update(conn, &row, expected, fresh);
        }
        let key = T::entity_key(&row.key());
        insert_if_absent(row)
            .get_result::<T::Token>(conn)
            .optional()
            .map_err(|e| unique_error(e, T::sql_table_name(), Some(key)))
    }
}

#[cfg(feature = "mysql")]
mod mysql;
