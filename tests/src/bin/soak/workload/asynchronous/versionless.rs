//! `async_versionless`: tracked saves of an entity without a version column, as
//! `versionless.rs`.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::TrackedDsl;
use diesel_occ::{Error, Tracked};

use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::super::versionless::{Versionless, change};
use super::AsyncConn;
use super::adaptor::{AsyncPath, Changes};

/// `Tracked::save_checked` of `value + 1` on a versionless entity.
pub(in super::super) struct Save;

impl AsyncPath for Save {
    type Read = Tracked<Versionless>;

    async fn read(&self, conn: &mut AsyncConn, row: i32, _: u32) -> Result<Self::Read, Error> {
        use diesel_occ::asynchronous::EntityDsl;
        Versionless::find(conn, row).await.map(Tracked::new)
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        mut read: Tracked<Versionless>,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        read.edit().value += 1;
        changes.add(change(&read));
        let saved = if ctx.sabotage {
            diesel::update(counters::table.find(read.id))
                .set(counters::value.eq(read.value))
                .execute(conn)
                .await
                .map(drop)
                .map_err(Error::from)
        } else {
            TrackedDsl::save_checked(&mut read, conn).await
        };
        changes.outcome(saved)
    }
}
