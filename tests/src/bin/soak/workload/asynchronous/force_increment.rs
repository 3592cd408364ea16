//! `async_force_increment`: in one diesel-async transaction the root's token is
//! advanced (checked), then the child is written from the value read with the root,
//! as `force_increment.rs`. The twin moves the root's token without the check.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter, child};
use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::AsyncConn;
use super::adaptor::{AsyncPath, Changes};
use crate::check::counters::Write;

pub(in super::super) struct ForceIncrement;

impl AsyncPath for ForceIncrement {
    /// The root, and the child's value as read with it.
    type Read = (Counter, i32);

    async fn read(&self, conn: &mut AsyncConn, row: i32, _: u32) -> Result<Self::Read, Error> {
        let root = Counter::find(conn, row).await?;
        let value = counters::table
            .find(child(row))
            .select(counters::value)
            .first(conn)
            .await?;
        Ok((root, value))
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        (mut root, value): Self::Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        changes.add(counter::change(&root, root.version, 0));
        changes.add(Write {
            row: child(root.id),
            from: None,
            increment: 1,
            tag: None,
            deletes: false,
        });
        let sabotage = ctx.sabotage;
        let written = conn
            .transaction(async |conn| {
                if sabotage {
                    diesel::update(counters::table.find(root.id))
                        .set(counters::version.eq(root.version + 1))
                        .execute(conn)
                        .await?;
                } else {
                    root.force_increment(conn).await?;
                }
                diesel::update(counters::table.find(child(root.id)))
                    .set(counters::value.eq(value + 1))
                    .execute(conn)
                    .await?;
                Ok::<_, Error>(())
            })
            .await;
        changes.outcome(written)
    }
}
