//! `async_save_all_checked`: two rows read, each + 1, saved as one batch, as
//! `batch.rs`.

use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter, partner};
use super::super::runner::{Ctx, Outcome};
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, blind_save};

pub(in super::super) struct SaveAll;

impl AsyncPath for SaveAll {
    type Read = Vec<Counter>;

    async fn read(&self, conn: &mut AsyncConn, row: i32, _: u32) -> Result<Vec<Counter>, Error> {
        let (a, b) = (row.min(partner(row)), row.max(partner(row)));
        Ok(vec![
            Counter::find(conn, a).await?,
            Counter::find(conn, b).await?,
        ])
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        mut batch: Vec<Counter>,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        for row in &mut batch {
            row.value += 1;
            changes.add(counter::change(row, row.version, 1));
        }
        let saved = if ctx.sabotage {
            blind_saves(conn, &mut batch).await
        } else {
            batch.save_all_checked(conn).await
        };
        changes.outcome(saved)
    }
}

/// The twin: each row written back without its token, one statement each.
async fn blind_saves(conn: &mut AsyncConn, batch: &mut [Counter]) -> Result<(), Error> {
    for row in batch {
        blind_save(conn, row).await?;
    }
    Ok(())
}
