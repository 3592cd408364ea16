//! [`Race::run_asynchronous`]: the writers as futures, polled together by one future.

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::Poll;

use super::{Phase, Race, RaceReport, WriterError, panic_message};

impl Race {
    /// Runs the race as futures: every writer's `read(i)` runs concurrently; when all
    /// of them have finished (the barrier), every writer's `write(i, state)` runs
    /// concurrently (or one at a time with [`Race::in_order`]). Resolves when every
    /// writer has finished, with the outcomes in writer order.
    ///
    /// The writers are polled by the returned future itself, on whatever runtime
    /// awaits it: nothing is spawned, so `read` and `write` may borrow from the test
    /// and need not be `Send` or `'static`. Each writer should use its own connection
    /// (diesel-async's connections do their I/O without blocking the thread; a writer
    /// that blocks the thread holds up the others). `read` and `write` are async
    /// closures, or closures returning futures.
    ///
    /// No panic reaches the caller: see the [module documentation](super#panics).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_async::AsyncConnection;
    /// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
    /// use diesel_occ::asynchronous::prelude::*;
    /// use diesel_occ::testing::Race;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (url, _dir) = concert_database();
    /// type Conn = SyncConnectionWrapper<SqliteConnection>;
    /// let report = Race::new(2)
    ///     .run_asynchronous(
    ///         async |_| {
    ///             let mut conn = Conn::establish(&url).await.expect("connect");
    ///             # busy_timeout(&mut conn).await;
    ///             let concert = Concert::find(&mut conn, 1).await.expect("the concert");
    ///             (conn, concert)
    ///         },
    ///         async |_, (mut conn, mut concert): (Conn, Concert)| {
    ///             concert.seats_left -= 1;
    ///             concert.save_checked(&mut conn).await.map(|()| concert)
    ///         },
    ///     )
    ///     .await;
    /// assert_eq!(report.winners().count(), 1, "{report:?}");
    /// assert_eq!(report.conflicts().count(), 1, "{report:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_asynchronous<S, T, R, W>(&self, read: R, write: W) -> RaceReport<T>
    where
        R: AsyncFn(usize) -> S,
        W: AsyncFn(usize, S) -> T,
    {
        let reads = join_caught((0..self.writers).map(|writer| start(|| read(writer)))).await;
        if let Some(by) = reads.iter().position(Result::is_err) {
            // A writer panicked while reading: the barrier never opens.
            let outcomes = reads
                .into_iter()
                .enumerate()
                .map(|(writer, read)| match read {
                    Ok(_) => Err(WriterError::Abandoned { writer, by }),
                    Err(message) => Err(WriterError::Panicked {
                        writer,
                        phase: Phase::Read,
                        message,
                    }),
                });
            return RaceReport {
                outcomes: outcomes.collect(),
            };
        }
        let states = reads.into_iter().flatten().enumerate();
        let written = if self.in_order {
            let mut written = Vec::with_capacity(self.writers);
            for (writer, state) in states {
                let started = start(|| write(writer, state));
                written.extend(join_caught([started]).await);
            }
            written
        } else {
            join_caught(states.map(|(writer, state)| start(|| write(writer, state)))).await
        };
        let outcomes = written.into_iter().enumerate().map(|(writer, written)| {
            written.map_err(|message| WriterError::Panicked {
                writer,
                phase: Phase::Write,
                message,
            })
        });
        RaceReport {
            outcomes: outcomes.collect(),
        }
    }
}

/// Calls a closure that returns a future (which may panic before it returns one).
fn start<F: Future>(call: impl FnOnce() -> F) -> Result<F, String> {
    catch_unwind(AssertUnwindSafe(call)).map_err(|payload| panic_message(&*payload))
}

/// A future being polled, or what it ended with.
enum Slot<F: Future> {
    Running(Pin<Box<F>>),
    Done(Result<F::Output, String>),
}

/// Polls every future until all have finished, catching their panics; the outputs in
/// the futures' order.
async fn join_caught<F: Future>(
    futures: impl IntoIterator<Item = Result<F, String>>,
) -> Vec<Result<F::Output, String>> {
    let mut slots: Vec<Slot<F>> = futures
        .into_iter()
        .map(|future| match future {
            Ok(future) => Slot::Running(Box::pin(future)),
            Err(message) => Slot::Done(Err(message)),
        })
        .collect();
    poll_fn(|cx| {
        let mut running = false;
        for slot in &mut slots {
            let Slot::Running(future) = slot else {
                continue;
            };
            match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                Ok(Poll::Pending) => running = true,
                Ok(Poll::Ready(output)) => *slot = Slot::Done(Ok(output)),
                Err(payload) => *slot = Slot::Done(Err(panic_message(&*payload))),
            }
        }
        if running {
            return Poll::Pending;
        }
        let outputs = std::mem::take(&mut slots)
            .into_iter()
            .filter_map(|slot| match slot {
                Slot::Done(output) => Some(output),
                Slot::Running(_) => None, // none is left: `running` is false
            });
        Poll::Ready(outputs.collect())
    })
    .await
}
