//! The entities of the soft-delete scenarios, shared by both flavours of `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::{ConcurrencyConflict, Error, Versioned};

use super::schema;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::accounts)]
pub(super) struct Account {
    pub(super) id: i32,
    pub(super) balance: i32,
    pub(super) deleted: bool,
    #[occ(version)]
    pub(super) version: i32,
}

pub(super) fn expect_conflict<T: std::fmt::Debug>(result: Result<T, Error>) -> ConcurrencyConflict {
    match result {
        Err(Error::Conflict(conflict)) => conflict,
        other => panic!("expected a concurrency conflict, got {other:?}"),
    }
}
