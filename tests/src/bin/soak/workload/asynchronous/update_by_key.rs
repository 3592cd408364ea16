//! `async_update_by_key`: `+1` sent with the token read earlier, without loading the
//! row again, as `update_by_key.rs`.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter, ValueForm};
use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::AsyncConn;
use super::adaptor::{AsyncPath, Changes};

pub(in super::super) struct UpdateByKey;

impl AsyncPath for UpdateByKey {
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
        let value = counters::value.eq(read.value + 1);
        let written = if ctx.sabotage {
            diesel::update(counters::table.find(read.id))
                .set((value, counters::version.eq(read.version + 1)))
                .execute(conn)
                .await
                .map(drop)
                .map_err(Error::from)
        } else if read.value % 2 == 1 {
            let form = ValueForm {
                value: Some(read.value + 1),
            };
            Counter::update_by_key(conn, read.id, &read.version, &form)
                .await
                .map(drop)
        } else {
            Counter::update_by_key(conn, read.id, &read.version, value)
                .await
                .map(drop)
        };
        changes.outcome(written)
    }
}
