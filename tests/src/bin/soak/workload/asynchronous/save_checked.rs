//! `async_save_checked` and `async_save_checked_where`: read a row, add 1, save, as
//! `save_checked.rs`.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter};
use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, blind_save, save};

/// `save_checked`.
pub(in super::super) struct Plain;

/// `save_checked_where` with a predicate that holds (`value >= 0`): the token still
/// decides.
pub(in super::super) struct Where;

impl AsyncPath for Plain {
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
        changes.add(counter::change(&read, read.version, 1));
        read.value += 1;
        changes.outcome(save(conn, &mut read, ctx.sabotage).await)
    }
}

impl AsyncPath for Where {
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
        changes.add(counter::change(&read, read.version, 1));
        read.value += 1;
        let saved = if ctx.sabotage {
            blind_save(conn, &mut read).await
        } else {
            read.save_checked_where(conn, counters::value.ge(0)).await
        };
        changes.outcome(saved)
    }
}
