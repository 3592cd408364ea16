//! The entities of the batch scenarios, shared by `blocking.rs` and `asynchronous.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;

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
