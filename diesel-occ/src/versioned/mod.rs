//! [`Versioned`]: what `#[derive(Versioned)]` says about an entity, and the statement
//! types built from what it says ([`KeyGuarded`], [`BulkUpdate`], [`ValuesUpdate`]).

use std::fmt;

use diesel::query_builder::{AsChangeset, IntoUpdateTarget};

use crate::error::EntityKey;
use crate::statement::{AdvanceToken, NoTokenAssignment, ValuesColumns};
use crate::token::{InvalidToken, VersionToken};

mod parts;
mod values_update;

pub(crate) use parts::key_guarded;
pub use parts::{BulkUpdate, KeyGuarded, TokenIs, VersionedParts};
pub use values_update::ValuesUpdate;
pub(crate) use values_update::count_written;

/// An entity with a concurrency token, as described by `#[derive(Versioned)]`.
///
/// The derive implements it; the checked writes of [`CheckedDsl`](crate::CheckedDsl)
/// use it. It names the table, the key and the token, and hands out the token and the
/// key of an entity. The statements it builds for the checked writes (the guarded
/// `UPDATE` and `DELETE`, the query for the current token) are plumbing, hidden from
/// this page; [`statement`](crate::statement) holds the rest of it.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::Versioned;
///
/// # fn main() {
/// assert_eq!(<Stock as Versioned>::TABLE_NAME, "stock");
/// assert_eq!(<Stock as Versioned>::KEY_COLUMNS, &["id"]);
/// assert_eq!(<Stock as Versioned>::TOKEN_COLUMN, "version");
/// # }
/// ```
pub trait Versioned: Sized {
    /// The Diesel table (`schema::stock::table`).
    type Table;
    /// The token's type.
    type Token: VersionToken;
    /// The primary key: the key field's type, or a tuple of them for a composite key.
    type Key: Clone + fmt::Debug + Send + Sync + 'static;
    /// The guarded UPDATE: a [`CachedUpdate`](crate::statement::CachedUpdate) when derived, so
    /// that each connection prepares it once. Plumbing, like the three below.
    #[doc(hidden)]
    type UpdateStatement;
    /// The guarded DELETE.
    #[doc(hidden)]
    type DeleteStatement;
    /// `SELECT token FROM t WHERE <key>`.
    #[doc(hidden)]
    type TokenQuery;
    /// `t WHERE <key>`, without a selection.
    #[doc(hidden)]
    type FindQuery;
    /// The entity's row in a batch's `VALUES` list: its typed binds in the order of
    /// [`VALUES_COLUMNS`](Self::VALUES_COLUMNS) (see
    /// [`ValuesUpdate`](ValuesUpdate)); `()` for an entity without one.
    #[doc(hidden)]
    type ValuesRow;

