//! `async_upsert`: the twin of `upsert.rs` on a diesel-async connection.

use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter, NewCounter};
use super::super::runner::{Ctx, Outcome};
use super::super::upsert::{Kind, next};
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, blind_save};

pub(in super::super) struct Upsert;

impl AsyncPath for Upsert {
    type Read = (Counter, Kind);

    async fn read(&self, conn: &mut AsyncConn, row: i32, kind: u32) -> Result<Self::Read, Error> {
        Ok((Counter::find(conn, row).await?, Kind::of(kind)))
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        (read, kind): Self::Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        changes.add(counter::change(&read, read.version, 1));
        let mut row = next(&read);
        let written = if ctx.sabotage {
            blind_save(conn, &mut row).await
        } else {
            match kind {
                Kind::Update => row
                    .upsert_checked(conn, Some(&read.version))
                    .await
                    .map(drop),
                Kind::Create => row.upsert_checked(conn, None).await.map(drop),
                Kind::Insert => row.insert_checked(conn).await.map(drop),
                Kind::InsertFrom => Counter::insert_checked_from(conn, NewCounter::of(&row))
                    .await
                    .map(drop),
            }
        };
        changes.outcome(written)
    }
}
