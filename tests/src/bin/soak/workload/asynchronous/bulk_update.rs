//! `async_bulk_update`: `Counter::bulk_update` (the statement diesel-occ builds, run
//! by diesel-async) of `value + 1` on one row, beside checked saves read before it,
//! as `bulk_update.rs`. The twin's bulk write does not advance the token.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter};
use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::AsyncConn;
use super::adaptor::{AsyncPath, Changes};
use crate::check::counters::Write;

pub(in super::super) struct BulkUpdate;

/// What a bulk operation reads: nothing but the row; a save reads the row.
pub(in super::super) enum Read {
    Bulk(i32),
    Save(Counter),
}

impl AsyncPath for BulkUpdate {
    type Read = Read;

    /// Kind 0 (racer 0 writes first): the bulk write; kind 1: the save.
    async fn read(&self, conn: &mut AsyncConn, row: i32, kind: u32) -> Result<Read, Error> {
        match kind % 2 {
            0 => Ok(Read::Bulk(row)),
            _ => Counter::find(conn, row).await.map(Read::Save),
        }
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        read: Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        match read {
            Read::Bulk(row) => {
                changes.add(Write {
                    row,
                    from: None,
                    increment: 1,
                    tag: None,
                    deletes: false,
                });
                let target = counters::table.filter(counters::id.eq(row));
                let plus_one = counters::value.eq(counters::value + 1);
                let written = if ctx.sabotage {
                    diesel::update(target).set(plus_one).execute(conn).await
                } else {
                    Counter::bulk_update(target, plus_one).execute(conn).await
                };
                changes.outcome(written.map(drop).map_err(Error::from))
            }
            Read::Save(mut row) => {
                changes.add(counter::change(&row, row.version, 1));
                row.value += 1;
                changes.outcome(row.save_checked(conn).await)
            }
        }
    }
}
