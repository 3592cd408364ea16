//! Optimistic concurrency control for [Diesel](https://diesel.rs): the EF Core /
//! Hibernate `@Version` pattern, with typed conflicts.
//!
//! A repository that loads a row, changes it in memory and saves it loses updates when
//! two writers overlap. Mark one field as the concurrency token and save with
//! [`save_checked`](CheckedDsl::save_checked): the write carries the token that was
//! read in its `WHERE` clause and stores a fresh one, so the second writer gets a
//! [`ConcurrencyConflict`] instead of silently overwriting the first.
//!
//! # Where to find things
//!
//! | to... | see |
//! |---|---|
//! | declare an entity and its token | [`derive@Versioned`], [`VersionToken`] (token kinds), [`guide::checked_writes`] |
//! | load, save and delete with the token check | [`EntityDsl`], [`CheckedDsl`] |
//! | insert with the initial token, upsert by the client's token | [`InsertDsl`], [`Upserted`] |
//! | bring your Diesel models and forms | [`derive@ChangesetColumns`], [`guide::diesel_models`] |
//! | write from a client's token (`If-Match`) | [`VersionColumnDsl::update_by_key`], [`EntityDsl::find_checked`], [`guide::client_tokens`] |
//! | save many entities, all or nothing | [`BatchDsl`] |
//! | save only the edited columns, merge a conflict | [`Tracked`], [`TrackedDsl`] |
//! | roll back a transaction without losing tokens | [`transaction()`] |
//! | retry a read-decide-save | [`retry`], [`RetryPolicy`](retry::RetryPolicy), [`guide::retries`] |
//! | write a hot row | `blocking::Combiner` (feature `combine`), [`RetryPolicy::escalate_hot_rows`](retry::RetryPolicy::escalate_hot_rows), [`guide::tuning`] |
//! | use diesel-async | `asynchronous` (feature `async`), [`guide::asynchronous`] |
//! | handle errors | [`Error`], [`ConcurrencyConflict`], [`ConflictState`] |
//! | check the token columns and keys at start-up | [`schema_check::SchemaCheck`] |
//! | writers that bypass diesel-occ | [`Versioned::bulk_update`], `bypass_guard` (feature `bypass-guard`) |
//! | PostgreSQL's `xmin` as the token | `xmin` (feature `postgres`) |
//! | standbys and several hosts | `blocking::retry_with_standby` (feature `standby`), `multi_host` (feature `multi-host`) |
//! | test your own races | `testing::Race` (feature `testing`) |
//! | trace and count | [`observe`] |
//! | read how the pieces fit together | [`guide`] |
//! | choose features | [Features](#features) |
//!
//! # Example
//!
//! ```
//! use diesel::prelude::*;
//! use diesel_occ::prelude::*;
//!
//! diesel::table! {
//!     stock (id) {
//!         id -> Integer,
//!         available -> Integer,
//!         version -> Integer,
//!     }
//! }
//!
//! #[derive(Debug, Queryable, Selectable, Versioned)]
//! #[diesel(table_name = stock)]
//! pub struct Stock {
//!     pub id: i32,
//!     pub available: i32,
//!     #[occ(version)] // the concurrency token
//!     pub version: i32,
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut conn = SqliteConnection::establish(":memory:")?;
//! # diesel::sql_query("CREATE TABLE stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL, version INTEGER NOT NULL)").execute(&mut conn)?;
//! # diesel::sql_query("INSERT INTO stock VALUES (1, 10, 1)").execute(&mut conn)?;
//! // Two requests read the same row...
//! let mut first = Stock::find(&mut conn, 1)?;
//! let mut second = Stock::find(&mut conn, 1)?;
//!
//! // ...the first saves: UPDATE stock SET available = 9, version = 2
//! //                     WHERE id = 1 AND version = 1
//! first.available -= 1;
//! first.save_checked(&mut conn)?;
//! assert_eq!(first.version, 2);
//!
//! // ...the second was working from version 1: its save matches no row.
//! second.available -= 5;
//! let error = second.save_checked(&mut conn).unwrap_err();
//! let conflict = error.as_conflict().expect("a concurrency conflict");
//! assert_eq!(conflict.current::<i32>(), Some(2));
//! assert_eq!(second.version, 1); // untouched: re-read, merge or give up
//! # Ok(())
//! # }
//! ```
//!
//! # The checked writes
//!
//! Four traits (blocking; `asynchronous` has their async twins of the same names), each
//! the one bound a function generic over the entity needs for its methods:
//! [`EntityDsl`] (loads and the checked delete, every entity), [`CheckedDsl`] (saves),
//! [`VersionColumnDsl`] (writes that need a version column the application assigns) and
//! [`InsertDsl`]:
//! - [`save_checked`](CheckedDsl::save_checked) and
//!   [`delete_checked`](EntityDsl::delete_checked) of an entity that was read;
//! - [`save_checked_where`](CheckedDsl::save_checked_where): the same save, valid only
//!   while a condition of yours holds (a job still `pending`);
//! - [`update_by_key`](VersionColumnDsl::update_by_key) and
//!   [`delete_by_key`](VersionColumnDsl::delete_by_key): one statement from a key and the
//!   token a client sent (an HTTP `If-Match`), without loading the row;
//! - [`find`](EntityDsl::find), [`find_checked`](EntityDsl::find_checked),
//!   [`force_increment`](VersionColumnDsl::force_increment) (an aggregate root) and
//!   [`soft_delete_checked`](VersionColumnDsl::soft_delete_checked).
//!
//! A repository generic over its entities names one of these bounds per method; the
//! arguments of a write are bounded by [`CheckedChanges`], [`CheckedPredicate`] and
//! [`InsertableForm`], implemented for every argument that works.
//!
//! [`Tracked`] saves write only the edited columns and merge a conflict
//! ([`TrackedDsl`]); [`BatchDsl`] saves many entities all or nothing;
//! [`Versioned::bulk_update`] advances the token of every row a bulk write touches;
//! [`transaction()`] gives entities their tokens back when it rolls back.
//!
//! # The derive
//!
//! `#[derive(Versioned)]` (feature `derive`, on by default) describes an entity: its
//! table and key, read from Diesel's own `#[diesel(...)]` attributes, and its
//! concurrency token, marked `#[occ(version)]`. It sits beside `Queryable` and
//! `Selectable` and needs no `Identifiable` or `AsChangeset`. Every attribute, with its
//! default, is documented on the [derive itself](derive@Versioned).
//!
//! # Retrying
//!
//! [`blocking::retry`] (blocking) and `asynchronous::retry` (async, feature `async`)
//! run a closure that re-reads, decides and saves, on a fresh connection from a pool for
//! every attempt, until it succeeds, returns a domain outcome, fails for good or the
//! [`RetryPolicy`](retry::RetryPolicy) gives up. They retry conflicts and the
//! databases' transient errors only ([`Error::is_retryable`]), back off with jitter, and
//! can escalate a hot row to a locking read (`SELECT ... FOR UPDATE`, SQLite's
//! `BEGIN IMMEDIATE`) after a number of conflicts. [`guide::retries`] shows the loop,
//! escalation, the combiner for hot rows and what an attempt's transaction covers.
//!
//! # Async
//!
//! With feature `async`, `diesel_occ::asynchronous` has the same
//! `CheckedDsl` methods for `diesel_async::AsyncConnection` (PostgreSQL, MySQL, and
//! SQLite through `SyncConnectionWrapper`), returning `Send` futures that are safe to
//! drop: `use diesel_occ::asynchronous::prelude::*` instead of `diesel_occ::prelude`.
//! [`guide::asynchronous`] lists every blocking item's async twin.
//!
//! # Errors
//!
//! Every operation returns [`Error`]: [`Error::Conflict`] (stale or deleted, with the
//! table, key, expected and current token), [`Error::NotFound`],
//! [`Error::InvalidToken`] (a nil, empty or malformed client token) or
//! [`Error::Database`] ([`Error::is_transient`] tells a deadlock or a serialization
//! failure from the rest). The retry helpers add [`Error::Pool`] (no connection) and
//! [`Error::RetriesExhausted`] (the attempt count and the last error). None of their
//! `Display` or `Debug` output contains SQL text, bind values, driver messages or
//! connection strings.
//!
//! # Observability
//!
//! `tracing` events for every checked write, conflict and retry, and counters through
//! the `metrics` facade (feature `metrics`): see [`observe`].
//!
//! # Testing your own races
//!
//! With feature `testing`, `diesel_occ::testing::Race` puts a barrier around your own
//! repository code: N writers read, all meet at the barrier, then write, and the report
//! gives each writer's outcome in order, so "two requests reserve the last seat" is a
//! deterministic test rather than a timing gamble. The module's documentation has the
//! seat race on SQLite.
//!
//! # Features
//!
//! Everything beyond the checked writes, the retry helpers and the schema check is
//! optional. `derive`, `chrono` and `uuid` are on by default; the items of every
//! other feature are marked with the features they need. With `default-features =
//! false`, neither chrono nor uuid is compiled, and Diesel's features of the same names
//! stay off.
//!
//! | feature | what it adds | extra dependencies |
//! |---|---|---|
//! | `derive` (default) | `#[derive(Versioned)]`, `#[derive(ChangesetColumns)]` | `diesel-occ-derive` |
//! | `chrono` (default) | `chrono::NaiveDateTime` and `chrono::DateTime<Utc>` tokens | `chrono`, Diesel's `chrono` |
//! | `uuid` (default) | `uuid::Uuid` and [`UuidToken`] tokens | `uuid`, Diesel's `uuid` |
//! | `time` | `time::PrimitiveDateTime` and `time::OffsetDateTime` tokens | `time`, Diesel's `time` |
//! | `postgres`, `mysql`, `sqlite` | backend-specific types ([`UuidToken`] on PostgreSQL's `uuid`, `xmin`) and the backend's locking SQL, which the retry helpers escalate with | Diesel's backend features; only `sqlite` links a C library |
//! | `async` | `asynchronous`: the same API on `diesel_async::AsyncConnection`, on any Tokio runtime (current-thread included); with `sqlite`, on diesel-async's `SyncConnectionWrapper` too | `diesel-async`, `tokio` (`rt`, `time`); with `sqlite`, diesel-async's `sync-connection-wrapper`, which turns on Tokio's `rt-multi-thread` |
//! | `async-tuning` | `asynchronous::BlockInPlace`, `asynchronous::retry_in_blocking_task` and, with `deadpool`, `asynchronous::verify_when_idle` (see [`guide::tuning`]) | `async`, Tokio's multi-threaded runtime |
//! | `deadpool` | diesel-async's deadpool `Pool` as an async retry source; `asynchronous::pool::deadpool` re-exports what building one takes | `async`, `deadpool` |
//! | `bb8` | diesel-async's bb8 `Pool` as an async retry source; `asynchronous::pool::bb8` re-exports what building one takes | `async`, `bb8` |
//! | `r2d2` | Diesel's r2d2 `Pool` as a blocking retry source | Diesel's `r2d2` |
//! | `combine` | `blocking::Combiner` (and `asynchronous::Combiner`): changes to one hot row applied in groups; `Error::OutcomeUnknown` | `tokio/sync` with `async` |
//! | `standby` | `blocking::retry_with_standby` and `StandbyConnections` (and their async twins): reads from a standby, saves on the primary | none |
//! | `multi-host` | `multi_host::MultiHost`: one connection source over several nodes | none |
//! | `bypass-guard` | `bypass_guard::BypassGuard`: trigger DDL that advances the token on writes that bypass diesel-occ | none |
//! | `metrics` | the counters and histograms listed in [`observe`], through the `metrics` facade | `metrics` |
//! | `serde` | `serde_token`: tokens in JSON bodies and form fields as their client form, validated as an `If-Match` token is; `Serialize`/`Deserialize` for [`UuidToken`] | `serde` (no derive) |
//! | `testing` | `testing::Race`: a race harness for your own tests | none |
//!
//! The backend features add items, never change what a write does: the SQL of every
//! checked write is chosen by the connection's backend type, so a backend that another
//! crate turns on (diesel-async's `mysql` turns on Diesel's MySQL types) behaves the
//! same with or without the matching feature here.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// No panic is reachable from input: library code returns typed errors, and each allow
// that remains says why it cannot panic. Tests and doctests may unwrap.
#![cfg_attr(
    not(test),
    warn(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable,
        clippy::indexing_slicing,
        clippy::string_slice,
        clippy::arithmetic_side_effects
    )
)]

