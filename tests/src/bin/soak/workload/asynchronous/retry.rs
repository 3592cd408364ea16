//! `async_retry_escalated` and `async_retry_with_standby`: the async retry helpers, as
//! `retry.rs` drives the blocking ones (each attempt a new connection, the first
//! attempt saving what the caller read before, later ones re-reading; the twins save
//! without the token check). The change is recorded without the token it was read at,
//! before the helper starts: which attempt's read a dropped future's save came from is
//! not known.

use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::asynchronous::{retry, retry_with_standby};
use diesel_occ_tests::connect_async;

use super::super::combiner::{policy, settle};
use super::super::counter::Counter;
use super::super::runner::{Ctx, Outcome};
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, save};
use crate::check::counters::Write;
use crate::counters::bump;

/// A source that opens a new async connection to `url` for every attempt.
fn source(
    url: &str,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = diesel::ConnectionResult<AsyncConn>> + Send>>
+ Sync {
    let url = url.to_owned();
    move || {
        let url = url.clone();
        Box::pin(async move { connect_async::<AsyncConn>(&url).await })
    }
}

/// `asynchronous::retry`, escalated from the first attempt or after one conflict.
pub(in super::super) struct Escalated;

impl AsyncPath for Escalated {
    /// The row as read before the operation, and after how many conflicts it escalates.
    type Read = (Counter, u32);

    async fn read(&self, conn: &mut AsyncConn, row: i32, kind: u32) -> Result<Self::Read, Error> {
        Ok((Counter::find(conn, row).await?, kind % 2))
    }

    async fn write(
        &self,
        _: &mut AsyncConn,
        (read, after): Self::Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        let change = plus_one(&read);
        changes.add(change);
        let (sabotage, counters) = (ctx.sabotage, ctx.counters);
        let source = source(ctx.url);
        let policy = policy().escalate_after(after);
        let result = retry(&source, &policy, async |conn, attempt| {
            let mut row = if attempt.is_first() {
                read.clone()
            } else {
                bump(&counters.retries);
                attempt.find(conn, read.id).await?
            };
            row.value += 1;
            save(conn, &mut row, sabotage).await
        })
        .await;
        settle(result, change)
    }
}

/// `asynchronous::retry_with_standby`.
pub(in super::super) struct WithStandby;

impl AsyncPath for WithStandby {
    /// The row as read from the standby before the operation.
    type Read = Counter;

    fn connects_to<'a>(&self, ctx: &Ctx<'a>) -> &'a str {
        ctx.standby_url
    }

    async fn read(&self, standby: &mut AsyncConn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(standby, row).await
    }

    async fn write(
        &self,
        _: &mut AsyncConn,
        read: Counter,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        let change = plus_one(&read);
        changes.add(change);
        let (sabotage, counters) = (ctx.sabotage, ctx.counters);
        let (primary, standby) = (source(ctx.url), source(ctx.standby_url));
        let policy = policy();
        let result = retry_with_standby(&primary, &standby, &policy, async |conns, attempt| {
            let mut row = if attempt.is_first() {
                read.clone()
            } else {
                bump(&counters.retries);
                attempt.find(conns.read().await?, read.id).await?
            };
            row.value += 1;
            save(conns.write().await?, &mut row, sabotage).await
        })
        .await;
        settle(result, change)
    }
}

/// The operation's +1 on `row`, whichever attempt makes it.
fn plus_one(row: &Counter) -> Write {
    Write {
        row: row.id,
        from: None,
        increment: 1,
        tag: None,
        deletes: false,
    }
}
