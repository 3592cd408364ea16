//! The entities of the batch scenarios, shared by both flavours of `scenarios.rs`:
//! accounts, and one entity per shape the PostgreSQL `VALUES` statement must bind
//! exactly (UUID and timestamp tokens, a composite key, renamed columns, nullable
//! columns written as `NULL`, an `Option` field skipped when `None`).

use chrono::NaiveDateTime;
use diesel::prelude::{Queryable, Selectable};
use diesel_occ::{UuidToken, Versioned};

use super::schema;

pub(super) use diesel_occ_tests::entities::Account;

/// A UUID token (`uuid` on PostgreSQL, 16 bytes elsewhere).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::tickets)]
pub(super) struct Ticket {
    pub(super) id: i32,
    pub(super) seat: String,
    #[occ(version)]
    pub(super) version: UuidToken,
}

/// A timestamp token compared to the microsecond.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::stamped)]
pub(super) struct Stamp {
    pub(super) id: i32,
    pub(super) value: i32,
    #[occ(version, precision = 6)]
    pub(super) updated_at: NaiveDateTime,
}

/// A composite key.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::order_lines, primary_key(order_id, line_no))]
pub(super) struct OrderLine {
    pub(super) order_id: i32,
    pub(super) line_no: i32,
    pub(super) quantity: i32,
    #[occ(version)]
    pub(super) version: i32,
}

/// Fields named apart from their columns.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::notes, primary_key(note_id))]
pub(super) struct Note {
    #[diesel(column_name = note_id)]
    pub(super) id: i32,
    #[diesel(column_name = note_text)]
    pub(super) body: String,
    #[occ(version)]
    #[diesel(column_name = rev)]
    pub(super) revision: i32,
}

diesel::table! {
    /// The example apps' work items (their migration runs for every test database).
    work_items (id) {
        id -> Integer,
        payload -> Text,
        status -> Text,
        lease_owner -> Nullable<Text>,
        lease_expires_at -> Nullable<BigInt>,
        fence -> BigInt,
        version -> BigInt,
    }
}

/// Nullable columns whose `None` is written as `NULL`: a batch where every row binds
/// `NULL` to a `BIGINT` still has the column's type, and an `i64` token.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = work_items, treat_none_as_null = true)]
pub(super) struct WorkItem {
    pub(super) id: i32,
    pub(super) payload: String,
    pub(super) status: String,
    pub(super) lease_owner: Option<String>,
    pub(super) lease_expires_at: Option<i64>,
    pub(super) fence: i64,
    #[occ(version)]
    pub(super) version: i64,
}

/// An `Option` field whose `None` leaves its column alone, as Diesel's changesets do.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::counters)]
pub(super) struct Counter {
    pub(super) id: i32,
    pub(super) value: i32,
    pub(super) label: Option<String>,
    #[occ(version)]
    pub(super) version: i32,
}
