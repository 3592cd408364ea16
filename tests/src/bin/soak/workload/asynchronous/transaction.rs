//! `async_transaction`: `asynchronous::transaction` of two rows + 1, as
//! `transaction.rs`: some transactions roll back (the closure returns an error after
//! reordering its entities) or panic inside the closure after saving (caught here,
//! the connection kept), and are then run again with the same entities on the same
//! connection: the restored tokens must be the ones read, and the connection must be
//! out of the failed transaction.

use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::task::Poll;

use diesel_async::{AsyncConnection, TransactionManager};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter, partner};
use super::super::runner::{Ctx, Outcome};
use super::super::transaction::End;
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, save};
use crate::counters::bump;
use crate::run::INJECTED_PANIC;

pub(in super::super) struct Transaction;

impl AsyncPath for Transaction {
    type Read = (Vec<Counter>, End);

    async fn read(&self, conn: &mut AsyncConn, row: i32, kind: u32) -> Result<Self::Read, Error> {
        let (a, b) = (row.min(partner(row)), row.max(partner(row)));
        let rows = vec![Counter::find(conn, a).await?, Counter::find(conn, b).await?];
        Ok((rows, End::of(kind)))
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        (mut rows, end): Self::Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        for row in &mut rows {
            row.value += 1;
            changes.add(counter::change(row, row.version, 1));
        }
        let (sabotage, counters) = (ctx.sabotage, ctx.counters);
        let first = catch_panic(diesel_occ::asynchronous::transaction(
            &mut *conn,
            &mut rows,
            async |conn, rows| {
                save_all(conn, rows, sabotage).await?;
                match end {
                    End::Commit => Ok(()),
                    End::Rollback => {
                        bump(&counters.rollbacks);
                        rows.reverse();
                        Err(Error::from(diesel::result::Error::RollbackTransaction))
                    }
                    End::Panic => {
                        bump(&counters.panics);
                        panic!("{INJECTED_PANIC}")
                    }
                }
            },
        ))
        .await;
        let saved = match (first, end) {
            (Ok(result), End::Commit) => result,
            // Rolled back: the same entities again, in the order the closure left.
            (Ok(Err(_)) | Err(_), _) => {
                assert_not_left_open(conn);
                rows.sort_by_key(|row| row.id);
                diesel_occ::asynchronous::transaction(&mut *conn, &mut rows, async |conn, rows| {
                    save_all(conn, rows, sabotage).await
                })
                .await
            }
            (Ok(Ok(())), _) => unreachable!("the closure returned an error or panicked"),
        };
        changes.outcome(saved)
    }
}

async fn save_all(conn: &mut AsyncConn, rows: &mut [Counter], sabotage: bool) -> Result<(), Error> {
    for row in rows {
        save(conn, row, sabotage).await?;
    }
    Ok(())
}

/// Polls `future` to its end, catching a panic raised while it is polled: the panic
/// of the closure, which the transaction resumes after ending itself. (Spawning the
/// transaction would catch it at the join, but the task would own the connection and
/// a panicking task drops it.)
async fn catch_panic<F: Future>(future: F) -> Result<F::Output, Box<dyn Any + Send>> {
    let mut future = pin!(future);
    poll_fn(
        |cx| match panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        },
    )
    .await
}

/// A transaction that ended badly must not be left open on the connection without a
/// mark: saves on it would return `Ok` and never commit. (Marked broken, when its
/// rollback failed under a fault, the connection fails loudly instead: the next
/// transaction's outcome is then an error, and the runner replaces the connection.)
fn assert_not_left_open(conn: &mut AsyncConn) {
    let status =
        <AsyncConn as AsyncConnection>::TransactionManager::transaction_manager_status_mut(conn);
    if let Ok(Some(depth)) = status.transaction_depth() {
        panic!("a failed async transaction left its connection {depth} deep in a transaction");
    }
}