    /// The table's name as the entity's `table_name` gives it (`stock` for
    /// `schema::stock`): its SQL name unless `table!` declares another
    /// (`#[sql_name = "..."]`) or a schema. diesel-occ names the table by
    /// [`sql_table_name`](Self::sql_table_name).
    const TABLE_NAME: &'static str;
    /// The token column's SQL name.
    const TOKEN_COLUMN: &'static str;
    /// The key columns' SQL names, in key order.
    const KEY_COLUMNS: &'static [&'static str];
    /// The fractional digits of a second the token column stores, for timestamp tokens:
    /// `#[occ(version, precision = N)]`, default 0 (whole seconds, which every
    /// timestamp column stores exactly). Other tokens ignore it.
    const TOKEN_PRECISION: u8 = 0;
    /// The columns of [`ValuesRow`](Self::ValuesRow), or `None` for an entity whose
    /// batches are never one `VALUES` statement (a database-generated token, a
    /// hand-written impl): they run one UPDATE per entity.
    #[doc(hidden)]
    const VALUES_COLUMNS: Option<ValuesColumns> = None;

    /// The table's SQL name, with its schema when `table!` names one (`app.stock`): the
    /// name conflicts, errors, events and the [hot-row memory](crate::retry::HotRows)
    /// give the table. Derived from Diesel's rendering of the table, so `#[sql_name]`
    /// and a schema are honoured; [`TABLE_NAME`](Self::TABLE_NAME) by default.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::Versioned;
    ///
    /// diesel::table! {
    ///     #[sql_name = "inventory"]
    ///     stock_items (id) { id -> Integer, version -> Integer }
    /// }
    ///
    /// #[derive(Queryable, Selectable, diesel_occ::Versioned)]
    /// #[diesel(table_name = stock_items)]
    /// pub struct Item {
    ///     pub id: i32,
    ///     #[occ(version)]
    ///     pub version: i32,
    /// }
    ///
    /// # fn main() {
    /// assert_eq!(Item::TABLE_NAME, "stock_items");
    /// assert_eq!(Item::sql_table_name(), "inventory");
    /// # }
    /// ```
    fn sql_table_name() -> &'static str {
        Self::sql_table().qualified
    }

    /// The table's SQL names: its schema, its name, and both as
    /// [`sql_table_name`](Self::sql_table_name). Derived from Diesel's rendering,
    /// rendered once per entity type; [`TABLE_NAME`](Self::TABLE_NAME) in no schema by
    /// default.
    #[doc(hidden)]
    fn sql_table() -> crate::sql_name::TableName {
        crate::sql_name::TableName::unqualified(Self::TABLE_NAME)
    }

    /// The token as read (or as last written by a checked save).
    fn token(&self) -> &Self::Token;

    /// Replaces the token; the checked operations call this after a successful write.
    fn set_token(&mut self, token: Self::Token);

    /// The entity's key.
    fn key(&self) -> Self::Key;

    /// The texts of a timestamp token a guarded write on SQLite also matches. Not
    /// public API.
    #[doc(hidden)]
    fn token_text_forms(token: &Self::Token) -> Option<crate::token::TimestampText> {
        token.text_forms()
    }

    /// The token a checked write stores next: a fresh one at the column's declared
    /// precision ([`VersionToken::try_next_token_at`] with
    /// [`TOKEN_PRECISION`](Self::TOKEN_PRECISION)), or
    /// [`InvalidTokenReason::OutOfRange`](crate::InvalidTokenReason::OutOfRange) when no
    /// fresh token can follow the entity's, before anything is written.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::Versioned;
    ///
    /// # fn main() {
    /// let stock = Stock { id: 1, available: 9, deleted: false, version: 1 };
    /// assert_eq!(stock.fresh_token(), Ok(2));
    /// # }
    /// ```
    fn fresh_token(&self) -> Result<Self::Token, InvalidToken> {
        self.token().try_next_token_at(Self::TOKEN_PRECISION)
    }

    /// Each key part rendered with `Debug`, in key order.
    #[doc(hidden)]
    fn key_values(key: &Self::Key) -> Vec<String>;

    /// The guarded UPDATE writing every column but the key, with `fresh` as the token.
    #[doc(hidden)]
    fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement;

    /// The entity's row in a batch's `VALUES` list, with `fresh` as the token to store:
    /// `None` when [`VALUES_COLUMNS`](Self::VALUES_COLUMNS) is.
    #[doc(hidden)]
    fn values_row(&self, fresh: &Self::Token) -> Option<Self::ValuesRow> {
        let _ = fresh;
        None
    }

    /// The guarded DELETE.
    #[doc(hidden)]
    fn delete_statement(&self) -> Self::DeleteStatement;

    /// The query for the token the row holds now.
    #[doc(hidden)]
    fn token_query(key: Self::Key) -> Self::TokenQuery;

    /// The row with this key, before a selection is added.
    #[doc(hidden)]
    fn find_query(key: Self::Key) -> Self::FindQuery;

    /// The key as it appears in errors and logs: `(id=7)`.
    fn entity_key(key: &Self::Key) -> EntityKey {
        EntityKey::new(Self::KEY_COLUMNS, Self::key_values(key))
    }

    /// A bulk write that bypasses the per-entity check on purpose, and says so: it
    /// advances the token of every row it touches. It builds the statement only: run
    /// it with Diesel's or diesel-async's `execute`.
    ///
    /// `UPDATE <target> SET <changes>, token = <advanced>`: see `AdvanceToken` for
    /// what each token kind becomes. `target` is the table or a filtered table;
    /// `changes` what Diesel's `.set(...)` takes, built from `column.eq(value)`
    /// assignments. An entity whose token the database generates needs none of this:
    /// any UPDATE advances it.
    ///
    /// `changes` never assigns or reads the token column: that is a compile error (see
    /// `NoTokenAssignment`), since the bulk update assigns the token itself.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel::prelude::*;
    /// use diesel_occ::prelude::*;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut conn = connection();
    /// let mut in_flight = Stock::find(&mut conn, 1)?;
    ///
    /// // UPDATE stock SET available = 0, version = version + 1 WHERE available < 15
    /// let touched = Stock::bulk_update(
    ///     stock::table.filter(stock::available.lt(15)),
    ///     stock::available.eq(0),
    /// )
    /// .execute(&mut conn)?;
    /// assert_eq!(touched, 1);
    ///
    /// // The edit that was in flight no longer overwrites the bulk write.
    /// in_flight.available -= 1;
    /// assert!(in_flight.save_checked(&mut conn).unwrap_err().is_conflict());
    /// # Ok(())
    /// # }
    /// ```
    fn bulk_update<Target, Changes>(
        target: Target,
        changes: Changes,
    ) -> BulkUpdate<Self, Target, Changes>
    where
        Self: VersionedParts,
        Target: IntoUpdateTarget,
        Target::Table: diesel::Table,
        Self::Token: AdvanceToken<<Self as VersionedParts>::TokenColumn>,
        Changes: NoTokenAssignment<<Self as VersionedParts>::TokenColumn>,
        (
            Changes,
            <Self::Token as AdvanceToken<<Self as VersionedParts>::TokenColumn>>::Assignment,
        ): AsChangeset<Target = Target::Table>,
        BulkUpdate<Self, Target, Changes>: diesel::query_builder::AsQuery,
    {
        diesel::update(target).set((
            changes,
            <Self::Token as AdvanceToken<<Self as VersionedParts>::TokenColumn>>::advance(
                <Self as VersionedParts>::TokenColumn::default(),
                Self::TOKEN_PRECISION,
            ),
        ))
    }
}

/// Every entity's fresh token, or the first entity whose token cannot advance, before
/// anything is written.
pub(crate) fn fresh_tokens<T: Versioned>(entities: &[T]) -> Result<Vec<T::Token>, crate::Error> {
    entities
        .iter()
        .map(|entity| entity.fresh_token().map_err(crate::Error::from))
        .collect()
}
