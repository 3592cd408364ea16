//! [`InsertDsl`]: checked inserts and the checked upsert on a blocking connection.

use diesel::connection::Connection;
use diesel::query_builder::{AsChangeset, InsertStatement};
use diesel::query_dsl::methods::ExecuteDsl;
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{Insertable, OptionalExtension, Table};

use crate::blocking::classify;
use crate::error::{Error, Operation, insert_error};
use crate::insert::{UpsertTokens, Upserted, upsert_conflict};
use crate::statement::{ConditionalUpsert, CurrentToken, OnTaken, TokenEq};
use crate::token::VersionToken;
use crate::versioned::{TokenIs, VersionedParts};
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
/// # Ok(())
/// # }
/// ```
pub trait InsertDsl<Conn: Connection>: VersionedParts {
    /// Inserts the entity as a new row with the initial token of its kind (1 for a
    /// counter, a random UUID, the clock for a timestamp), whatever its token field
    /// held, and returns that token. On success the entity holds it.
    ///
    /// The entity derives Diesel's `Insertable` (and `Clone`: the row is inserted from
    /// a copy, so a failed insert leaves the entity as it was). A row with the same key,
    /// or another value a unique index covers, is an [`Error::UniqueViolation`], never
    /// retried.
    fn insert_checked(&mut self, conn: &mut Conn) -> Result<Self::Token, Error>
    where
        Self: Clone + Insertable<Self::Table>,
        Self::Table: Table + Default,
        InsertStatement<Self::Table, <Self as Insertable<Self::Table>>::Values>: ExecuteDsl<Conn>,
    {
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked");
        observe::in_write_span(span, || {
            let initial = Self::Token::initial();
            let mut row = self.clone();
            row.set_token(initial.clone());
            ExecuteDsl::execute(
                diesel::insert_into(Self::Table::default()).values(row),
                conn,
            )
            .map_err(|e| {
                insert_error(
                    e,
                    Self::sql_table_name(),
                    Some(Self::entity_key(&self.key())),
                )
            })?;
            outcome::trace_written::<Self>(self, Operation::Insert);
            self.set_token(initial.clone());
            Ok(initial)
        })
    }

    /// Inserts a new row from an `Insertable` struct without the token column (the
    /// form of a create request), adding the initial token, and returns that token.
    ///
    /// `INSERT INTO t (<new's columns>, token) VALUES (..., <initial>)`. A taken key
    /// or unique value is an [`Error::UniqueViolation`].
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
    fn insert_checked_from<New>(conn: &mut Conn, new: New) -> Result<Self::Token, Error>
    where
        Self::Table: Table + Default,
        (New, Self::TokenAssignment): Insertable<Self::Table>,
        InsertStatement<
            Self::Table,
            <(New, Self::TokenAssignment) as Insertable<Self::Table>>::Values,
        >: ExecuteDsl<Conn>,
    {
        let span =
            observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked_from");
        observe::in_write_span(span, || {
            let initial = Self::Token::initial();
            let row = (new, Self::token_assignment(&initial));
            ExecuteDsl::execute(
                diesel::insert_into(Self::Table::default()).values(row),
                conn,
            )
            .map_err(|e| insert_error(e, Self::sql_table_name(), None))?;
            Ok(initial)
        })
    }

