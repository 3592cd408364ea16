//! One adaptor from an async write path to the runner's [`Path`]: each async path says
//! only what it reads and writes on an async connection, as its blocking twin does on a
//! blocking one, and [`Async`] drives it on the thread's [`Session`] and injects the
//! async fault the same way for every path: the write's future dropped after 0 to 3
//! pending polls (one operation in eight; never the racers', whose writes must land
//! to make the twins' losses certain). A dropped write may or may not have reached the
//! server: its outcome is unknown and the runner replaces the connection.

use std::future::{Future, poll_fn};
use std::mem;
use std::pin::pin;
use std::task::Poll;

use diesel_occ::Error;

use super::{AsyncConn, Session};
use crate::check::counters::Write;
use crate::counters::bump;

use super::super::runner::{Ctx, Outcome, Path};

/// A write path on an async connection: [`Path`] without the runtime and the fault.
pub(in super::super) trait AsyncPath: Sync {
    /// What the read hands to the write.
    type Read: Send;

    /// As [`Path::connects_to`].
    fn connects_to<'a>(&self, ctx: &Ctx<'a>) -> &'a str {
        ctx.url
    }

    /// As [`Path::read`].
    async fn read(&self, conn: &mut AsyncConn, row: i32, kind: u32) -> Result<Self::Read, Error>;

    /// As [`Path::write`]; records its changes in `changes` before its first statement
    /// (so that a dropped future's are known) and says what the writer was told.
    async fn write(
        &self,
        conn: &mut AsyncConn,
        read: Self::Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome;
}

/// The changes a write makes, recorded before it starts.
#[derive(Default)]
pub(in super::super) struct Changes(Vec<Write>);

impl Changes {
    pub(in super::super) fn add(&mut self, write: Write) {
        self.0.push(write);
    }

    /// The changes recorded so far, for an outcome the write makes itself.
    pub(in super::super) fn take(&mut self) -> Vec<Write> {
        mem::take(&mut self.0)
    }

    /// The outcome of the write that returned `result`, as [`Outcome::of`].
    pub(in super::super) fn outcome(&mut self, result: Result<(), Error>) -> Outcome {
        Outcome::of(result, mem::take(&mut self.0))
    }
}

/// An [`AsyncPath`] as a runner [`Path`].
pub(in super::super) struct Async<P>(pub(in super::super) P);

impl<P: AsyncPath> Path for Async<P> {
    type Conn = Session;
    /// The path's read, and after how many pending polls its write is dropped (`None`:
    /// never).
    type Read = (P::Read, Option<u32>);

    fn connects_to<'a>(&self, ctx: &Ctx<'a>) -> &'a str {
        self.0.connects_to(ctx)
    }

    fn read(&self, s: &mut Session, row: i32, kind: u32) -> Result<Self::Read, Error> {
        let read = s.runtime.block_on(self.0.read(&mut s.conn, row, kind))?;
        Ok((read, drop_at(kind)))
    }

    fn write(&self, s: &mut Session, (read, drop_at): Self::Read, ctx: &Ctx<'_>) -> Outcome {
        let mut changes = Changes::default();
        let writing = self.0.write(&mut s.conn, read, ctx, &mut changes);
        let Some(polls) = drop_at else {
            return s.runtime.block_on(writing);
        };
        match s.runtime.block_on(drop_after(writing, polls)) {
            Some(outcome) => outcome,
            None => {
                bump(&ctx.counters.dropped);
                Outcome::Unknown(changes.0)
            }
        }
    }
}

/// After how many pending polls the write of an operation of `kind` is dropped: one in
/// eight, after 0 to 3. Taken from bits the paths do not pick their operation by (they
/// use the low ones), so that every operation of a path is dropped alike; the racers'
/// kinds (0 and 1) have none of them set.
fn drop_at(kind: u32) -> Option<u32> {
    let bits = kind >> 16;
    (bits % 8 == 7).then_some(bits / 8 % 4)
}

/// Polls `future` to its end, or drops it after `polls` pending polls (`None`).
async fn drop_after<F: Future>(future: F, polls: u32) -> Option<F::Output> {
    let mut future = pin!(future);
    let mut left = polls;
    poll_fn(|cx| match future.as_mut().poll(cx) {
        Poll::Ready(output) => Poll::Ready(Some(output)),
        Poll::Pending if left == 0 => Poll::Ready(None),
        Poll::Pending => {
            left -= 1;
            Poll::Pending
        }
    })
    .await
}