mod aborted;
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub mod asynchronous;
pub mod backend;
pub mod blocking;
#[cfg(feature = "bypass-guard")]
#[cfg_attr(docsrs, doc(cfg(feature = "bypass-guard")))]
pub mod bypass_guard;
#[cfg(feature = "combine")]
mod combine;
mod derive_support;
mod dialect;
mod error;
pub mod guide;
mod insert;
#[cfg(feature = "multi-host")]
#[cfg_attr(docsrs, doc(cfg(feature = "multi-host")))]
pub mod multi_host;
pub mod observe;
mod outcome;
mod restore;
pub mod retry;
pub mod schema_check;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod serde_token;
mod sql_name;
#[cfg(feature = "standby")]
mod standby;
pub mod statement;
#[cfg(test)]
mod test_support;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
mod token;
mod tracked;
pub mod versioned;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod xmin;

pub use blocking::transaction;
pub use blocking::{BatchDsl, CheckedDsl, EntityDsl, InsertDsl, TrackedDsl, VersionColumnDsl};
pub use blocking::{CheckedChanges, CheckedPredicate, InsertableForm};
pub use dialect::Dialect;
pub use error::{
    BatchConflict, ConcurrencyConflict, ConflictState, DatabaseError, EntityKey, Error,
    InvalidToken, InvalidTokenReason, NotFound, Operation, PoolError, PoolErrorKind,
    RetriesExhausted, TransientKind, UniqueViolation,
};
pub use insert::Upserted;
pub use restore::Restore;
#[cfg(feature = "uuid")]
pub use token::uuid_token::UuidToken;
pub use token::{CheckValues, MAX_ENCODED_LEN, TokenKind, TokenValue, VersionToken};
pub use tracked::{
    FieldIndexOutOfRange, Fields, Overlap, Prefer, SaveOutcome, ThreeWay, Tracked, Tracking,
};
pub use versioned::Versioned;

