//! `async_soft_delete_checked`: a live row soft-deleted, a deleted one restored with
//! `value + 1` by a checked save, as `soft_delete.rs`.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter};
use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, blind_save, save};

pub(in super::super) struct SoftDelete;

const DELETED: &str = "deleted";

impl AsyncPath for SoftDelete {
    type Read = Counter;

    async fn read(&self, conn: &mut AsyncConn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(conn, row).await
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        mut read: Counter,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        let restore = read.label.is_some();
        changes.add(counter::change(&read, read.version, i32::from(restore)));
        let written = match (restore, ctx.sabotage) {
            (false, false) => {
                read.soft_delete_checked(conn, counters::label.eq(Some(DELETED)))
                    .await
            }
            (false, true) => {
                read.label = Some(DELETED.to_owned());
                blind_save(conn, &mut read).await
            }
            (true, sabotage) => {
                read.label = None;
                read.value += 1;
                save(conn, &mut read, sabotage).await
            }
        };
        changes.outcome(written)
    }
}
