//! What the blocking and async PostgreSQL replica scenarios share.

// Each flavour uses a part of it.
#![allow(dead_code)]

use diesel::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;
use diesel_occ_tests::schema::pg as schema;

/// The contended row (`counters` row 1).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::counters)]
pub(super) struct Counter {
    pub(super) id: i32,
    pub(super) value: i32,
    pub(super) label: Option<String>,
    #[occ(version)]
    pub(super) version: i32,
}

/// Row 1 as seeded: value 0 at token 1.
pub(super) fn seed_row() -> Counter {
    Counter {
        id: 1,
        value: 0,
        label: None,
        version: 1,
    }
}