#[cfg(feature = "derive")]
pub use diesel_occ_derive::{ChangesetColumns, Versioned};

/// The traits and the derives, for `use diesel_occ::prelude::*`: the blocking
/// [`CheckedDsl`] and [`AttemptDsl`](crate::blocking::AttemptDsl), and with `derive`
/// `#[derive(Versioned)]` and `#[derive(ChangesetColumns)]`. The async twins are in
/// `diesel_occ::asynchronous::prelude`.
///
/// `ChangesetColumns` is only a derive macro (no trait of that name), and `Versioned`,
/// `VersionToken` and `ChangesetColumns` are the same items in both preludes, so
/// glob-importing both never makes them ambiguous; only the traits with twins
/// (`CheckedDsl`, ...) clash. [`guide::asynchronous`] shows a crate that uses both
/// flavours.
///
/// ```
/// use diesel::prelude::*;
/// use diesel_occ::prelude::*;
///
/// diesel::table! {
///     stock (id) { id -> Integer, available -> Integer, version -> Integer }
/// }
///
/// // Both derives come from the prelude.
/// #[derive(AsChangeset, ChangesetColumns)]
/// #[diesel(table_name = stock)]
/// pub struct Restock {
///     pub available: i32,
/// }
/// ```
pub mod prelude {
    #[cfg(feature = "derive")]
    pub use crate::ChangesetColumns;
    pub use crate::blocking::AttemptDsl;
    pub use crate::blocking::VersionColumnDsl;
    pub use crate::blocking::{BatchDsl, CheckedDsl, EntityDsl, InsertDsl, TrackedDsl};
    pub use crate::blocking::{CheckedChanges, CheckedPredicate, InsertableForm};
    pub use crate::{VersionToken, Versioned};
}

/// Used by the code `#[derive(Versioned)]` generates. Not public API.
#[doc(hidden)]
pub mod __private {
    #[cfg(feature = "async")]
    pub use crate::asynchronous::guarded_update::ReturnsTokenAsync;
    pub use crate::derive_support::*;
    pub use crate::statement::bulk::{ColumnsOtherThan, NotTheTokenColumn};
    pub use crate::statement::fixed_text::HasOptionalParts;
    pub use crate::statement::{
        AssignedToken, CachedUpdate, GeneratedUpdate, NotAssigned, NullSafeEq, SaveThroughTracked,
        Skippable, TokenEq, ValuesColumns, WrittenColumn,
    };
    pub use crate::token::{
        CheckValues, InvalidToken, TimestampText, TokenValue, check_text_forms, no_client_token,
    };
    pub use crate::versioned::{KeyGuarded, VersionedParts};
    pub use crate::{Fields, TokenKind, Tracking, VersionToken, Versioned};
    pub use diesel;
}

/// The derive's attribute reference, whose example needs this crate, run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../diesel-occ-derive/src/versioned.md")]
pub struct DeriveDoctests;

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
