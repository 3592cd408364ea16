//! The async retry helper for blocking connections wrapped in diesel-async's
//! `SyncConnectionWrapper` (SQLite): each attempt runs a synchronous closure in ONE
//! blocking task, instead of one blocking-pool hop per statement.

use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};

use diesel_async::sync_connection_wrapper::{SpawnBlocking, SyncConnectionWrapper};

use super::AsyncConnectionSource;
use super::retry::{Checkout, drive};
use crate::blocking::LockingConnection;
use crate::error::Error;
use crate::retry::lost_session::connection_lost;
use crate::retry::{Attempt, RetryPolicy};

/// [`retry`](super::retry) for a source of [`SyncConnectionWrapper`] connections
/// (`SyncConnectionWrapper<SqliteConnection>`): every attempt runs the synchronous
/// closure, with all its statements, in one task on Tokio's blocking pool.
///
/// The wrapper runs each statement of an async closure as a blocking task of its own
/// (a hand-off to a blocking thread and back per statement, which on SQLite costs more
/// than the statement); here an attempt costs one hand-off, and none on a
/// `SyncConnectionWrapper<C, BlockInPlace>` ([`BlockInPlace`](super::BlockInPlace)),
/// which runs it on the task's thread. The closure is the
/// blocking helper's ([`blocking::retry`](crate::blocking::retry)): it gets the wrapped
/// `&mut C` and uses the blocking API (`diesel_occ::prelude::*`,
/// [`blocking::AttemptDsl`](crate::blocking::AttemptDsl)); it must be `Send + 'static`
/// (move owned data into it, share the rest with an `Arc`). The policy, the
/// escalation, the transactions and the errors are those of [`retry`](super::retry):
/// an escalated attempt's `BEGIN IMMEDIATE`, the closure and the `COMMIT` or
/// `ROLLBACK` all run in the attempt's blocking task. Backoff sleeps on Tokio's timer,
/// with no thread held.
///
/// # Cancellation
///
/// A blocking task cannot be stopped. When the returned future is dropped while an
/// attempt runs, that attempt runs to its end on its blocking thread (its transaction,
/// if it has one, is committed or rolled back there, never left open), its result is
/// dropped, and no further attempt starts. diesel-async's wrapper makes the drop itself
/// wait for the blocking task (with `tokio::task::block_in_place`, so on a
/// current-thread runtime dropping a running attempt panics: use a multi-threaded
/// runtime where such futures can be dropped, as for any query future of the
/// wrapper's). The attempt's connection is [discarded](AsyncConnectionSource::discard),
/// never returned to the pool. So a dropped future never leaves a connection in an open
/// transaction in the pool, and the write of the attempt it interrupted is committed at
/// most once, whole (the caller cannot know whether it was: a re-read tells).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous;
/// use diesel_occ::retry::RetryPolicy;
/// use diesel_occ::prelude::*; // the blocking API: the closure runs on a blocking thread
///
/// #[derive(Debug, PartialEq)]
/// struct SoldOut;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// # let (url, _keep) = shared_database("asynchronous_retry_in_blocking_task_doc");
/// // A deadpool `Pool<SyncConnectionWrapper<SqliteConnection>>` works the same.
/// let source = || SyncConnectionWrapper::<SqliteConnection>::establish(&url);
/// let policy = RetryPolicy::new().escalate_after(2);
/// let quantity = 4;
///
/// let outcome = asynchronous::retry_in_blocking_task(&source, &policy, move |conn, attempt| {
///     let mut stock: Stock = attempt.find(conn, 1)?;
///     if stock.available < quantity {
///         return Ok(Err(SoldOut));
///     }
///     stock.available -= quantity;
///     stock.save_checked(conn)?;
///     Ok(Ok(stock.available))
/// })
/// .await?;
/// assert_eq!(outcome, Ok(6));
/// # Ok(())
/// # }
/// ```
// Not an `async fn`: the signature promises a `Send` future.
#[allow(clippy::manual_async_fn)]
pub fn retry_in_blocking_task<'s, S, C, B, T, F>(
    source: &'s S,
    policy: &'s RetryPolicy,
    attempt: F,
) -> impl Future<Output = Result<T, Error>> + Send + 's
where
    S: AsyncConnectionSource<Connection = SyncConnectionWrapper<C, B>> + ?Sized,
    C: LockingConnection + 'static,
    B: SpawnBlocking + Send,
    F: FnMut(&mut C, Attempt) -> Result<T, Error> + Send + 'static,
    T: Send + 'static,
{
    async move {
        // The closure travels to each attempt's blocking task and back. It waits in a
        // slot the loop's attempts share, so an attempt's future borrows the slot and
        // not the `FnMut` that `drive` calls.
        let slot = Mutex::new(Some(attempt));
        let slot = &slot;
        drive(policy, move |current| run_attempt(source, current, slot)).await
    }
}

/// One attempt: a checkout, then the closure (in the attempt's transaction when it
/// runs in one) in one blocking task.
async fn run_attempt<S, C, B, T, F>(
    source: &S,
    attempt: Attempt,
    slot: &Mutex<Option<F>>,
) -> Result<T, Error>
where
    S: AsyncConnectionSource<Connection = SyncConnectionWrapper<C, B>> + ?Sized,
    C: LockingConnection + 'static,
    B: SpawnBlocking + Send,
    F: FnMut(&mut C, Attempt) -> Result<T, Error> + Send + 'static,
    T: Send + 'static,
{
    let Some(mut f) = lock(slot).take() else {
        // Only after a blocking task that never returned it (a panic), which ends the
        // loop with a non-retryable error first.
        return Err(diesel::result::Error::BrokenTransactionManager.into());
    };
    // `drive` runs this future inside the attempt's span; the blocking task enters it too.
    let span = tracing::Span::current();
    let pooled = source.checkout_within(attempt.remaining()).await?;
    let mut checkout = Checkout {
        source,
        pooled: None,
        clean: false,
    };
    let conn = checkout.pooled.insert(pooled);
    let ran = conn
        .spawn_blocking(move |conn| {
            let _entered = span.enter();
            let (result, clean) = crate::blocking::attempt_on(conn, attempt, &mut f);
            Ok((f, result, clean))
        })
        .await;
    match ran {
        Ok((f, result, clean)) => {
            *lock(slot) = Some(f);
            checkout.clean = clean && !connection_lost(&result);
            result
        }
        // The task panicked or could not start: the connection's state is unknown, so
        // the checkout discards it.
        Err(error) => Err(error.into()),
    }
}

/// The closure's slot; held only to move the closure in or out, so never poisoned by it.
fn lock<F>(slot: &Mutex<Option<F>>) -> MutexGuard<'_, Option<F>> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}
