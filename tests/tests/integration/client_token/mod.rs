//! Writes that carry their own guard: a checked save with an extra predicate, and the
//! update and delete by key and a client's token that never load the row.
//!

use diesel::prelude::*;
use diesel_occ::{ConflictState, Error};

use diesel_occ_tests::schema::pg::counters;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, diesel_occ::Versioned)]
#[diesel(table_name = counters)]
struct Counter {
    id: i32,
    value: i32,
    label: Option<String>,
    #[occ(version)]
    version: i32,
}

/// A counter row at version 1.
fn counter(id: i32, value: i32) -> Counter {
    Counter {
        id,
        value,
        label: None,
        version: 1,
    }
}

fn state(error: &Error) -> &ConflictState {
    error.as_conflict().expect("a concurrency conflict").state()
}

on_every_backend!(scenarios);
