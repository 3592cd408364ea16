//! Checked operations on a blocking [`diesel::Connection`], and the retry helper that
//! runs them on a fresh connection per attempt.
//!
//! Item for item the twin of `diesel_occ::asynchronous` (feature `async`), whose
//! documentation has the table of both. What the two share (the retry policy, the
//! errors, the tokens) lives at the top of the crate. The crate root re-exports the
//! traits and [`transaction`] from here, and [`diesel_occ::prelude`](crate::prelude)
//! imports the traits.

use std::time::Duration;

use diesel::associations::HasTable;
use diesel::connection::{Connection, TransactionManager};
use diesel::dsl::{AsSelect, Select};
use diesel::query_builder::{AsChangeset, AsQuery, IntoUpdateTarget, QueryId};
use diesel::query_dsl::methods::{ExecuteDsl, FilterDsl, SelectDsl};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{OptionalExtension, Selectable, SelectableHelper, Table};

use crate::backend::LockedRead;
use crate::error::{Error, Operation};
use crate::observe;
use crate::outcome;
use crate::statement::{CurrentToken, GuardedUpdate};
use crate::token::VersionToken;
use crate::versioned::Versioned;
use crate::versioned::{KeyGuarded, TokenIs, VersionedParts, key_guarded};

mod arguments;
mod batch;
#[cfg(feature = "combine")]
mod combine;
mod insert;
mod retry;
#[cfg(feature = "standby")]
mod standby;
mod tracked;
mod transaction;

pub use arguments::{CheckedChanges, CheckedPredicate, InsertableForm};
pub use batch::BatchDsl;
#[cfg(feature = "combine")]
#[cfg_attr(docsrs, doc(cfg(feature = "combine")))]
pub use combine::{Combinable, Combiner};
pub use insert::InsertDsl;
pub use insert::{OnConflictReturning, UpsertBackend};
#[cfg(feature = "async-tuning")]
pub(crate) use retry::attempt_on;
pub use retry::{AttemptDsl, ConnectionSource, LockingConnection, retry};
#[cfg(feature = "standby")]
#[cfg_attr(docsrs, doc(cfg(feature = "standby")))]
pub use standby::{StandbyConnections, retry_with_standby};
pub use tracked::TrackedDsl;
pub use transaction::transaction;

/// Checked loads on a blocking Diesel connection: the row with a key, and the row with a
/// key checked against a client's token.
///
/// Implemented for every entity deriving [`Versioned`] and Diesel's `Selectable`, on
/// the connections of PostgreSQL, MySQL/MariaDB and SQLite, whatever its token (an
/// entity with `#[occ(check)]` columns too); in the prelude. A function that loads and
/// saves names it beside [`CheckedDsl`], which does not need `Selectable`.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
///
/// fn load<T: EntityDsl<SqliteConnection>>(
///     conn: &mut SqliteConnection,
///     key: T::Key,
/// ) -> Result<T, diesel_occ::Error> {
///     T::find(conn, key)
/// }
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let stock: Stock = load(&mut conn, 1)?;
/// assert_eq!(stock.version, 1);
/// # Ok(())
/// # }
/// ```
pub trait EntityDsl<Conn: Connection>: Versioned {
    /// Loads the row with this key, or [`Error::NotFound`].
    fn find(conn: &mut Conn, key: Self::Key) -> Result<Self, Error>;

    /// Loads the row with this key and checks that it still holds the token a client
    /// sent (an HTTP `If-Match`, a form field), before any edit.
    ///
    /// A nil or otherwise invalid token is [`Error::InvalidToken`] without a query; a
    /// missing row is [`Error::NotFound`]; a stale token is [`Error::Conflict`] with the
    /// current token. The client's token is never replaced by the loaded one.
    fn find_checked(conn: &mut Conn, key: Self::Key, expected: &Self::Token)
    -> Result<Self, Error>;

    /// Deletes the row with `DELETE ... WHERE <key> AND token = <original>`.
    ///
    /// When no row matches, returns [`Error::Conflict`] (stale or already deleted).
    fn delete_checked(&self, conn: &mut Conn) -> Result<(), Error>;

    /// Loads the row with this key, locking it until the transaction ends: the read of
    /// an escalated retry attempt ([`AttemptDsl::find`]).
    #[doc(hidden)]
    fn find_locked(
        conn: &mut Conn,
        key: Self::Key,
        remaining: Option<Duration>,
    ) -> diesel::QueryResult<Option<Self>>;
}

