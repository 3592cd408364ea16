//! `update_by_key`: a client that read a row's value and token earlier sends `+1`
//! with that token, without loading the row again: as a `column.eq(value)` changeset
//! or, for a row holding an odd value, as a derived form.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter, ValueForm};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;

pub(super) struct UpdateByKey;

impl Path for UpdateByKey {
    type Conn = Conn;
    type Read = Counter;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(conn, row)
    }

    fn write(&self, conn: &mut Conn, read: Counter, ctx: &Ctx<'_>) -> Outcome {
        let change = counter::change(&read, read.version, 1);
        let value = counters::value.eq(read.value + 1);
        let written = if ctx.sabotage {
            diesel::update(counters::table.find(read.id))
                .set((value, counters::version.eq(read.version + 1)))
                .execute(conn)
                .map(drop)
                .map_err(Error::from)
        } else if read.value % 2 == 1 {
            let form = ValueForm {
                value: Some(read.value + 1),
            };
            Counter::update_by_key(conn, read.id, &read.version, &form).map(drop)
        } else {
            Counter::update_by_key(conn, read.id, &read.version, value).map(drop)
        };
        Outcome::of(written, vec![change])
    }
}
