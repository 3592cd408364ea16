//! The entities of the transaction scenarios, shared by both flavours of `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel::result::Error as DieselError;
use diesel_occ::{Error, UuidToken, Versioned};

use super::schema;

pub(super) use diesel_occ_tests::entities::{Counter, Stamped};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::small_counters)]
pub(super) struct SmallCounter {
    pub(super) id: i32,
    pub(super) value: i32,
    #[occ(version)]
    pub(super) version: i16,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::big_counters)]
pub(super) struct BigCounter {
    pub(super) id: i32,
    pub(super) value: i32,
    #[occ(version)]
    pub(super) version: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
pub(super) struct Stock {
    pub(super) id: i32,
    pub(super) available: i32,
    #[occ(version)]
    pub(super) version: UuidToken,
}

pub(super) fn rollback() -> Error {
    DieselError::RollbackTransaction.into()
}

/// Seeds counters `(id, version)` with value 0.
pub(super) fn counter(id: i32, version: i32) -> Counter {
    let mut row = Counter::new(id, 0);
    row.version = version;
    row
}