/// Checked saves on a blocking Diesel connection.
///
/// Implemented for every entity deriving [`Versioned`] whose save is one guarded
/// UPDATE (not `#[occ(check)]` columns, which save through [`Tracked`](crate::Tracked)),
/// on the connections of PostgreSQL, MySQL/MariaDB and SQLite; bring it into scope with
/// `use diesel_occ::prelude::*`. The async twin with the same method names lives in
/// `diesel_occ::asynchronous` (feature `async`).
///
/// `T: CheckedDsl<Conn>` is the one bound a function generic over the entity (a
/// repository) needs to save it; [`EntityDsl`] (loads, the checked delete),
/// [`VersionColumnDsl`], [`InsertDsl`], [`BatchDsl`] and [`TrackedDsl`] are the bounds of
/// the other checked operations.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
///
/// /// Any entity, any blocking connection: a bound per trait the function calls.
/// fn rename<T, C>(conn: &mut C, key: T::Key, edit: impl FnOnce(&mut T)) -> Result<T, diesel_occ::Error>
/// where
///     T: EntityDsl<C> + CheckedDsl<C>,
///     C: diesel::Connection,
/// {
///     let mut entity = T::find(conn, key)?;
///     edit(&mut entity);
///     entity.save_checked(conn)?;
///     Ok(entity)
/// }
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let stock: Stock = rename(&mut conn, 1, |s: &mut Stock| s.available = 4)?;
/// assert_eq!(stock.version, 2);
/// # Ok(())
/// # }
/// ```
///
/// Two writers:
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
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
    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error>;

    /// [`save_checked`](Self::save_checked) with one more condition of the caller's in
    /// the `WHERE`: `UPDATE ... WHERE <key> AND token = <original> AND <predicate>`.
    ///
    /// For a write that is only valid in a given state, decided by the database in the
    /// same statement: claim a job only while it is still `pending`, reserve a seat only
    /// while it is `free`. The predicate is an expression on the entity's table.
    ///
    /// When no row matches, the error says why, as for `save_checked`: another writer
    /// changed the row ([`ConflictState::Stale`](crate::ConflictState::Stale)), it was
    /// deleted, or it still holds the token that was read, so the predicate was false
    /// ([`ConflictState::Unmatched`](crate::ConflictState::Unmatched), which a retry
    /// never repeats). The entity is left untouched.
    ///
    /// The UPDATE stays in Diesel's statement cache when the predicate's type fixes its
    /// text (a static `QueryId`, as Diesel requires to cache a query by its type); a
    /// condition written at run time (`diesel::dsl::sql`) is prepared for one
    /// execution (see [`CachedUpdate::filter`](crate::statement::CachedUpdate::filter)).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel::prelude::*;
    /// use diesel_occ::prelude::*;
    /// use diesel_occ::ConflictState;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// let mut stock = Stock::find(&mut conn, 1)?;
    /// stock.available -= 10;
    /// // Only while the row has that many left.
    /// stock.save_checked_where(&mut conn, stock::available.ge(10))?;
    ///
    /// stock.available -= 1;
    /// let error = stock.save_checked_where(&mut conn, stock::available.ge(1)).unwrap_err();
    /// assert_eq!(error.as_conflict().unwrap().state(), &ConflictState::Unmatched);
    /// # Ok(())
    /// # }
    /// ```
    fn save_checked_where<Predicate: CheckedPredicate<Self, Conn>>(
        &mut self,
        conn: &mut Conn,
        predicate: Predicate,
    ) -> Result<(), Error>;
}

