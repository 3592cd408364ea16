//! The benchmark's table and entity: one row of stock per hot key.

use diesel::prelude::*;
use diesel_occ::Versioned;

diesel::table! {
    /// One row of stock per key.
    bench_stock (id) {
        /// The key.
        id -> Integer,
        /// Units left.
        available -> Integer,
        /// The version token.
        version -> Integer,
    }
}

/// A row of stock. The workload reserves one unit: read, check `available > 0`,
/// write `available - 1`.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = bench_stock)]
pub struct Stock {
    /// The key.
    pub id: i32,
    /// Units left.
    pub available: i32,
    /// The version token.
    #[occ(version)]
    pub version: i32,
}

impl Stock {
    /// The reservation's change: one unit less; `false` when none is left.
    pub fn take_one(&mut self) -> bool {
        if self.available <= 0 {
            return false;
        }
        self.available -= 1;
        true
    }
}

/// Starting stock per key: large enough that no run sells out.
pub const START: i32 = 1_000_000_000;
