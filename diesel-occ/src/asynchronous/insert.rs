//! [`InsertDsl`]: checked inserts and the checked upsert on an async connection, the
//! twin of the blocking [`InsertDsl`](crate::InsertDsl).

use std::future::Future;

use diesel::query_builder::{AsChangeset, InsertStatement};
use diesel::{Insertable, OptionalExtension, Table};
use diesel_async::methods::{ExecuteDsl, LoadQuery};
use diesel_async::{AsyncConnection, RunQueryDsl};

use super::{classify, usable};
use crate::blocking::{OnConflictReturning, OneStatementUpsert, one_statement_upsert};
use crate::error::{Error, Operation, insert_error};
use crate::insert::{UpsertTokens, Upserted, upsert_conflict};
use crate::statement::CurrentToken;
use crate::token::VersionToken;
use crate::versioned::VersionedParts;
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
pub trait InsertDsl<Conn: AsyncConnection>: VersionedParts {
    /// Inserts the entity with the initial token of its kind and returns that token.
    /// See [`crate::InsertDsl::insert_checked`].
    fn insert_checked(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send
    where
        Self: Clone + Send + Insertable<Self::Table>,
        Self::Table: Table + Default,
        InsertStatement<Self::Table, <Self as Insertable<Self::Table>>::Values>:
            ExecuteDsl<Conn> + Send,
    {
        let initial = Self::Token::initial();
        let mut row = self.clone();
        row.set_token(initial.clone());
        let statement = diesel::insert_into(Self::Table::default()).values(row);
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked");
        observe::in_write_span_async(span, async move {
            usable(conn)?;
            let key = self.key();
            ExecuteDsl::execute(statement, conn).await.map_err(|e| {
                insert_error(e, Self::sql_table_name(), Some(Self::entity_key(&key)))
            })?;
            outcome::trace_written_key::<Self>(&key, Operation::Insert);
            self.set_token(initial.clone());
            Ok(initial)
        })
    }

    /// Inserts a new row from an `Insertable` struct without the token column, adding
    /// the initial token, and returns that token. See
    /// [`crate::InsertDsl::insert_checked_from`].
    fn insert_checked_from<New>(
        conn: &mut Conn,
        new: New,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send
    where
        Self::Table: Table + Default,
        (New, Self::TokenAssignment): Insertable<Self::Table>,
        InsertStatement<
            Self::Table,
            <(New, Self::TokenAssignment) as Insertable<Self::Table>>::Values,
        >: ExecuteDsl<Conn> + Send,
    {
        let initial = Self::Token::initial();
        let row = (new, Self::token_assignment(&initial));
        let statement = diesel::insert_into(Self::Table::default()).values(row);
        let span =
            observe::write_span::<Conn::Backend>(Self::sql_table_name(), "insert_checked_from");
        observe::in_write_span_async(span, async move {
            usable(conn)?;
            ExecuteDsl::execute(statement, conn)
                .await
                .map_err(|e| insert_error(e, Self::sql_table_name(), None))?;
            Ok(initial)
        })
    }

    /// Inserts the entity if no row has its key, else updates the row only if it holds
    /// `expected`. See [`crate::InsertDsl::upsert_checked`].
    fn upsert_checked(
        &mut self,
        conn: &mut Conn,
        expected: Option<&Self::Token>,
    ) -> impl Future<Output = Result<Upserted<Self::Token>, Error>> + Send
    where
        Self: Clone + Send,
        Conn::Backend: AsyncUpsertBackend<Self, Conn>,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
        Self::TokenQuery: Send + 'static,
    {
        let expected = expected.cloned();
        let tokens = UpsertTokens::draw(expected.as_ref(), Self::TOKEN_PRECISION);
        let span = observe::write_span::<Conn::Backend>(Self::sql_table_name(), "upsert_checked");
        observe::in_write_span_async(span, async move {
            let tokens = tokens?;
            usable(conn)?;
            let mut row = self.clone();
            row.set_token(tokens.initial.clone());
            let key = self.key();
            let returned = <Conn::Backend as AsyncUpsertBackend<Self, Conn>>::upsert(
                conn,
                row,
                expected.clone(),
                tokens.fresh.clone(),
            )
            .await?;
            match tokens.outcome(returned) {
                Some(upserted) => {
                    outcome::trace_written_key::<Self>(&key, Operation::Upsert);
                    self.set_token(upserted.token().clone());
                    Ok(upserted)
                }
                None => {
                    let against = expected.clone().unwrap_or_else(|| tokens.initial.clone());
                    let classified =
                        classify::<Self, Conn>(key, &against, Operation::Upsert, conn).await;
                    Err(upsert_conflict::<Self>(expected.as_ref(), classified))
                }
            }
        })
    }
}

impl<T: VersionedParts, Conn: AsyncConnection> InsertDsl<Conn> for T {}

/// How a backend runs a checked upsert on an async connection: the twin of the
/// blocking `UpsertBackend`. Not public API.
#[doc(hidden)]
pub trait AsyncUpsertBackend<T: VersionedParts, Conn> {
    /// Inserts `row` (which holds the initial token), or updates the row with its key
    /// holding `expected` with `row`'s columns and `fresh`; the token the row holds
    /// after, or `None` when it was left alone.
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<T::Token>,
        fresh: T::Token,
    ) -> impl Future<Output = Result<Option<T::Token>, Error>> + Send;
}

impl<DB, T, Conn> AsyncUpsertBackend<T, Conn> for DB
where
    DB: OnConflictReturning,
    T: VersionedParts + Insertable<T::Table>,
    T::Table: Table + Default,
    T::Changes: AsChangeset,
    Conn: AsyncConnection,
    OneStatementUpsert<T>: LoadQuery<'static, Conn, T::Token> + Send + 'static,
{
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<T::Token>,
        fresh: T::Token,
    ) -> impl Future<Output = Result<Option<T::Token>, Error>> + Send {
        let key = T::entity_key(&row.key());
        let statement = one_statement_upsert(row, expected.as_ref(), &fresh);
        async move {
            RunQueryDsl::get_result::<T::Token>(statement, conn)
                .await
                .optional()
                .map_err(|e| insert_error(e, T::sql_table_name(), Some(key)))
        }
    }
}

#[cfg(feature = "mysql")]
mod mysql;
