//! The entities of the bulk scenarios, shared by both flavours of `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::UuidToken;
use diesel_occ::Versioned;

use super::schema;

pub(super) use diesel_occ_tests::entities::Account;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::small_counters)]
pub(super) struct Small {
    pub(super) id: i32,
    pub(super) value: i32,
    #[occ(version)]
    pub(super) version: i16,
}

pub(super) use diesel_occ_tests::entities::Counter as Medium;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::big_counters)]
pub(super) struct Big {
    pub(super) id: i32,
    pub(super) value: i32,
    #[occ(version)]
    pub(super) version: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::tickets)]
pub(super) struct Ticket {
    pub(super) id: i32,
    pub(super) seat: String,
    #[occ(version)]
    pub(super) version: UuidToken,
}
