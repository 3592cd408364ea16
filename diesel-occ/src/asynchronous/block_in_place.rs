//! [`BlockInPlace`]: a `SpawnBlocking` for diesel-async's `SyncConnectionWrapper` that
//! runs each blocking call where the task is, instead of on another thread.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll};

use diesel_async::sync_connection_wrapper::SpawnBlocking;
use tokio::task::JoinHandle;

/// What [`SpawnBlocking::spawn_blocking`] returns.
type Spawned<'a, R> =
    Pin<Box<dyn Future<Output = Result<R, Box<dyn StdError + Send + Sync>>> + Send + 'a>>;

/// Runs the blocking calls of a `SyncConnectionWrapper<C, BlockInPlace>` (SQLite) on the
/// task's own thread, with [`tokio::task::block_in_place`], instead of handing each one
/// to a thread of Tokio's blocking pool and waiting to be woken with its result.
///
/// diesel-async's default (`SyncConnectionWrapper<C>`) sends every statement to a
/// blocking thread and back: two thread wake-ups per statement, which cost more than a
/// SQLite statement itself. What this and
/// [`retry_in_blocking_task`](super::retry_in_blocking_task) gain:
/// [`guide::tuning`](crate::guide::tuning). `block_in_place` tells the multi-threaded runtime that this thread blocks for a
/// while: the worker's other tasks move to another thread, so a statement that waits
/// for SQLite's write lock (`busy_timeout`) stalls no other task.
///
/// On a multi-threaded runtime, and outside a runtime (inline), each call runs when its
/// future is first polled and completes within that poll: dropping a query future never
/// leaves a statement running.
///
/// On a current-thread runtime, where `block_in_place` is not available, each call goes
/// to the blocking pool, as with diesel-async's default, so that the runtime's one
/// thread keeps running its other tasks meanwhile. A query future dropped while its
/// call runs there waits, in its drop, until the call has ended: the connection is
/// never still in use by a dropped statement when the next one comes (diesel-async's
/// wrapper panics then), and what the dropped statement wrote is committed or not
/// before the drop returns. That wait blocks the runtime's thread for what is left of
/// the statement, bounded by SQLite's `busy_timeout` when it waits for a lock, so a
/// lock the statement waits for must not be one that only another task of the same
/// runtime can release.
///
/// ```
/// use diesel::sqlite::SqliteConnection;
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::BlockInPlace;
///
/// type Conn = SyncConnectionWrapper<SqliteConnection, BlockInPlace>;
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() -> Result<(), diesel::ConnectionError> {
/// let mut conn = Conn::establish(":memory:").await?;
/// # let _ = &mut conn;
/// // A deadpool `Pool<Conn>` works the same.
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockInPlace;

impl SpawnBlocking for BlockInPlace {
    fn spawn_blocking<'a, R>(&mut self, task: impl FnOnce() -> R + Send + 'static) -> Spawned<'a, R>
    where
        R: Send + 'static,
    {
        Box::pin(async move {
            use tokio::runtime::{Handle, RuntimeFlavor};
            match Handle::try_current().map(|handle| handle.runtime_flavor()) {
                Ok(RuntimeFlavor::CurrentThread) => OnBlockingPool::spawn(task)
                    .await
                    .map_err(|error| Box::new(error) as Box<dyn StdError + Send + Sync>),
                Ok(_) => Ok(tokio::task::block_in_place(task)),
                Err(_) => Ok(task()),
            }
        })
    }

    fn get_runtime() -> Self {
        BlockInPlace
    }
}

/// A call on Tokio's blocking pool whose future, dropped before the call ended, waits
/// for it to end.
///
/// Tokio's `JoinHandle` only detaches the call when dropped, and the call holds the
/// wrapper's connection until it returns: the wrapper's next call would find it shared
/// and panic ("Cannot access shared transaction state").
struct OnBlockingPool<R> {
    handle: JoinHandle<R>,
    ended: Arc<Ended>,
}

impl<R: Send + 'static> OnBlockingPool<R> {
    fn spawn(task: impl FnOnce() -> R + Send + 'static) -> Self {
        let ended = Arc::new(Ended::default());
        let signal = EndSignal(Arc::clone(&ended));
        let handle = tokio::task::spawn_blocking(move || {
            // `task` and what it holds (the connection) are gone when it returns; the
            // signal goes after them, and also when the runtime drops the call unrun.
            let signal = signal;
            let result = task();
            drop(signal);
            result
        });
        OnBlockingPool { handle, ended }
    }
}

impl<R> Future for OnBlockingPool<R> {
    type Output = Result<R, tokio::task::JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.handle).poll(cx)
    }
}

impl<R> Drop for OnBlockingPool<R> {
    fn drop(&mut self) {
        self.ended.wait();
    }
}

/// Whether a call on the blocking pool has ended, and a way to wait for it.
#[derive(Default)]
struct Ended {
    ended: Mutex<bool>,
    changed: Condvar,
}

impl Ended {
    fn wait(&self) {
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        while !*ended {
            ended = self
                .changed
                .wait(ended)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Marks its call ended when dropped: after the call returned, panicked, or was dropped
/// unrun.
struct EndSignal(Arc<Ended>);

impl Drop for EndSignal {
    fn drop(&mut self) {
        *self.0.ended.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.0.changed.notify_all();
    }
}
