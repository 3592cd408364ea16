//! The entities of the bypass guard scenarios, shared by both flavours of
//! `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Dialect;
use diesel_occ::{UuidToken, Versioned};
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

pub(super) use diesel_occ_tests::expect_conflict;
