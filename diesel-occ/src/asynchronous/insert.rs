//! [`InsertDsl`]: checked inserts and the checked upsert on an async connection, the
//! twin of the blocking [`InsertDsl`](crate::InsertDsl).

use std::future::Future;

use diesel::associations::HasTable;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::FilterDsl;
use diesel::{Insertable, OptionalExtension, Table};
use diesel_async::methods::{ExecuteDsl, LoadQuery};
use diesel_async::{AsyncConnection, RunQueryDsl};

use super::transaction::Recoverable;
use super::{InsertableForm, classify, usable};
use crate::blocking::OnConflictReturning;
use crate::error::{Error, Operation, unique_error};
use crate::insert::{
    InsertIfAbsentOf, UpsertTokens, UpsertUpdate, Upserted, insert_if_absent, upsert_conflict,
    upsert_update, upserted,
};
use crate::statement::{AssignedToken, CurrentToken};
use crate::token::VersionToken;
use crate::versioned::{KeyGuarded, TokenIs, Versioned, VersionedParts};
use crate::{observe, outcome};

/// Checked inserts and the checked upsert on an async Diesel connection: the twin of
/// the blocking [`InsertDsl`](crate::InsertDsl), with the same names, statements and
/// errors. In `diesel_occ::asynchronous::prelude`. Every method returns a `Send`
/// future; dropping it before it completes leaves the entity as it was.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
/// use diesel_occ::Upserted;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn: SyncConnectionWrapper<SqliteConnection> = SyncConnectionWrapper::new(connection());
/// let mut stock = Stock { id: 7, available: 3, deleted: false, version: 0 };
/// assert_eq!(stock.insert_checked(&mut conn).await?, 1);
/// stock.available = 5;
/// assert_eq!(stock.upsert_checked(&mut conn, Some(&1)).await?, Upserted::Updated(2));
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
pub trait InsertDsl<Conn: AsyncConnection>: Versioned + Send {
    /// Inserts the entity with the initial token of its kind and returns that token.
    /// See [`crate::InsertDsl::insert_checked`].
    fn insert_checked(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send;

    /// Inserts a new row from an `Insertable` struct without the token column, adding
    /// the initial token, and returns that token. See
    /// [`crate::InsertDsl::insert_checked_from`].
    fn insert_checked_from<New: InsertableForm<Self, Conn>>(
        conn: &mut Conn,
        new: New,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send;

    /// Writes the entity as the client expects the row to be: `None`, no row (insert
    /// it); `Some(token)`, the row holding `token` (update it, never insert). See
    /// [`crate::InsertDsl::upsert_checked`] for the outcomes, the statements and what
    /// happens to the caller's transaction on each backend.
    fn upsert_checked(
        &mut self,
        conn: &mut Conn,
        expected: Option<&Self::Token>,
    ) -> impl Future<Output = Result<Upserted<Self::Token>, Error>> + Send;
}

impl<T, Conn> InsertDsl<Conn> for T
where
    T: VersionedParts + Clone + Send + Insertable<T::Table>,
    Conn: AsyncConnection,
    T::Table: Table + Default,
    T: AssignedToken,
    InsertStatement<T::Table, <T as Insertable<T::Table>>::Values>: ExecuteDsl<Conn> + Send,
    Conn::Backend: AsyncUpsertBackend<T, Conn>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    fn insert_checked(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send {
        let initial = Self::Token::initial_at(Self::TOKEN_PRECISION);
        let mut row = self.clone();
        row.set_token(initial.clone());
        let statement = diesel::insert_into(Self::Table::default()).values(row);
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked");
        observe::in_write_span_async(span, async move {
            usable(conn)?;
            let key = self.key();
            let mut recoverable = Recoverable::begin(conn).await?;
            let inserted = ExecuteDsl::execute(statement, recoverable.conn())
                .await
                .map_err(|e| unique_error(e, Self::sql_table_name(), Some(Self::entity_key(&key))));
            recoverable.end(inserted).await?;
            outcome::trace_written_key::<Self>(&key, Operation::Insert);
            self.set_token(initial.clone());
            Ok(initial)
        })
    }

    fn insert_checked_from<New: InsertableForm<T, Conn>>(
        conn: &mut Conn,
        new: New,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send {
        let initial = Self::Token::initial_at(Self::TOKEN_PRECISION);
        let statement = new.insert_statement(&initial);
        let span =
            observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked_from");
        observe::in_write_span_async(span, async move {
            usable(conn)?;
            let mut recoverable = Recoverable::begin(conn).await?;
            let inserted = ExecuteDsl::execute(statement, recoverable.conn())
                .await
                .map_err(|e| unique_error(e, Self::sql_table_name(), None));
            recoverable.end(inserted).await?;
            Ok(initial)
        })
    }

    fn upsert_checked(
        &mut self,
        conn: &mut Conn,
        expected: Option<&Self::Token>,
    ) -> impl Future<Output = Result<Upserted<Self::Token>, Error>> + Send {
        let expected = expected.cloned();
        let tokens = UpsertTokens::draw(expected.as_ref(), Self::TOKEN_PRECISION);
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "upsert_checked");
        observe::in_write_span_async(span, async move {
            let tokens = tokens?;
            usable(conn)?;
            let mut row = self.clone();
            row.set_token(tokens.initial.clone());
            let key = self.key();
            let mut recoverable = Recoverable::begin(conn).await?;
            let returned = <Conn::Backend as AsyncUpsertBackend<Self, Conn>>::upsert(
                recoverable.conn(),
                row,
                expected.clone(),
                tokens.fresh.clone(),
            )
            .await;
            match recoverable.end(returned).await? {
                Some(token) => {
                    outcome::trace_written_key::<Self>(&key, Operation::Upsert);
                    self.set_token(token.clone());
                    Ok(upserted(expected.is_some(), token))
                }
                None => {
                    let against = tokens.against(expected.as_ref()).clone();
                    let classified =
                        classify::<Self, Conn>(key, &against, Operation::ClientToken, conn).await;
                    Err(upsert_conflict::<Self>(expected.as_ref(), classified))
                }
            }
        })
    }
}

/// How a backend runs a checked upsert on an async connection: the twin of the
/// blocking `UpsertBackend`. Not public API.
pub trait AsyncUpsertBackend<T: VersionedParts, Conn> {
    /// With `expected`, updates the row with `row`'s key holding it with `row`'s columns
    /// and `fresh`; without, inserts `row` (which holds the initial token) if its key
    /// is free. The token the row holds after, or `None` when it was left alone.
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<T::Token>,
        fresh: T::Token,
    ) -> impl Future<Output = Result<Option<T::Token>, Error>> + Send;
}

/// The update of an upsert that expects `expected`, run: the fresh token when it wrote
/// the row. The twin of the blocking `run_upsert_update`.
async fn run_upsert_update<T, Conn>(
    conn: &mut Conn,
    row: T,
    expected: T::Token,
    fresh: T::Token,
) -> Result<Option<T::Token>, Error>
where
    T: VersionedParts,
    Conn: AsyncConnection,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    UpsertUpdate<T>: ExecuteDsl<Conn> + Send,
{
    let key = row.key();
    let update = upsert_update(&row, &expected, &fresh);
    let affected = ExecuteDsl::execute(update, conn)
        .await
        .map_err(|e| unique_error(e, T::sql_table_name(), Some(T::entity_key(&key))))?;
    Ok(outcome::written_key::<T>(&key, affected)?.then_some(fresh))
}

impl<DB, T, Conn> AsyncUpsertBackend<T, Conn> for DB
where
    DB: OnConflictReturning,
    T: VersionedParts + Insertable<T::Table> + Send,
    T::Table: Table + Default,
    Conn: AsyncConnection,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    UpsertUpdate<T>: ExecuteDsl<Conn> + Send,
    InsertIfAbsentOf<T>: LoadQuery<'static, Conn, T::Token> + Send + 'static,
{
    async fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<T::Token>,
        fresh: T::Token,
    ) -> Result<Option<T::Token>, Error> {
        if let Some(expected) = expected {
            return run_upsert_update(conn, row, expected, fresh).await;
        }
        let key = T::entity_key(&row.key());
        RunQueryDsl::get_result::<T::Token>(insert_if_absent(row), conn)
            .await
            .optional()
            .map_err(|e| unique_error(e, T::sql_table_name(), Some(key)))
    }
}

#[cfg(feature = "mysql")]
mod mysql;
