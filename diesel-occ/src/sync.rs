//! Checked operations on a blocking [`diesel::Connection`].

use diesel::connection::{Connection, TransactionManager};
use diesel::dsl::{AsSelect, Select};
use diesel::query_builder::QueryId;
use diesel::query_dsl::methods::{ExecuteDsl, SelectDsl};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{OptionalExtension, Selectable, SelectableHelper};

use crate::checked::{self, CurrentToken};
use crate::error::{Error, Operation};
use crate::parts::GuardedUpdate;
use crate::token::VersionToken;
use crate::versioned::Versioned;

/// Checked saves, deletes and loads on a blocking Diesel connection.
///
/// Implemented for every [`Versioned`] entity; bring it into scope with
/// `use diesel_occ::prelude::*`. The async twin with the same method names lives in
/// `diesel_occ::asynchronous` (feature `async`).
///
/// ```
/// # include!("doctest_setup.rs");
/// use diesel_occ::prelude::*;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut mine = Stock::find(&mut conn, 1)?;
/// let mut theirs = Stock::find(&mut conn, 1)?;
///
/// theirs.available -= 1;
/// theirs.save_checked(&mut conn)?;
///
/// mine.available -= 2;
/// let conflict = mine.save_checked(&mut conn).unwrap_err();
/// assert_eq!(
///     conflict.as_conflict().unwrap().current::<i32>(),
///     Some(*theirs.token())
/// );
/// # Ok(())
/// # }
/// ```
pub trait CheckedDsl<Conn: Connection>: Versioned {
    /// Writes the entity with `UPDATE ... WHERE <key> AND token = <original>`, assigning
    /// a fresh token: one statement when it succeeds.
    ///
    /// On success the entity holds the fresh token. When no row matches, returns
    /// [`Error::Conflict`] saying whether the row is stale (with its current token) or
    /// deleted, at the cost of one more query, and leaves the entity exactly as it was.
    ///
    /// With a database-generated token (`#[occ(version, generated)]`, PostgreSQL only)
    /// the statement is `UPDATE ... RETURNING token` and the entity takes the token
    /// the database assigned.
    ///
    /// The fresh token is taken as soon as the UPDATE matches, before any enclosing
    /// transaction commits. **Inside a transaction, save through
    /// [`diesel_occ::transaction`](crate::transaction()), passing it every entity the
    /// transaction writes: after a rollback they hold the tokens they read, so their
    /// next save conflicts unless the row is still exactly as they read it.** After a
    /// rollback of a plain `conn.transaction`, discard the entities and read them again.
    ///
    /// Inside a transaction the conflict is classified with a locking read, so a
    /// REPEATABLE READ snapshot never hides the row's current token; a write that
    /// matched nothing although the row holds the expected token is
    /// [`ConflictState::Unmatched`](crate::ConflictState::Unmatched).
    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error>
    where
        Self::UpdateStatement: GuardedUpdate<Conn, Self::Token>,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
    {
        let fresh = self.fresh_token()?;
        let (affected, fresh) = self.update_statement(&fresh).run_guarded(conn, fresh)?;
        if checked::written(self, affected)? {
            self.set_token(fresh);
            checked::trace_written(self, Operation::Update);
            Ok(())
        } else {
            Err(classify(self, Operation::Update, conn))
        }
    }

    /// Deletes the row with `DELETE ... WHERE <key> AND token = <original>`.
    ///
    /// When no row matches, returns [`Error::Conflict`] (stale or already deleted).
    fn delete_checked(&self, conn: &mut Conn) -> Result<(), Error>
    where
        Self::DeleteStatement: ExecuteDsl<Conn>,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
    {
        let affected = ExecuteDsl::execute(self.delete_statement(), conn)?;
        if checked::written(self, affected)? {
            checked::trace_written(self, Operation::Delete);
            Ok(())
        } else {
            Err(classify(self, Operation::Delete, conn))
        }
    }

    /// Loads the row with this key, or [`Error::NotFound`].
    fn find(conn: &mut Conn, key: Self::Key) -> Result<Self, Error>
    where
        Self: Selectable<Conn::Backend>,
        Self::SelectExpression: QueryId,
        Self::FindQuery: SelectDsl<AsSelect<Self, Conn::Backend>>,
        Select<Self::FindQuery, AsSelect<Self, Conn::Backend>>:
            RunQueryDsl<Conn> + LoadQuery<'static, Conn, Self>,
    {
        Self::find_query(key.clone())
            .select(Self::as_select())
            .get_result(conn)
            .optional()?
            .ok_or_else(|| checked::not_found::<Self>(&key))
    }

    /// Loads the row with this key and checks that it still holds the token a client
    /// sent (an HTTP `If-Match`, a form field), before any edit.
    ///
    /// A nil or otherwise invalid token is [`Error::InvalidToken`] without a query; a
    /// missing row is [`Error::NotFound`]; a stale token is [`Error::Conflict`] with the
    /// current token. The client's token is never replaced by the loaded one.
    fn find_checked(conn: &mut Conn, key: Self::Key, expected: &Self::Token) -> Result<Self, Error>
    where
        Self: Selectable<Conn::Backend>,
        Self::SelectExpression: QueryId,
        Self::FindQuery: SelectDsl<AsSelect<Self, Conn::Backend>>,
        Select<Self::FindQuery, AsSelect<Self, Conn::Backend>>:
            RunQueryDsl<Conn> + LoadQuery<'static, Conn, Self>,
    {
        expected.validate()?;
        checked::check_client_token(Self::find(conn, key)?, expected)
    }
}

impl<T: Versioned, Conn: Connection> CheckedDsl<Conn> for T {}

/// The conflict behind a zero-row write: one query for the row's current token, a
/// locking read inside a transaction (see [`CurrentToken`] for why).
pub(crate) fn classify<T, Conn>(entity: &T, operation: Operation, conn: &mut Conn) -> Error
where
    T: Versioned,
    Conn: Connection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    let key = entity.key();
    let expected = entity.token();
    let in_transaction = !matches!(
        Conn::TransactionManager::transaction_manager_status_mut(conn).transaction_depth(),
        Ok(None)
    );
    let read = |conn: &mut Conn, lock: bool| {
        CurrentToken::new(T::token_query(key.clone()), lock)
            .get_result::<T::Token>(conn)
            .optional()
    };
    let mut current = read(conn, in_transaction);
    // A transaction opened with plain SQL is invisible to Diesel: a token equal to the
    // expected one may come from its snapshot, so read again, locking.
    if !in_transaction && matches!(&current, Ok(Some(token)) if token == expected) {
        current = read(conn, true);
    }
    match current {
        Ok(current) => checked::conflict::<T>(&key, operation, expected, current).into(),
        Err(error) => error.into(),
    }
}
