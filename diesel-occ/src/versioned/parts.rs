//! `VersionedParts`: the pieces of an entity's guarded statements, and the statement
//! types built from them.

use diesel::dsl::{self, Filter};
use diesel::query_dsl::methods::FilterDsl;

use super::Versioned;
use crate::statement::{AdvanceToken, TokenEq};

/// The parts of an entity's guarded statements, as described by `#[derive(Versioned)]`.
///
/// [`Versioned`] builds the complete statements of a checked save and delete; this
/// trait exposes their pieces so other checked writes can be built from them:
/// [`force_increment`](crate::VersionColumnDsl::force_increment),
/// [`soft_delete_checked`](crate::VersionColumnDsl::soft_delete_checked) and
/// [`bulk_update`](crate::Versioned::bulk_update).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::prelude::*;
/// use diesel_occ::prelude::*;
/// use diesel_occ::versioned::VersionedParts;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut conn = connection();
/// let stock = Stock::find(&mut conn, 1)?;
/// // `stock WHERE id = 1 AND version = 1`, the target of every guarded write.
/// let guarded = stock.guarded();
/// let rows: Vec<i32> = guarded.select(stock::available).load(&mut conn)?;
/// assert_eq!(rows, [10]);
/// # Ok(())
/// # }
/// ```
pub trait VersionedParts: Versioned {
    /// The token's Diesel column (`stock::version`).
    type TokenColumn: Default;
    /// `t WHERE <key> AND token = <original>`: the target of a guarded write.
    type Guarded;
    /// `token = <fresh>`, the assignment every guarded UPDATE carries, or
    /// [`NotAssigned`](crate::statement::NotAssigned) for a database-generated token.
    type TokenAssignment;
    /// Every column a checked save writes and `token = <fresh>`: the `DO UPDATE SET` of
    /// an upsert ([`NotAssigned`](crate::statement::NotAssigned) for a database-generated token).
    type Changes;
    /// The key's Diesel columns (a column, or a tuple for a composite key): the
    /// conflict target of an upsert.
    type KeyColumns: Default;
    /// True for `#[occ(version, generated)]`: the database assigns the token.
    const GENERATED_TOKEN: bool;

    /// The row with this entity's key, if it still holds the entity's token.
    fn guarded(&self) -> Self::Guarded;

    /// The assignment `token = fresh`.
    fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment;

    /// The entity's written columns with their values, and `token = fresh`.
    fn changes(&self, fresh: &Self::Token) -> Self::Changes;

    /// Whether an UPDATE of [`changes`](Self::changes) is kept in Diesel's statement
    /// cache: true when its text is one of at most two, because the `Option` fields
    /// whose `None` leaves their column out are all `Some` or all `None`. Other texts
    /// are prepared for one execution. False (never cached) unless derived.
    fn changes_text_cached(&self) -> bool {
        false
    }

    /// Whether the INSERT of this entity (an upsert's) is kept in Diesel's statement
    /// cache: the same rule over every `Option` field, whose `None` SQLite leaves out
    /// of an INSERT. False (never cached) unless derived.
    fn insert_text_cached(&self) -> bool {
        false
    }
}

/// `token = <expected>` on an entity's token column (every text form on SQLite).
pub type TokenIs<T> = TokenEq<<T as VersionedParts>::TokenColumn, <T as Versioned>::Token>;

/// `t WHERE <key> AND token = <expected>`: the target of a write by key and a client's
/// token, which never loads the row.
pub type KeyGuarded<T> = Filter<<T as Versioned>::FindQuery, TokenIs<T>>;

/// The row with `key`, if it still holds `expected`.
pub(crate) fn key_guarded<T>(key: T::Key, expected: &T::Token) -> KeyGuarded<T>
where
    T: VersionedParts,
    T::FindQuery: FilterDsl<TokenIs<T>>,
{
    let token = TokenEq::new(
        T::TokenColumn::default(),
        expected.clone(),
        T::token_text_forms,
    );
    T::find_query(key).filter(token)
}

/// The UPDATE [`Versioned::bulk_update`](crate::Versioned::bulk_update) builds: `target` updated with `changes` and the
/// advanced token.
pub type BulkUpdate<T, Target, Changes> = dsl::Update<
    Target,
    (
        Changes,
        <<T as Versioned>::Token as AdvanceToken<<T as VersionedParts>::TokenColumn>>::Assignment,
    ),
>;
