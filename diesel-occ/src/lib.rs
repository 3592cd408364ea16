//! Optimistic concurrency control for [Diesel](https://diesel.rs): the EF Core /
//! Hibernate `@Version` pattern, with typed conflicts.
//!
//! A repository that loads a row, changes it in memory and saves it loses updates when
//! two writers overlap. Mark one field as the concurrency token and save with
//! [`save_checked`](CheckedDsl::save_checked): the write carries the token that was
//! read in its `WHERE` clause and stores a fresh one, so the second writer gets a
//! [`ConcurrencyConflict`] instead of silently overwriting the first.
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
//! #[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
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
//! # The derive
//!
//! `#[derive(Versioned)]` reads Diesel's own attributes and one of its own:
//!
//! Required field attribute:
//! - `#[occ(version)]` on exactly one field: the concurrency token. Its type implements
//!   [`VersionToken`]: `i16`, `i32`, `i64` (wrapping counters), [`uuid::Uuid`]
//!   (PostgreSQL) or [`UuidToken`] (any backend), `chrono::NaiveDateTime` or
//!   `chrono::DateTime<Utc>` (whole seconds unless `precision` says more, see below). It
//!   cannot be part of the key or an `Option`.
//!   `#[occ(version, generated)]` marks a token the database assigns, such as
//!   PostgreSQL's `xmin` (`pg::XminToken`, feature `postgres`): never written, read
//!   back with `RETURNING`.
//!
//! Optional field attribute (ours), on the token:
//! - `#[occ(version, precision = N)]`, default 0: the fractional digits of a second a
//!   timestamp token's column keeps (0 to 6: `DATETIME` is 0, `DATETIME(3)` 3,
//!   PostgreSQL's `timestamp` 6). A fresh token is a whole step of that precision past
//!   the old one, so the column stores it exactly: a column that keeps fewer digits than
//!   declared could round a fresh token back onto the old one, which
//!   [`schema::SchemaCheck`] reports at start-up.
//!
//! Optional container attribute (ours):
//! - `#[occ(track)]`, default off: also derive [`Tracking`], for [`Tracked`] saves that
//!   write only the edited columns, three-way diffs and merges. Every written field must
//!   implement `PartialEq` and `Clone`.
//!
//! Optional container attributes (Diesel's):
//! - `#[diesel(table_name = path)]`, default: the struct name in snake case plus `s`.
//! - `#[diesel(primary_key(a, b))]`, default: `id`. Composite keys are supported.
//! - `#[diesel(treat_none_as_null = true)]`, default `false`: as in Diesel's
//!   `AsChangeset`, a `None` field leaves the column alone unless this is set.
//!
//! Optional field attributes:
//! - `#[diesel(column_name = name)]`, default: the field name.
//! - `#[diesel(skip_update)]` or `#[occ(skip)]`: the column is never written by
//!   `save_checked`, tracked or batch saves (for a column maintained elsewhere, such as
//!   an atomic counter).
//! - `#[diesel(treat_none_as_null = bool)]`: overrides the container's setting.
//!
//! # Retrying
//!
//! [`retry::retry`] (blocking) and `asynchronous::retry` (async, feature `async`)
//! run a closure that re-reads, decides and saves, on a fresh connection from a pool for
//! every attempt, until it succeeds, returns a domain outcome, fails for good or the
//! [`RetryPolicy`](retry::RetryPolicy) gives up. They retry conflicts and the
//! databases' transient errors only ([`Error::is_retryable`]), back off with jitter, and
//! can escalate a hot row to a locking read (`SELECT ... FOR UPDATE`, SQLite's
//! `BEGIN IMMEDIATE`) after a number of conflicts.
//!
//! # Async
//!
//! With feature `async`, `diesel_occ::asynchronous` has the same
//! `CheckedDsl` methods for `diesel_async::AsyncConnection` (PostgreSQL, MySQL, and
//! SQLite through `SyncConnectionWrapper`), returning `Send` futures that are safe to
//! drop: `use diesel_occ::asynchronous::prelude::*` instead of `diesel_occ::prelude`.
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
//! # Features
//!
//! - `derive` (default): re-exports `#[derive(Versioned)]`.
//! - `postgres`, `mysql`, `sqlite`: backend-specific types (such as [`UuidToken`] on
//!   PostgreSQL's `uuid`) and the backend's [`LockingBackend`](backend::LockingBackend),
//!   which the retry helpers need. None of them links a C client library but `sqlite`
//!   (Diesel's `sqlite` feature).
//! - `async`: the `asynchronous` module, on diesel-async (its
//!   backoff sleeps on Tokio's timer).
//! - `deadpool`: diesel-async's deadpool `Pool` as an async retry source.
//! - `r2d2`: Diesel's r2d2 `Pool` as a blocking retry source.
//! - `metrics`: the counters listed in [`observe`].
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

#[cfg(feature = "async")]
pub mod asynchronous;
pub mod backend;
mod batch;
mod beyond;
mod bulk;
mod checked;
mod derive_support;
mod dialect;
mod error;
pub mod guard;
pub mod observe;
mod parts;
#[cfg(feature = "postgres")]
pub mod pg;
mod predicate;
pub mod retry;
pub mod schema;
mod statement;
mod sync;
mod token;
mod tracked;
mod transaction;
mod uuid_token;
mod versioned;

pub use batch::BatchConflict;
pub use beyond::{AggregateDsl, BatchDsl, TrackedDsl};
pub use bulk::{AdvanceToken, AdvancedTimestamp, BulkDsl, BulkUpdate, NoTokenAssignment};
pub use checked::CurrentToken;
pub use error::{
    ConcurrencyConflict, ConflictState, DatabaseError, EntityKey, Error, InvalidToken,
    InvalidTokenReason, NotFound, Operation, PoolError, PoolErrorKind, RetriesExhausted,
    TransientKind,
};
pub use parts::{GeneratedUpdate, GuardedUpdate, NotAssigned, VersionedParts};
pub use statement::CachedUpdate;
pub use sync::CheckedDsl;
pub use token::{MAX_ENCODED_LEN, TokenKind, TokenValue, VersionToken};
pub use tracked::{
    FieldIndexOutOfRange, Fields, Overlap, Prefer, SaveOutcome, ThreeWay, Tracked, Tracking,
};
pub use transaction::{Restore, transaction};
pub use uuid_token::UuidToken;
pub use versioned::Versioned;

#[cfg(feature = "derive")]
pub use diesel_occ_derive::Versioned;

/// The traits and the derive, for `use diesel_occ::prelude::*`: the blocking
/// [`CheckedDsl`] and [`AttemptDsl`](crate::retry::AttemptDsl). The async twins are in
/// `diesel_occ::asynchronous::prelude`.
pub mod prelude {
    pub use crate::retry::AttemptDsl;
    pub use crate::{
        AggregateDsl, BatchDsl, BulkDsl, CheckedDsl, TrackedDsl, VersionToken, Versioned,
        VersionedParts,
    };
}

/// Used by the code `#[derive(Versioned)]` generates. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bulk::{ColumnsOtherThan, NotTheTokenColumn};
    pub use crate::derive_support::*;
    pub use crate::predicate::TokenEq;
    pub use crate::{
        CachedUpdate, Fields, GeneratedUpdate, NotAssigned, TokenKind, Tracking, VersionToken,
        Versioned, VersionedParts,
    };
    pub use diesel;
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
