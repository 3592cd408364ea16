//! The model's two entities on this backend: an integer token, predicted exactly, and
//! a timestamp token at the default whole-second precision on a whole-second column.

use chrono::{NaiveDateTime, SubsecRound};
use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;

use super::super::model::{Key, Tok};
use super::super::runner::Entity;
use super::schema::{counters, stamped_seconds};

/// An integer-token row (`counters`; `label` stays NULL).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = counters)]
#[occ(track)]
pub(super) struct Counter {
    pub(super) id: i32,
    pub(super) value: i32,
    pub(super) label: Option<String>,
    #[occ(version)]
    pub(super) version: i32,
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

impl Entity for Counter {
    type Token = i32;
    const EXACT: bool = true;

    fn create(key: Key, value: i32) -> Self {
        Counter {
            id: key,
            value,
            label: None,
            version: 0,
        }
    }

    fn seed_token() -> i32 {
        1
    }

    fn with_token(key: Key, value: i32, token: i32) -> Self {
        Counter {
            id: key,
            value,
            label: None,
            version: token,
        }
    }

    fn parts(&self) -> (Key, i32, &i32) {
        (self.id, self.value, &self.version)
    }

    fn set_value(&mut self, value: i32) {
        self.value = value;
    }

    fn exact(token: Tok) -> Option<i32> {
        Some(i32::try_from(token).expect("a small token"))
    }
}

impl Entity for Stamp {
    type Token = NaiveDateTime;
    const EXACT: bool = false;

    fn create(key: Key, value: i32) -> Self {
        Stamp {
            id: key,
            value,
            updated_at: NaiveDateTime::default(),
        }
    }

    fn seed_token() -> NaiveDateTime {
        chrono::Utc::now().naive_utc().trunc_subsecs(0)
    }

    fn with_token(key: Key, value: i32, token: NaiveDateTime) -> Self {
        Stamp {
            id: key,
            value,
            updated_at: token,
        }
    }

    fn parts(&self) -> (Key, i32, &NaiveDateTime) {
        (self.id, self.value, &self.updated_at)
    }

    fn set_value(&mut self, value: i32) {
        self.value = value;
    }

    fn exact(_: Tok) -> Option<NaiveDateTime> {
        None
    }
}
