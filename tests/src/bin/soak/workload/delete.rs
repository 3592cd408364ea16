//! `delete_checked` and `delete_by_key`: read a row, delete it, and insert it again
//! with its value + 1, in one transaction (so the row is never missing for long and
//! the counter carries every acknowledged change).

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;

pub(super) enum Delete {
    /// `entity.delete_checked(conn)`.
    Checked,
    /// `Counter::delete_by_key(conn, key, &token)`.
    ByKey,
}

impl Path for Delete {
    type Conn = Conn;
    type Read = Counter;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(conn, row)
    }

    fn write(&self, conn: &mut Conn, read: Counter, ctx: &Ctx<'_>) -> Outcome {
        let change = counter::change(&read, read.version, 1);
        let again = Counter {
            value: read.value + 1,
            version: read.version + 1,
            ..read.clone()
        };
        let written = conn.transaction(|conn| {
            if ctx.sabotage {
                diesel::delete(counters::table.find(read.id)).execute(conn)?;
            } else {
                match self {
                    Delete::Checked => read.delete_checked(conn)?,
                    Delete::ByKey => Counter::delete_by_key(conn, read.id, &read.version)?,
                }
            }
            diesel::insert_into(counters::table)
                .values(&again)
                .execute(conn)?;
            Ok::<_, Error>(())
        });
        Outcome::of(written, vec![change])
    }
}