/// Checked writes that need a version column the application assigns: by key with a
/// client's token ([`update_by_key`](Self::update_by_key),
/// [`delete_by_key`](Self::delete_by_key)), the token alone
/// ([`force_increment`](Self::force_increment)) and the soft delete
/// ([`soft_delete_checked`](Self::soft_delete_checked)).
///
/// Implemented for every entity deriving [`Versioned`] with `#[occ(version)]` (not
/// for `#[occ(check)]` columns, which give no token to send, nor for a token the
/// database generates, which needs a loaded entity); in the prelude. The one bound a
/// generic function needs to make these writes:
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
///
/// fn remove<T: VersionColumnDsl<SqliteConnection>>(
///     conn: &mut SqliteConnection,
///     key: T::Key,
///     etag: &T::Token,
/// ) -> Result<(), diesel_occ::Error> {
///     T::delete_by_key(conn, key, etag)
/// }
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// remove::<Stock>(&mut conn, 1, &1)?;
/// assert!(Stock::find(&mut conn, 1).unwrap_err().is_not_found());
/// # Ok(())
/// # }
/// ```
///
/// The async twin is `diesel_occ::asynchronous::VersionColumnDsl`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no version column the application assigns on `{Conn}`",
    label = "no write by key, token-only write or soft delete for this entity",
    note = "`update_by_key`, `delete_by_key`, `force_increment` and `soft_delete_checked` need \
            `#[occ(version)]` on a token the application assigns: an entity with `#[occ(check)]` \
            columns has no token for a client, and a generated token (`xmin`) needs a loaded \
            entity (`find`, then `save_checked` / `delete_checked`)"
)]
pub trait VersionColumnDsl<Conn: Connection>: Versioned {
    /// Writes `changes` to the row with `key` if it still holds the token a client sent
    /// (an HTTP `If-Match`, a form field), in one statement and without loading it:
    /// `UPDATE t SET <changes>, token = <fresh> WHERE <key> AND token = <expected>`.
    /// Returns the fresh token (the client's next `ETag`).
    ///
    /// An invalid client token is [`Error::InvalidToken`] before any query. When no row
    /// matches, [`Error::Conflict`] says whether the row holds another token (with it)
    /// or is gone, at the cost of one more query. `changes` never assigns or reads the
    /// token column: that is a compile error (see `NoTokenAssignment`). Not available
    /// for a database-generated token, which needs a loaded entity.
    ///
    /// The UPDATE is a [`CachedUpdate`](crate::statement::CachedUpdate): prepared once
    /// per connection and reused, like `save_checked`'s, where Diesel's own
    /// `update(..).set(..)` would be prepared again for every call, when `changes` has
    /// one text. `changes` whose text varies from call to call (`Option` assignments, a
    /// form's `Option` fields, skipped when `None`: 2^k texts for k of them) would keep
    /// one prepared statement per text on each connection, so they are prepared for
    /// one execution instead (the rule is the changeset type's, decided at compile
    /// time: see `NoTokenAssignment`).
    ///
    /// **Hand the returned token to the client only after the write has committed.**
    /// Inside a transaction that later rolls back, the row keeps `expected` while the
    /// returned token was never stored; an integer counter's next writer can produce
    /// that same value, and a client holding it would then overwrite that writer. In
    /// autocommit (no transaction of yours) the write has committed when this returns.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel::prelude::*;
    /// use diesel_occ::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// // The client read version 1 and sends it back with its change.
    /// let etag = Stock::update_by_key(&mut conn, 1, &1, stock::available.eq(7))?;
    /// assert_eq!(etag, 2);
    ///
    /// // A second client that also read version 1 is refused.
    /// let error = Stock::update_by_key(&mut conn, 1, &1, stock::available.eq(0)).unwrap_err();
    /// assert_eq!(error.as_conflict().unwrap().current::<i32>(), Some(2));
    /// # Ok(())
    /// # }
    /// ```
    fn update_by_key<Changes: CheckedChanges<Self, Conn>>(
        conn: &mut Conn,
        key: Self::Key,
        expected: &Self::Token,
        changes: Changes,
    ) -> Result<Self::Token, Error>;

    /// Deletes the row with `key` if it still holds the token a client sent, in one
    /// statement and without loading it: `DELETE FROM t WHERE <key> AND token = <expected>`.
    ///
    /// An invalid client token is [`Error::InvalidToken`] before any query; when no row
    /// matches, [`Error::Conflict`] says whether it holds another token or is gone.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// assert!(Stock::delete_by_key(&mut conn, 1, &7).unwrap_err().is_conflict());
    /// Stock::delete_by_key(&mut conn, 1, &1)?;
    /// # Ok(())
    /// # }
    /// ```
    fn delete_by_key(conn: &mut Conn, key: Self::Key, expected: &Self::Token) -> Result<(), Error>;

    /// Advances the token without writing any other column:
    /// `UPDATE t SET token = <fresh> WHERE <key> AND token = <original>` (JPA's
    /// `OPTIMISTIC_FORCE_INCREMENT`).
    ///
    /// Call it on an aggregate root inside the transaction that writes its children:
    /// two writers that edit different children of one order then still conflict on
    /// the order, and the loser's transaction rolls back. On success the entity holds
    /// the fresh token; on [`Error::Conflict`] it is unchanged. Run that transaction
    /// with [`diesel_occ::transaction`](crate::transaction()), the root and the
    /// children among its entities, so that a rollback gives them their tokens back.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel::Connection;
    /// use diesel_occ::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// let mut order = Stock::find(&mut conn, 1)?; // the aggregate root
    /// let mut stale = order.clone();
    /// diesel_occ::transaction(&mut conn, &mut order, |conn, order| {
    ///     // ... insert or update the order's lines here ...
    ///     order.force_increment(conn)
    /// })?;
    /// assert_eq!(order.version, 2);
    /// let error = conn.transaction(|conn| stale.force_increment(conn)).unwrap_err();
    /// assert!(error.is_conflict());
    /// # Ok(())
    /// # }
    /// ```
    fn force_increment(&mut self, conn: &mut Conn) -> Result<(), Error>;

