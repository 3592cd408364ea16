//! `save_checked` and `save_checked_where`: read a row, add 1, save.

use diesel::prelude::*;
use diesel_occ::{CheckedDsl, EntityDsl, Error};

use super::Conn;
use super::counter::{self, Counter, blind_save};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;

/// `save_checked`.
pub(super) struct Plain;

/// `save_checked_where` with a predicate that holds (`value >= 0`): the token still
/// decides.
pub(super) struct Where;

impl Path for Plain {
    type Conn = Conn;
    type Read = Counter;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(conn, row)
    }

    fn write(&self, conn: &mut Conn, mut read: Counter, ctx: &Ctx<'_>) -> Outcome {
        let from = read.version;
        read.value += 1;
        let saved = if ctx.sabotage {
            blind_save(conn, &mut read)
        } else {
            CheckedDsl::save_checked(&mut read, conn)
        };
        Outcome::of(saved, vec![counter::change(&read, from, 1)])
    }
}

impl Path for Where {
    type Conn = Conn;
    type Read = Counter;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(conn, row)
    }

    fn write(&self, conn: &mut Conn, mut read: Counter, ctx: &Ctx<'_>) -> Outcome {
        let from = read.version;
        read.value += 1;
        let saved = if ctx.sabotage {
            blind_save(conn, &mut read)
        } else {
            read.save_checked_where(conn, counters::value.ge(0))
        };
        Outcome::of(saved, vec![counter::change(&read, from, 1)])
    }
}
