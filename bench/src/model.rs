//! The benchmark's table and entity: one row of stock per hot key.

use diesel::prelude::*;
use diesel_occ::Versioned;

diesel::table! {
    bench_stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

/// A row of stock. The workload reserves one unit: read, check `available > 0`,
/// write `available - 1`.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = bench_stock)]
pub(crate) struct Stock {
    pub(crate) id: i32,
    pub(crate) available: i32,
    #[occ(version)]
    pub(crate) version: i32,
}

/// Starting stock per key: large enough that no run sells out.
pub(crate) const START: i32 = 1_000_000_000;
