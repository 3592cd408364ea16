//! The entities of the soft-delete scenarios, shared by both flavours of `scenarios.rs`.

pub(super) use diesel_occ_tests::entities::Account;
pub(super) use diesel_occ_tests::expect_conflict;