    /// Marks the row deleted with a checked UPDATE of the marker and the token:
    /// `UPDATE t SET <marker>, token = <fresh> WHERE <key> AND token = <original>`.
    ///
    /// `marker` is what Diesel's `.set(...)` takes, such as `stock::deleted.eq(true)`
    /// or `stock::deleted_at.eq(now)`; no other column is written. A writer still
    /// holding the entity as it was before conflicts instead of resurrecting it. On
    /// success the entity holds the fresh token (set the marker field yourself if you
    /// keep using it); on [`Error::Conflict`] it is unchanged.
    ///
    /// `marker` never assigns or reads the token column: that is a compile error (see
    /// `NoTokenAssignment`), since the write assigns the
    /// fresh token itself.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel::prelude::*;
    /// use diesel_occ::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// let mut stock = Stock::find(&mut conn, 1)?;
    /// let mut in_flight = stock.clone();
    /// stock.soft_delete_checked(&mut conn, stock::deleted.eq(true))?;
    /// assert!(Stock::find(&mut conn, 1)?.deleted);
    ///
    /// in_flight.available = 3;
    /// assert!(in_flight.save_checked(&mut conn).unwrap_err().is_conflict());
    /// # Ok(())
    /// # }
    /// ```
    fn soft_delete_checked<M: CheckedChanges<Self, Conn>>(
        &mut self,
        conn: &mut Conn,
        marker: M,
    ) -> Result<(), Error>;
}

impl<T, Conn> EntityDsl<Conn> for T
where
    T: Versioned + Selectable<Conn::Backend>,
    T::SelectExpression: QueryId,
    T::FindQuery: SelectDsl<AsSelect<T, Conn::Backend>>,
    Select<T::FindQuery, AsSelect<T, Conn::Backend>>:
        RunQueryDsl<Conn> + LoadQuery<'static, Conn, T>,
    LockedRead<Select<T::FindQuery, AsSelect<T, Conn::Backend>>>: LoadQuery<'static, Conn, T>,
    Conn: Connection,
    T::DeleteStatement: ExecuteDsl<Conn>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn find(conn: &mut Conn, key: T::Key) -> Result<T, Error> {
        T::find_query(key.clone())
            .select(T::as_select())
            .get_result(conn)
            .optional()?
            .ok_or_else(|| outcome::not_found::<T>(&key))
    }

    fn find_checked(conn: &mut Conn, key: T::Key, expected: &T::Token) -> Result<T, Error> {
        let result = match expected.validate() {
            Ok(()) => {
                Self::find(conn, key).and_then(|row| outcome::check_client_token(row, expected))
            }
            Err(invalid) => Err(invalid.into()),
        };
        observe::read_checked::<Conn::Backend, _>(T::sql_table_name(), "find_checked", &result);
        result
    }

    fn delete_checked(&self, conn: &mut Conn) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "delete_checked");
        observe::in_write_span(span, || {
            let affected = ExecuteDsl::execute(self.delete_statement(), conn)?;
            settle::<T, Conn>(conn, &self.key(), self.token(), Operation::Delete, affected)
        })
    }

    fn find_locked(
        conn: &mut Conn,
        key: T::Key,
        remaining: Option<Duration>,
    ) -> diesel::QueryResult<Option<T>> {
        LockedRead::new(T::find_query(key).select(T::as_select()))
            .within(remaining)
            .get_result(conn)
            .optional()
    }
}

impl<T, Conn> CheckedDsl<Conn> for T
where
    T: Versioned,
    Conn: Connection,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_checked");
        observe::in_write_span(span, || {
            let fresh = self.fresh_token()?;
            let (affected, fresh) = self.update_statement(&fresh).run_guarded(conn, fresh)?;
            settle::<T, Conn>(conn, &self.key(), self.token(), Operation::Update, affected)?;
            self.set_token(fresh);
            Ok(())
        })
    }

    fn save_checked_where<Predicate: CheckedPredicate<T, Conn>>(
        &mut self,
        conn: &mut Conn,
        predicate: Predicate,
    ) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_checked_where");
        observe::in_write_span(span, || {
            let fresh = self.fresh_token()?;
            let update = self.update_statement(&fresh);
            let (affected, fresh) = predicate.run_narrowed(update, conn, fresh)?;
            settle::<T, Conn>(conn, &self.key(), self.token(), Operation::Update, affected)?;
            self.set_token(fresh);
            Ok(())
        })
    }
}

