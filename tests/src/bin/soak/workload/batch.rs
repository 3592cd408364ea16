//! `save_all_checked`: two rows read, each + 1, saved as one batch (one statement on
//! PostgreSQL, one transaction everywhere).

use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter, blind_save, partner};
use super::runner::{Ctx, Outcome, Path};

pub(super) struct SaveAll;

impl Path for SaveAll {
    type Conn = Conn;
    type Read = Vec<Counter>;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Vec<Counter>, Error> {
        let (a, b) = (row.min(partner(row)), row.max(partner(row)));
        Ok(vec![Counter::find(conn, a)?, Counter::find(conn, b)?])
    }

    fn write(&self, conn: &mut Conn, mut batch: Vec<Counter>, ctx: &Ctx<'_>) -> Outcome {
        let changes = batch
            .iter_mut()
            .map(|row| {
                row.value += 1;
                counter::change(row, row.version, 1)
            })
            .collect();
        let saved = if ctx.sabotage {
            batch.iter_mut().try_for_each(|row| blind_save(conn, row))
        } else {
            batch.save_all_checked(conn)
        };
        Outcome::of(saved, changes)
    }
}
