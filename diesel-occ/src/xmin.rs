//! PostgreSQL's `xmin` as a concurrency token (feature `postgres`): no token column,
//! the database changes it on every write.
//!
//! Every PostgreSQL row carries `xmin`, the id of the transaction that wrote its
//! current version. Declare it in the `table!` (it is a system column: migrations do
//! not create it, and `SELECT *` does not list it, but Diesel selects it by name) with
//! this module's SQL type, and mark the field `#[occ(version, generated)]`:
//!
//! ```
//! use diesel::prelude::*;
//! use diesel_occ::xmin::XminToken;
//!
//! diesel::table! {
//!     documents (id) {
//!         id -> Integer,
//!         body -> Text,
//!         xmin -> diesel_occ::xmin::sql_types::Xid,
//!     }
//! }
//!
//! #[derive(Debug, Clone, Queryable, Selectable, diesel_occ::Versioned)]
//! #[diesel(table_name = documents, check_for_backend(diesel::pg::Pg))]
//! pub struct Document {
//!     pub id: i32,
//!     pub body: String,
//!     #[occ(version, generated)] // read back with RETURNING, never assigned
//!     pub xmin: XminToken,
//! }
//!
//! // Inserts go through a struct without `xmin`:
//! #[derive(Insertable)]
//! #[diesel(table_name = documents)]
//! pub struct NewDocument<'a> {
//!     pub id: i32,
//!     pub body: &'a str,
//! }
//! ```
//!
//! `save_checked` then runs ONE statement,
//! `UPDATE documents SET body = $1 WHERE id = $2 AND xmin = $3 RETURNING xmin`, and the
//! entity takes the `xmin` the database assigned. `delete_checked`, `find_checked`,
//! tracked saves and batch saves work as with any token. Writes that need to assign
//! the token ([`force_increment`](crate::VersionColumnDsl::force_increment),
//! [`soft_delete_checked`](crate::VersionColumnDsl::soft_delete_checked),
//! [`bulk_update`](crate::Versioned::bulk_update)) do not compile for it, and need not
//! exist: any UPDATE, from anyone, gives the row a new `xmin`, so `xmin` is also its
//! own bypass guard (what the `bypass_guard` module, feature `bypass-guard`, installs
//! for other tokens).
//!
//! Caveats: rows written by one transaction share its `xmin`, so a row updated twice
//! in the same transaction keeps the same token (nobody else can write it meanwhile:
//! the transaction holds its row lock). `xmin` is 32 bits and wraps around after about
//! four billion transactions; a token held across a wraparound could, in principle,
//! match again.
//!
//! `#[occ(version, generated)]` also fits a token column that a PostgreSQL trigger
//! maintains. On MySQL/MariaDB, which have no `RETURNING`, and on SQLite, saving an
//! entity with a generated token does not compile: the guarded UPDATE that reads the
//! token back is implemented for PostgreSQL connections only. Let the application
//! assign the token there (an integer or UUID `#[occ(version)]`), and install the
//! bypass guard (feature `bypass-guard`) to cover other writers.
//!
//! A generated token exists only once the database has written the row, so the checked
//! inserts and upserts (`insert_checked`, `upsert_checked`) do not compile for such an
//! entity ([`AssignedToken`](crate::statement::AssignedToken)): insert the row with
//! Diesel's `insert_into`, then read it, token and all, with `find`.

use std::io::Write;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, IsNull, Output, ToSql};

use crate::error::{InvalidToken, InvalidTokenReason};
use crate::token::{TokenValue, VersionToken};

/// PostgreSQL SQL types diesel-occ adds.
pub mod sql_types {
    /// PostgreSQL's `xid`, the type of the `xmin` system column. Declare `xmin` as
    /// `xmin -> diesel_occ::xmin::sql_types::Xid` in `table!`.
    ///
    /// ```
    /// diesel::table! {
    ///     documents (id) {
    ///         id -> Integer,
    ///         xmin -> diesel_occ::xmin::sql_types::Xid,
    ///     }
    /// }
    /// # fn main() {}
    /// ```
    #[derive(
        Debug, Clone, Copy, Default, diesel::sql_types::SqlType, diesel::query_builder::QueryId,
    )]
    #[diesel(postgres_type(oid = 28, array_oid = 1011))]
    pub struct Xid;
}

pub use self::sql_types::Xid;

/// The `xmin` of a PostgreSQL row as a database-generated concurrency token.
///
/// Use it with `#[occ(version, generated)]`: see the [module documentation](self).
/// Its client form (an ETag) is the decimal transaction id.
///
/// ```
/// use diesel_occ::VersionToken;
/// use diesel_occ::xmin::XminToken;
///
/// assert_eq!(XminToken::decode("1234").unwrap(), XminToken(1234));
/// assert_eq!(XminToken(1234).encode(), "1234");
/// assert!(XminToken::decode("0").is_err()); // InvalidTransactionId
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, AsExpression, FromSqlRow)]
#[diesel(sql_type = Xid)]
pub struct XminToken(pub u32);

impl VersionToken for XminToken {
    /// Not meaningful: the database assigns `xmin`. Returns `XminToken(0)`, which no
    /// row holds.
    fn initial() -> Self {
        XminToken(0)
    }

    /// Not meaningful: the database assigns `xmin`; a checked save reads the new one
    /// back with `RETURNING`. Returns `self`.
    fn next_token(&self) -> Self {
        *self
    }

    fn to_value(&self) -> TokenValue {
        TokenValue::Integer(i64::from(self.0))
    }

    fn from_value(value: &TokenValue) -> Option<Self> {
        match value {
            TokenValue::Integer(n) => u32::try_from(*n).ok().map(XminToken),
            // The only variant without the `uuid`, `chrono` and `time` features.
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    fn validate(&self) -> Result<(), InvalidToken> {
        if self.0 == 0 {
            Err(InvalidToken::new(InvalidTokenReason::Malformed))
        } else {
            Ok(())
        }
    }

    fn decode(text: &str) -> Result<Self, InvalidToken> {
        let n = i64::decode(text)?;
        let token = u32::try_from(n)
            .map(XminToken)
            .map_err(|_| InvalidToken::new(InvalidTokenReason::Malformed))?;
        token.validate()?;
        Ok(token)
    }
}

impl ToSql<Xid, Pg> for XminToken {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(&self.0.to_be_bytes())?;
        Ok(IsNull::No)
    }
}

impl FromSql<Xid, Pg> for XminToken {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        let bytes: [u8; 4] = value
            .as_bytes()
            .try_into()
            .map_err(|_| "an xid is 4 bytes")?;
        Ok(XminToken(u32::from_be_bytes(bytes)))
    }
}
