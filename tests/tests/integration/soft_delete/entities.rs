//! The entities of the soft-delete scenarios, shared by both flavours of `scenarios.rs`.

use diesel_occ::{ConcurrencyConflict, Error};

pub(super) use diesel_occ_tests::entities::Account;

pub(super) fn expect_conflict<T: std::fmt::Debug>(result: Result<T, Error>) -> ConcurrencyConflict {
    match result {
        Err(Error::Conflict(conflict)) => conflict,
        other => panic!("expected a concurrency conflict, got {other:?}"),
    }
}
