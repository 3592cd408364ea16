//! The entities of the bypass guard scenarios, shared by both flavours of
//! `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Dialect;
use diesel_occ::{ConcurrencyConflict, Error, UuidToken, Versioned};
use diesel_occ_tests::AsyncTestConnection;

use super::super::dialect;
use super::{AsyncConn, schema};

pub(super) use diesel_occ_tests::entities::{Account, Stamped};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::tickets)]
pub(super) struct Ticket {
    pub(super) id: i32,
    pub(super) seat: String,
    #[occ(version)]
    pub(super) version: UuidToken,
}

pub(super) fn guard_dialect() -> Dialect {
    dialect(AsyncConn::BACKEND)
}

pub(super) fn expect_conflict<T: std::fmt::Debug>(result: Result<T, Error>) -> ConcurrencyConflict {
    match result {
        Err(Error::Conflict(conflict)) => conflict,
        other => panic!("expected a concurrency conflict, got {other:?}"),
    }
}