impl<T, Conn> VersionColumnDsl<Conn> for T
where
    T: VersionedParts,
    Conn: Connection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget,
    <KeyGuarded<T> as HasTable>::Table: Table,
    T::TokenAssignment: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    diesel::dsl::Update<KeyGuarded<T>, T::TokenAssignment>: AsQuery + ExecuteDsl<Conn>,
    diesel::dsl::delete<KeyGuarded<T>>: ExecuteDsl<Conn>,
{
    fn update_by_key<Changes: CheckedChanges<T, Conn>>(
        conn: &mut Conn,
        key: T::Key,
        expected: &T::Token,
        changes: Changes,
    ) -> Result<T::Token, Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "update_by_key");
        observe::in_write_span(span, || {
            expected.validate()?;
            let fresh = expected.try_next_token_at(T::TOKEN_PRECISION)?;
            let affected = changes.run_by_key(conn, key.clone(), expected, &fresh)?;
            let operations = (Operation::Update, Operation::ClientToken);
            settle_as::<T, Conn>(conn, &key, expected, operations, affected)?;
            Ok(fresh)
        })
    }

    fn delete_by_key(conn: &mut Conn, key: T::Key, expected: &T::Token) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "delete_by_key");
        observe::in_write_span(span, || {
            expected.validate()?;
            let statement = diesel::delete(key_guarded::<T>(key.clone(), expected));
            let affected = ExecuteDsl::execute(statement, conn)?;
            let operations = (Operation::Delete, Operation::ClientToken);
            settle_as::<T, Conn>(conn, &key, expected, operations, affected)
        })
    }

    fn force_increment(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "force_increment");
        observe::in_write_span(span, || {
            let fresh = self.fresh_token()?;
            let target = key_guarded::<T>(self.key(), self.token());
            let statement = diesel::update(target).set(T::token_assignment(&fresh));
            let affected = ExecuteDsl::execute(statement, conn)?;
            let operation = Operation::ForceIncrement;
            settle::<T, Conn>(conn, &self.key(), self.token(), operation, affected)?;
            self.set_token(fresh);
            Ok(())
        })
    }

    fn soft_delete_checked<M: CheckedChanges<T, Conn>>(
        &mut self,
        conn: &mut Conn,
        marker: M,
    ) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "soft_delete_checked");
        observe::in_write_span(span, || {
            let fresh = self.fresh_token()?;
            let affected = marker.run_by_key(conn, self.key(), self.token(), &fresh)?;
            let operation = Operation::SoftDelete;
            settle::<T, Conn>(conn, &self.key(), self.token(), operation, affected)?;
            self.set_token(fresh);
            Ok(())
        })
    }
}

/// The end of every guarded write on a blocking connection: `Ok` (and the event) when
/// it wrote exactly the row, else the conflict that explains the zero-row write.
pub(crate) fn settle<T, Conn>(
    conn: &mut Conn,
    key: &T::Key,
    expected: &T::Token,
    operation: Operation,
    affected: usize,
) -> Result<(), Error>
where
    T: Versioned,
    Conn: Connection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    settle_as::<T, Conn>(conn, key, expected, (operation, operation), affected)
}

/// [`settle`], reported as `(written, conflict)`: the operation of its event when it
/// wrote, and of its conflict when it did not. A write that compared a token the caller
/// passed in (a client's `If-Match`) reports its conflict as
/// [`Operation::ClientToken`]: re-running the same call cannot resolve it, so the retry
/// helpers return it at once and do not count the row as hot.
pub(crate) fn settle_as<T, Conn>(
    conn: &mut Conn,
    key: &T::Key,
    expected: &T::Token,
    (written, conflict): (Operation, Operation),
    affected: usize,
) -> Result<(), Error>
where
    T: Versioned,
    Conn: Connection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    if outcome::written_key::<T>(key, affected)? {
        outcome::trace_written_key::<T>(key, written);
        Ok(())
    } else {
        Err(classify::<T, Conn>(key, expected, conflict, conn))
    }
}

/// The conflict behind a zero-row write: one query for the row's current token, a
/// locking read inside a transaction (see [`CurrentToken`] for why).
pub(crate) fn classify<T, Conn>(
    key: &T::Key,
    expected: &T::Token,
    operation: Operation,
    conn: &mut Conn,
) -> Error
where
    T: Versioned,
    Conn: Connection,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
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
        Ok(current) => outcome::conflict::<T>(key, operation, expected, current).into(),
        Err(error) => error.into(),
    }
}
