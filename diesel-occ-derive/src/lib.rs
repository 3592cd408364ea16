//! Implementation detail of [`diesel-occ`](https://docs.rs/diesel-occ): the
//! `#[derive(Versioned)]` macro, documented on [`Versioned`](macro@Versioned). Depend on
//! `diesel-occ`, which re-exports it; the generated code names `::diesel_occ` items.
//!
//! The derive only *describes* the entity (table, key, token column, changeset and the
//! typed statements built from them); every decision about saving, conflicts and
//! retries lives in the runtime crate.
#![forbid(unsafe_code)]

mod ast;
mod attr;
mod expand;
mod fallback;
mod valid;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Implements `diesel_occ::Versioned` for a struct that maps one row of a Diesel table:
/// which table, which key, which field is the concurrency token, and the typed statements
/// of a checked save and delete built from them. With `#[occ(track)]`, also
/// `diesel_occ::Tracking`, for tracked saves.
///
/// Use it as `diesel_occ::Versioned` (also in `diesel_occ::prelude`): the runtime crate
/// re-exports it, and the generated code refers to `::diesel_occ`. It reads Diesel's own
/// attributes, so it sits beside `Queryable` and `Selectable` on the same struct and
/// needs no `Identifiable` or `AsChangeset`.
///
/// # Example
///
/// ```
/// use diesel::prelude::*;
/// use diesel_occ::prelude::*;
///
/// diesel::table! {
///     accounts (tenant, id) {
///         tenant -> Integer,
///         id -> Integer,
///         display_name -> Text,
///         balance -> BigInt,
///         logins -> Integer,
///         row_version -> BigInt,
///     }
/// }
///
/// #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
/// #[diesel(table_name = accounts, primary_key(tenant, id))]
/// #[occ(track)] // also derive `Tracking`, for saves of the edited columns only
/// pub struct Account {
///     pub tenant: i32,
///     pub id: i32,
///     #[diesel(column_name = display_name)]
///     pub name: String,
///     pub balance: i64,
///     #[occ(skip)] // counted by an atomic UPDATE elsewhere: never written by a save
///     pub logins: i32,
///     #[occ(version)] // the concurrency token
///     pub row_version: i64,
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut conn = SqliteConnection::establish(":memory:")?;
/// # diesel::sql_query(
/// #     "CREATE TABLE accounts (tenant INTEGER NOT NULL, id INTEGER NOT NULL, \
/// #      display_name TEXT NOT NULL, balance BIGINT NOT NULL, logins INTEGER NOT NULL, \
/// #      row_version BIGINT NOT NULL, PRIMARY KEY (tenant, id))",
/// # )
/// # .execute(&mut conn)?;
/// # diesel::sql_query("INSERT INTO accounts VALUES (1, 7, 'Ada', 0, 0, 1)").execute(&mut conn)?;
/// let mut account = Account::find(&mut conn, (1, 7))?;
/// let mut stale = account.clone();
///
/// // UPDATE accounts SET display_name = 'Ada', balance = 100, row_version = 2
/// //  WHERE tenant = 1 AND id = 7 AND row_version = 1
/// account.balance += 100;
/// account.save_checked(&mut conn)?;
/// assert_eq!(account.row_version, 2);
///
/// // A copy read before that save still holds token 1: its save matches no row.
/// stale.name = "Ada L.".into();
/// let error = stale.save_checked(&mut conn).unwrap_err();
/// assert!(error.is_conflict());
/// # Ok(())
/// # }
/// ```
///
/// # Attributes
///
/// Our own keys live in `#[occ(...)]` and are checked strictly: an unknown, misplaced or
/// repeated key is a compile error that says what to write instead. Diesel's keys are
/// read from `#[diesel(...)]` and the ones this derive does not use (`check_for_backend`,
/// `sql_type`, `serialize_as`, ...) are left to Diesel's derives.
///
/// ## Required field attributes
///
/// - `#[occ(version)]`, on exactly one field: the concurrency token. Its type implements
///   `diesel_occ::VersionToken`: `i16`, `i32`, `i64` (wrapping counters),
///   `uuid::Uuid` (PostgreSQL's `uuid`), `diesel_occ::UuidToken` (any backend),
///   `chrono::NaiveDateTime` or `chrono::DateTime<Utc>` (timestamps, see `precision`).
///   The token cannot be part of the primary key, an `Option`, or `#[occ(skip)]`.
///
/// ## Optional container attributes
///
/// - `#[diesel(table_name = path)]`, default: the struct name in snake case plus `s`
///   (`Account` → `accounts`), as in Diesel.
/// - `#[diesel(primary_key(a, b, ...))]`, default: `id`. Composite keys are supported;
///   the key is the tuple of their fields, in this order.
/// - `#[diesel(treat_none_as_null = true)]`, default `false`: as in Diesel's
///   `AsChangeset`, a `None` field leaves its column alone unless this is set, in which
///   case it writes `NULL`.
/// - `#[occ(track)]`, default off: also implement `diesel_occ::Tracking`, for tracked
///   saves that write only the edited columns, three-way diffs and merges. Every written
///   field (neither key, token nor skipped) must implement `PartialEq` and `Clone`; at
///   most 64 of them.
///
/// ## Optional field attributes
///
/// - `#[diesel(column_name = name)]`, default: the field's name. The column of the field
///   in the `table!`.
/// - `#[occ(skip)]` or `#[diesel(skip_update)]`, default off: the column is never written
///   by a checked, tracked or batch save (for a column maintained elsewhere, such as an
///   atomic counter). It is still read.
/// - `#[diesel(treat_none_as_null = bool)]`, default: the container's setting, for this
///   field only.
/// - `#[occ(version, generated)]`, on the token, default off: the database assigns the
///   token (PostgreSQL's `xmin` as `diesel_occ::xmin::XminToken`, or a trigger). A save
///   never writes it and reads the new value back with `RETURNING`, so such an entity is
///   saved on PostgreSQL only: on another backend the save does not compile.
/// - `#[occ(version, precision = N)]`, on a timestamp token, default `0`: the fractional
///   digits of a second the token's column keeps, `0` to `6` (MySQL's `DATETIME` is 0,
///   `DATETIME(3)` 3, PostgreSQL's `timestamp` 6). A fresh token is a whole step of that
///   precision past the old one, so the column stores it exactly. A column that keeps
///   fewer digits than declared could round a fresh token back onto the old one, which
///   `diesel_occ::schema_check::SchemaCheck` reports at start-up.
///
/// # Requirements
///
/// - A struct with named fields and no generic parameters; `#[diesel(embed)]` fields
///   are not supported.
/// - Every field's type fits its column's SQL type, as for Diesel's `AsChangeset`; a
///   mismatch is reported on the field.
/// - Key fields implement `Clone`, `Debug`, `Send` and `Sync` (a conflict carries the
///   key); written fields implement `Clone`.
#[proc_macro_derive(Versioned, attributes(occ, diesel))]
pub fn derive_versioned(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
