//! The async flavour: each thread drives a diesel-async connection on a runtime of its
//! own. `async_save_checked` drops some saves' futures after a random number of polls
//! (the write may or may not have reached the server: an unknown outcome, and the
//! connection is replaced); `async_transaction` rolls some transactions back after
//! reordering their entities and runs them again; `async_combiner` applies `+1`s
//! through `asynchronous::Combiner`. The twins are the blocking ones'.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::asynchronous::{Combiner, RetryPolicy};
use diesel_occ_tests::connect_async;
use tokio::runtime::{Builder, Runtime};

use super::AsyncConn;
use super::combiner::settle;
use super::counter::{self, Counter, partner};
use super::runner::{Ctx, Open, Outcome, Path};
use super::schema::counters;
use crate::check::counters::Write;
use crate::run::bump;

/// An async connection and the runtime its thread drives it on: a multi-thread one
/// (of one worker), since diesel-async's SQLite wrapper blocks in place when a
/// future is dropped.
pub(super) struct Session {
    runtime: Runtime,
    conn: AsyncConn,
}

impl Open for Session {
    fn open(url: &str) -> ConnectionResult<Session> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
        let conn = runtime.block_on(connect_async::<AsyncConn>(url))?;
        Ok(Session { runtime, conn })
    }
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

/// The twins' write, as `counter::blind_save`.
async fn blind_save(conn: &mut AsyncConn, row: &mut Counter) -> Result<(), Error> {
    row.version += 1;
    diesel::update(counters::table.find(row.id))
        .set((
            counters::value.eq(row.value),
            counters::label.eq(&row.label),
            counters::version.eq(row.version),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

async fn save(conn: &mut AsyncConn, row: &mut Counter, sabotage: bool) -> Result<(), Error> {
    if sabotage {
        blind_save(conn, row).await
    } else {
        row.save_checked(conn).await
    }
}

/// `save_checked`, one save in eight dropped after 0 to 3 pending polls.
pub(super) struct Save;

impl Path for Save {
    type Conn = Session;
    /// The row, and after how many pending polls its save is dropped (`None`: never).
    type Read = (Counter, Option<u32>);

    fn read(&self, s: &mut Session, row: i32, kind: u32) -> Result<Self::Read, Error> {
        let read = s.runtime.block_on(Counter::find(&mut s.conn, row))?;
        // The racers (kind 0 and 1) never drop theirs.
        Ok((read, (kind % 8 == 7).then_some(kind / 8 % 4)))
    }

    fn write(&self, s: &mut Session, (mut row, drop_at): Self::Read, ctx: &Ctx<'_>) -> Outcome {
        let change = counter::change(&row, row.version, 1);
        row.value += 1;
        let saving = save(&mut s.conn, &mut row, ctx.sabotage);
        let Some(polls) = drop_at else {
            return Outcome::of(s.runtime.block_on(saving), vec![change]);
        };
        match s.runtime.block_on(drop_after(saving, polls)) {
            Some(saved) => Outcome::of(saved, vec![change]),
            None => {
                bump(&ctx.counters.dropped);
                Outcome::Unknown(vec![change])
            }
        }
    }
}

/// `asynchronous::transaction` of two rows + 1; one in two rolls back after reversing
/// its entities and runs again with them.
pub(super) struct Transaction;

impl Path for Transaction {
    type Conn = Session;
    /// The two rows, and whether the first run rolls back.
    type Read = (Vec<Counter>, bool);

    fn read(&self, s: &mut Session, row: i32, kind: u32) -> Result<Self::Read, Error> {
        let (a, b) = (row.min(partner(row)), row.max(partner(row)));
        let conn = &mut s.conn;
        let rows = s.runtime.block_on(async {
            Ok::<_, Error>(vec![
                Counter::find(conn, a).await?,
                Counter::find(conn, b).await?,
            ])
        })?;
        Ok((rows, kind % 4 >= 2))
    }

    fn write(&self, s: &mut Session, (mut rows, roll_back): Self::Read, ctx: &Ctx<'_>) -> Outcome {
        let changes: Vec<_> = rows
            .iter_mut()
            .map(|row| {
                row.value += 1;
                counter::change(row, row.version, 1)
            })
            .collect();
        let (sabotage, counters) = (ctx.sabotage, ctx.counters);
        let conn = &mut s.conn;
        let saved = s.runtime.block_on(async {
            let first =
                diesel_occ::asynchronous::transaction(&mut *conn, &mut rows, async |conn, rows| {
                    for row in rows.iter_mut() {
                        save(conn, row, sabotage).await?;
                    }
                    if roll_back {
                        bump(&counters.rollbacks);
                        rows.reverse();
                        return Err(Error::from(diesel::result::Error::RollbackTransaction));
                    }
                    Ok(())
                })
                .await;
            if !roll_back {
                return first;
            }
            rows.sort_by_key(|row| row.id);
            diesel_occ::asynchronous::transaction(&mut *conn, &mut rows, async |conn, rows| {
                for row in rows.iter_mut() {
                    save(conn, row, sabotage).await?;
                }
                Ok(())
            })
            .await
        });
        Outcome::of(saved, changes)
    }
}

/// `asynchronous::Combiner`; the twin applies a change twice and counts it once.
#[derive(Default)]
pub(super) struct Combined {
    rows: Combiner<Counter>,
}

impl Path for Combined {
    type Conn = Session;
    type Read = i32;

    fn read(&self, _: &mut Session, row: i32, _: u32) -> Result<i32, Error> {
        Ok(row)
    }

    fn write(&self, s: &mut Session, row: i32, ctx: &Ctx<'_>) -> Outcome {
        let url = ctx.url.to_owned();
        let source = move || {
            let url = url.clone();
            async move { connect_async::<AsyncConn>(&url).await }
        };
        let policy = RetryPolicy::new()
            .max_attempts(8)
            .backoff(Duration::from_millis(1), Duration::from_millis(20))
            .deadline(Duration::from_secs(3));
        let tag = counter::next_tag();
        let change = Write {
            row,
            from: None,
            increment: 1,
            tag: Some(tag),
        };
        let applied = s.runtime.block_on(async {
            let apply = || {
                self.rows
                    .apply(&source, &policy, row, move |c: &mut Counter| {
                        counter::tagged_plus_one(c, tag)
                    })
            };
            let first = apply().await;
            if ctx.sabotage && first.is_ok() {
                return apply().await;
            }
            first
        });
        settle(applied, change)
    }
}
