//! The models of the scenarios, as a Diesel user writes them, shared by both flavours
//! of `scenarios.rs`.

use diesel::prelude::{AsChangeset, Insertable, Queryable, Selectable};
use diesel_occ::{ChangesetColumns, UuidToken, Versioned};

use super::schema;
use super::schema::counters;

/// The entity: Diesel's derives beside `Versioned`.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = counters)]
pub(super) struct Counter {
    pub(super) id: i32,
    pub(super) value: i32,
    pub(super) label: Option<String>,
    #[occ(version)]
    pub(super) version: i32,
}

/// A new row without its token: `insert_checked_from` adds the initial one.
#[derive(Debug, Insertable)]
#[diesel(table_name = counters)]
pub(super) struct NewCounter<'a> {
    pub(super) id: i32,
    pub(super) value: i32,
    pub(super) label: Option<&'a str>,
}

/// A PATCH form: `None` leaves the column alone (Diesel's default).
#[derive(Debug, Default, AsChangeset, ChangesetColumns)]
#[diesel(table_name = counters)]
pub(super) struct CounterPatch {
    pub(super) value: Option<i32>,
    pub(super) label: Option<Option<String>>,
}

/// A PUT form: `None` writes NULL.
#[derive(Debug, AsChangeset, ChangesetColumns)]
#[diesel(table_name = counters, treat_none_as_null = true)]
pub(super) struct CounterPut {
    pub(super) value: i32,
    pub(super) label: Option<String>,
}

/// A uuid-token entity, for the initial token of another kind.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
pub(super) struct Stock {
    pub(super) id: i32,
    pub(super) available: i32,
    #[occ(version)]
    pub(super) version: UuidToken,
}

pub(super) fn counter(id: i32, value: i32) -> Counter {
    Counter {
        id,
        value,
        label: None,
        version: 0,
    }
}

pub(super) use diesel_occ_tests::expect_conflict;
