//! `bulk_update`: `UPDATE counters SET value = value + 1, version = <advanced>` on one
//! row, beside checked saves of `value + 1` read earlier. The bulk write must advance
//! the token, or a save read before it overwrites it; the twin's bulk write does not.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;
use crate::check::counters::Write;

pub(super) struct BulkUpdate;

/// What a bulk operation reads: nothing but the row; a save reads the row.
pub(super) enum Read {
    Bulk(i32),
    Save(Counter),
}

impl Path for BulkUpdate {
    type Conn = Conn;
    type Read = Read;

    /// Kind 0 (racer 0 writes first): the bulk write; kind 1: the save.
    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<Read, Error> {
        match kind % 2 {
            0 => Ok(Read::Bulk(row)),
            _ => Counter::find(conn, row).map(Read::Save),
        }
    }

    fn write(&self, conn: &mut Conn, read: Read, ctx: &Ctx<'_>) -> Outcome {
        match read {
            Read::Bulk(row) => {
                let target = counters::table.filter(counters::id.eq(row));
                let plus_one = counters::value.eq(counters::value + 1);
                let written = if ctx.sabotage {
                    diesel::update(target).set(plus_one).execute(conn)
                } else {
                    Counter::bulk_update(target, plus_one).execute(conn)
                };
                let change = Write {
                    row,
                    from: None,
                    increment: 1,
                    tag: None,
                    deletes: false,
                };
                Outcome::of(written.map(drop).map_err(Error::from), vec![change])
            }
            Read::Save(mut row) => {
                let change = counter::change(&row, row.version, 1);
                row.value += 1;
                Outcome::of(row.save_checked(conn), vec![change])
            }
        }
    }
}