    /// Inserts the entity if no row has its key; otherwise updates the row with every
    /// column a checked save writes, only if it holds `expected` (the client's
    /// `If-Match`; `None`: the client expects no row). Returns what it did and the
    /// token the row holds now, which the entity takes.
    ///
    /// When the row holds another token, or exists although `None` was expected, it is
    /// left alone and the result is [`Error::Conflict`] with its current token
    /// ([`Operation::Upsert`](crate::Operation::Upsert)); the entity is unchanged.
    ///
    /// One statement on PostgreSQL and SQLite:
    /// `INSERT ... ON CONFLICT (<key>) DO UPDATE SET ..., token = <fresh> WHERE token =
    /// <expected> RETURNING token` (`DO NOTHING` for `None`). MySQL and MariaDB have no
    /// conditional upsert (`ON DUPLICATE KEY UPDATE` takes no `WHERE` and does not say
    /// which branch ran), so there it is an `INSERT` and, on a duplicate key, the
    /// checked `UPDATE ... WHERE <key> AND token = <expected>`: each statement is
    /// atomic, and a row deleted between them is inserted again (once).
    ///
    /// The inserted row gets the initial token and the updated row a fresh one, drawn
    /// so the two differ, so the token read back says which happened.
    fn upsert_checked(
        &mut self,
        conn: &mut Conn,
        expected: Option<&Self::Token>,
    ) -> Result<Upserted<Self::Token>, Error>
    where
        Self: Clone,
        Conn::Backend: UpsertBackend<Self, Conn>,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
    {
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "upsert_checked");
        observe::in_write_span(span, || {
            let tokens = UpsertTokens::draw(expected, Self::TOKEN_PRECISION)?;
            let mut row = self.clone();
            row.set_token(tokens.initial.clone());
            let key = self.key();
            let returned = <Conn::Backend as UpsertBackend<Self, Conn>>::upsert(
                conn,
                row,
                expected,
                &tokens.fresh,
            )?;
            match tokens.outcome(returned) {
                Some(upserted) => {
                    outcome::trace_written_key::<Self>(&key, Operation::Upsert);
                    self.set_token(upserted.token().clone());
                    Ok(upserted)
                }
                None => {
                    let expected_or_initial = expected.unwrap_or(&tokens.initial);
                    let classified =
                        classify::<Self, Conn>(&key, expected_or_initial, Operation::Upsert, conn);
                    Err(upsert_conflict::<Self>(expected, classified))
                }
            }
        })
    }
}

impl<T: VersionedParts, Conn: Connection> InsertDsl<Conn> for T {}

/// How a backend runs a checked upsert on a blocking connection: the statements, and
/// the token the row holds after them (`None`: the row was left alone). Not public API.
#[doc(hidden)]
pub trait UpsertBackend<T: VersionedParts, Conn> {
    /// Inserts `row` (which holds the initial token), or updates the row with `key`
    /// holding `expected` with `row`'s columns and `fresh`.
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<&T::Token>,
        fresh: &T::Token,
    ) -> Result<Option<T::Token>, Error>;
}

/// PostgreSQL and SQLite: one `INSERT ... ON CONFLICT ... RETURNING`.
#[doc(hidden)]
pub trait OnConflictReturning {}

#[cfg(feature = "postgres")]
impl OnConflictReturning for diesel::pg::Pg {}
#[cfg(feature = "sqlite")]
impl OnConflictReturning for diesel::sqlite::Sqlite {}

/// The one-statement upsert: the statement for `row`, given the caller's expectation.
pub(crate) type OneStatementUpsert<T> = ConditionalUpsert<
    InsertStatement<
        <T as crate::Versioned>::Table,
        <T as Insertable<<T as crate::Versioned>::Table>>::Values,
    >,
    <<T as VersionedParts>::Changes as AsChangeset>::Changeset,
    TokenIs<T>,
    <T as VersionedParts>::TokenColumn,
>;

pub(crate) fn one_statement_upsert<T>(
    row: T,
    expected: Option<&T::Token>,
    fresh: &T::Token,
) -> OneStatementUpsert<T>
where
    T: VersionedParts + Insertable<T::Table>,
    T::Table: Table + Default,
    T::Changes: AsChangeset,
{
    let action = match expected {
        None => OnTaken::Nothing,
        Some(expected) => OnTaken::Update(
            row.changes(fresh).as_changeset(),
            TokenEq::new(
                T::TokenColumn::default(),
                expected.clone(),
                T::token_text_forms,
            ),
        ),
    };
    let insert = diesel::insert_into(T::Table::default()).values(row);
    ConditionalUpsert::new(insert, T::KEY_COLUMNS, action, T::TokenColumn::default())
}

impl<DB, T, Conn> UpsertBackend<T, Conn> for DB
where
    DB: OnConflictReturning,
    T: VersionedParts + Insertable<T::Table>,
    T::Table: Table + Default,
    T::Changes: AsChangeset,
    OneStatementUpsert<T>: LoadQuery<'static, Conn, T::Token>,
{
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<&T::Token>,
        fresh: &T::Token,
    ) -> Result<Option<T::Token>, Error> {
        let key = row.key();
        one_statement_upsert(row, expected, fresh)
            .get_result::<T::Token>(conn)
            .optional()
            .map_err(|e| insert_error(e, T::sql_table_name(), Some(T::entity_key(&key))))
    }
}

#[cfg(feature = "mysql")]
mod mysql;
