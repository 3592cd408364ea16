//! `async_delete_checked` and `async_delete_by_key`: read a row, delete it and insert
//! it again with its value + 1 in one diesel-async transaction, as `delete.rs`.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter};
use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::AsyncConn;
use super::adaptor::{AsyncPath, Changes};

pub(in super::super) enum Delete {
    /// `entity.delete_checked(conn)`.
    Checked,
    /// `Counter::delete_by_key(conn, key, &token)`.
    ByKey,
}

impl AsyncPath for Delete {
    type Read = Counter;

    async fn read(&self, conn: &mut AsyncConn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(conn, row).await
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        read: Counter,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        changes.add(counter::change(&read, read.version, 1));
        let again = Counter {
            value: read.value + 1,
            version: read.version + 1,
            ..read.clone()
        };
        let sabotage = ctx.sabotage;
        let written = conn
            .transaction(async |conn| {
                if sabotage {
                    diesel::delete(counters::table.find(read.id))
                        .execute(conn)
                        .await?;
                } else {
                    match self {
                        Delete::Checked => read.delete_checked(conn).await?,
                        Delete::ByKey => {
                            Counter::delete_by_key(conn, read.id, &read.version).await?
                        }
                    }
                }
                diesel::insert_into(counters::table)
                    .values(&again)
                    .execute(conn)
                    .await?;
                Ok::<_, Error>(())
            })
            .await;
        changes.outcome(written)
    }
}
