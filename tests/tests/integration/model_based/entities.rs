//! The model's two entities on this backend: an integer token, predicted exactly, and
//! a timestamp token at the default whole-second precision on a whole-second column.

use chrono::{NaiveDateTime, SubsecRound};
use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;

use super::super::model::{Key, Tok};
use super::super::runner::Entity;
use super::schema::stamped_seconds;

/// An integer-token row (`counters`; `label` stays NULL), one type on every backend:
/// its [`Entity`] impl is in `runner.rs`.
pub(super) use diesel_occ_tests::entities::Counter;

/// The form of a create request for `counters`: every column but the token, which
/// `insert_checked_from` adds.
#[derive(Insertable)]
#[diesel(table_name = super::schema::counters)]
pub(super) struct NewCounter {
    pub(super) id: i32,
    pub(super) value: i32,
}

/// The form of a create request for `stamped_seconds`.
#[derive(Insertable)]
#[diesel(table_name = stamped_seconds)]
pub(super) struct NewStamp {
    pub(super) id: i32,
    pub(super) value: i32,
}

/// A timestamp-token row at the default precision (whole seconds): PostgreSQL
/// `timestamp(0)`, MariaDB `DATETIME`, SQLite text.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = stamped_seconds)]
#[occ(track)]
pub(super) struct Stamp {
    pub(super) id: i32,
    pub(super) value: i32,
    #[occ(version)]
    pub(super) updated_at: NaiveDateTime,
}

impl Entity for Stamp {
    type Token = NaiveDateTime;
    const EXACT: bool = false;

    fn real_token(_: Tok) -> NaiveDateTime {
        chrono::Utc::now().naive_utc().trunc_subsecs(0)
    }

    fn with_token(id: Key, value: i32, updated_at: NaiveDateTime) -> Self {
        Stamp {
            id,
            value,
            updated_at,
        }
    }

    fn parts(&self) -> (Key, i32, &NaiveDateTime) {
        (self.id, self.value, &self.updated_at)
    }
}
