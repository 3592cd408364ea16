//! `upsert`: `upsert_checked` of a row that exists, with the token read earlier (an
//! update: `+1`), and the writes that must never touch an existing row: an upsert that
//! expects no row and `insert_checked` / `insert_checked_from` of a taken key, each
//! refused. The twin writes all four as an unconditional upsert does to an existing
//! row: it overwrites it with the value read `+1` and the next token.

use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter, NewCounter};
use super::runner::{Ctx, Outcome, Path};

pub(super) struct Upsert;

/// What a write does with the row it read.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// `upsert_checked(Some(token read))`: updates.
    Update,
    /// `upsert_checked(None)`: the row exists, so it is refused.
    Create,
    /// `insert_checked`: the key is taken, so it is refused.
    Insert,
    /// `insert_checked_from` an `Insertable` struct: the key is taken, so it is refused.
    InsertFrom,
}

impl Kind {
    pub(super) fn of(kind: u32) -> Kind {
        match kind % 5 {
            0 | 1 => Kind::Update,
            2 => Kind::Create,
            3 => Kind::Insert,
            _ => Kind::InsertFrom,
        }
    }
}

/// The row a write stores: the one it read, `+1`.
pub(super) fn next(read: &Counter) -> Counter {
    Counter {
        value: read.value + 1,
        ..read.clone()
    }
}

impl Path for Upsert {
    type Conn = Conn;
    type Read = (Counter, Kind);

    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<(Counter, Kind), Error> {
        Ok((Counter::find(conn, row)?, Kind::of(kind)))
    }

    fn write(&self, conn: &mut Conn, (read, kind): (Counter, Kind), ctx: &Ctx<'_>) -> Outcome {
        let change = counter::change(&read, read.version, 1);
        let mut row = next(&read);
        let written = if ctx.sabotage {
            counter::blind_save(conn, &mut row)
        } else {
            match kind {
                Kind::Update => row.upsert_checked(conn, Some(&read.version)).map(drop),
                Kind::Create => row.upsert_checked(conn, None).map(drop),
                Kind::Insert => row.insert_checked(conn).map(drop),
                Kind::InsertFrom => {
                    Counter::insert_checked_from(conn, NewCounter::of(&row)).map(drop)
                }
            }
        };
        Outcome::of(written, vec![change])
    }
}
