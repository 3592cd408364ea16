//! Writes that carry their own guard: a checked save with an extra predicate, and the
//! update and delete by key and a client's token that never load the row.
//!

use diesel_occ::{ConflictState, Error};
use diesel_occ_tests::entities::Counter;

fn state(error: &Error) -> &ConflictState {
    error.as_conflict().expect("a concurrency conflict").state()
}

on_every_backend!(scenarios);
