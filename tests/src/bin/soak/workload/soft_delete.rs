//! `soft_delete_checked`: a live row is soft-deleted (its label set to `deleted`,
//! its token advanced, its value untouched); a deleted one is restored with
//! `value + 1` by a checked save. A stale soft delete or restore must be refused.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter, blind_save};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;

pub(super) struct SoftDelete;

const DELETED: &str = "deleted";

impl Path for SoftDelete {
    type Conn = Conn;
    type Read = Counter;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(conn, row)
    }

    fn write(&self, conn: &mut Conn, mut read: Counter, ctx: &Ctx<'_>) -> Outcome {
        let from = read.version;
        let restore = read.label.is_some();
        let change = counter::change(&read, from, i32::from(restore));
        let written = match (restore, ctx.sabotage) {
            (false, false) => read.soft_delete_checked(conn, counters::label.eq(Some(DELETED))),
            (false, true) => {
                read.label = Some(DELETED.to_owned());
                blind_save(conn, &mut read)
            }
            (true, sabotage) => {
                read.label = None;
                read.value += 1;
                if sabotage {
                    blind_save(conn, &mut read)
                } else {
                    read.save_checked(conn)
                }
            }
        };
        Outcome::of(written, vec![change])
    }
}
