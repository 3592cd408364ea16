//! The async [`transaction`] that restores tokens on rollback, and [`OpenTransaction`], which marks
//! a connection broken when a transaction the library opened is abandoned.

use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::task::Poll;

use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, TransactionManager};

use super::usable;
use crate::aborted::{ABORTED_PROBE, COMMIT_UNLESS_ABORTED, leave_transaction};
use crate::dialect::Dialect;
use crate::restore::{Restore, Restoring};

/// A transaction this library opened on a caller's connection.
///
/// Dropped before [`commit`](Self::commit) or [`rollback`](Self::rollback) ended it (its
/// future was dropped), it marks the connection's transaction manager broken: no
/// statement can run in a destructor to roll back, and a connection left silently in an
/// open transaction would report `Ok` for writes that are never committed. Broken, it
/// refuses every checked write and every diesel-async `transaction`, and a pool closes
/// it, which makes the server roll back.
pub(crate) struct OpenTransaction<'c, Conn: AsyncConnection> {
    conn: &'c mut Conn,
    open: bool,
    /// The connection's transaction depth once this transaction began.
    depth: Option<u32>,
}

impl<'c, Conn: AsyncConnection> OpenTransaction<'c, Conn> {
    /// `BEGIN`, or a savepoint inside the caller's transaction.
    pub(crate) async fn begin(conn: &'c mut Conn) -> Result<Self, DieselError> {
        let mut open = OpenTransaction {
            conn,
            open: true,
            depth: None,
        };
        match Conn::TransactionManager::begin_transaction(open.conn).await {
            Ok(()) => {
                open.depth = open.current_depth();
                Ok(open)
            }
            Err(error) => {
                open.open = false;
                Err(error)
            }
        }
    }

    pub(crate) fn conn(&mut self) -> &mut Conn {
        self.conn
    }

    /// Commits, or fails, rolling back, when the database aborted the transaction (an
    /// error the closure caught, on PostgreSQL): see [`commit`].
    pub(crate) async fn commit(&mut self) -> Result<(), DieselError> {
        let outcome = commit(self.conn).await;
        // Ended either way: a failed commit is rolled back or marked by diesel-async.
        self.open = false;
        outcome
    }

    /// Commits a transaction no error can have aborted unseen, because every statement
    /// in it succeeded or its error was returned: the savepoint of [`Recoverable`], a
    /// batch. One `COMMIT`, as the blocking batch's `Connection::transaction` sends.
    pub(crate) async fn release(&mut self) -> Result<(), DieselError> {
        let outcome = Conn::TransactionManager::commit_transaction(self.conn).await;
        self.open = false;
        outcome
    }

    pub(crate) async fn rollback(&mut self) -> Result<(), DieselError> {
        let outcome = Conn::TransactionManager::rollback_transaction(self.conn).await;
        self.open = false;
        outcome
    }

    /// Ends the transaction a panicking closure abandoned: rolled back when the closure
    /// left the connection at this transaction's depth. A transaction of the closure's
    /// own still open inside it (diesel-async's `transaction` does not end its own on a
    /// panic) cannot be told from this one's savepoints: then, or when the rollback
    /// fails, the connection is marked broken, as when the future is dropped.
    pub(crate) async fn end_abandoned(&mut self) {
        let rolled_back = self.depth.is_some()
            && self.current_depth() == self.depth
            && self.rollback().await.is_ok();
        if !rolled_back {
            self.open = true;
        }
        // Still open: the drop marks the connection broken.
    }

    /// How many transactions (the outermost and its savepoints) are open on the
    /// connection, or `None` when its transaction manager cannot say.
    fn current_depth(&mut self) -> Option<u32> {
        Conn::TransactionManager::transaction_manager_status_mut(self.conn)
            .transaction_depth()
            .ok()
            .map(|depth| depth.map_or(0, |depth| depth.get()))
    }
}

impl<Conn: AsyncConnection> Drop for OpenTransaction<'_, Conn> {
    fn drop(&mut self) {
        if self.open {
            // The statement in flight was dropped before this marker, so the connection
            // is not shared; a panic here would only hide the cancellation.
            let conn = &mut *self.conn;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Conn::TransactionManager::transaction_manager_status_mut(conn).set_in_error();
            }));
        }
    }
}

/// Commits the innermost transaction the library opened on `conn`, or fails, rolling
/// it back, when the database aborted it: on PostgreSQL a `COMMIT` of an aborted
/// transaction answers `ROLLBACK` without an error, so the outermost one commits with
/// `aborted::COMMIT_UNLESS_ABORTED` (one round trip, as before) and a savepoint is
/// released after `aborted::ABORTED_PROBE`. The twin of the blocking `commit`.
pub(crate) async fn commit<Conn: AsyncConnection>(conn: &mut Conn) -> Result<(), DieselError> {
    if !Dialect::errors_abort_transactions::<Conn::Backend>() {
        return Conn::TransactionManager::commit_transaction(conn).await;
    }
    let depth = Conn::TransactionManager::transaction_manager_status_mut(conn).transaction_depth();
    let outermost = matches!(depth, Ok(Some(depth)) if depth.get() == 1);
    let probe = if outermost {
        COMMIT_UNLESS_ABORTED
    } else {
        ABORTED_PROBE
    };
    if let Err(aborted) = conn.batch_execute(probe).await {
        // A failed COMMIT has ended the transaction already: the rollback finds none.
        if Conn::TransactionManager::rollback_transaction(conn)
            .await
            .is_err()
        {
            Conn::TransactionManager::transaction_manager_status_mut(conn).set_in_error();
        }
        return Err(aborted);
    }
    if outermost {
        leave_transaction(Conn::TransactionManager::transaction_manager_status_mut(
            conn,
        ))
    } else {
        Conn::TransactionManager::commit_transaction(conn).await
    }
}

/// A write whose error may be an outcome the caller matches on and carries on from (a
/// taken key), run so that its failure leaves the caller's transaction usable: in a
/// savepoint when a transaction is open on a backend where errors abort transactions
/// (PostgreSQL), else as it is. The twin of the blocking `recoverable`.
pub(crate) enum Recoverable<'c, Conn: AsyncConnection> {
    /// No transaction, or one that a failed statement does not abort.
    Plain(&'c mut Conn),
    /// The savepoint around the write.
    Savepoint(OpenTransaction<'c, Conn>),
}

impl<'c, Conn: AsyncConnection> Recoverable<'c, Conn> {
    pub(crate) async fn begin(conn: &'c mut Conn) -> Result<Self, DieselError> {
        let in_transaction = matches!(
            Conn::TransactionManager::transaction_manager_status_mut(conn).transaction_depth(),
            Ok(Some(_))
        );
        if in_transaction && Dialect::errors_abort_transactions::<Conn::Backend>() {
            Ok(Recoverable::Savepoint(OpenTransaction::begin(conn).await?))
        } else {
            Ok(Recoverable::Plain(conn))
        }
    }

    pub(crate) fn conn(&mut self) -> &mut Conn {
        match self {
            Recoverable::Plain(conn) => conn,
            Recoverable::Savepoint(open) => open.conn(),
        }
    }

    /// Releases the savepoint after `result` succeeded, or rolls back to it.
    pub(crate) async fn end<R>(self, result: Result<R, crate::Error>) -> Result<R, crate::Error> {
        if let Recoverable::Savepoint(mut open) = self {
            match &result {
                Ok(_) => open.release().await?,
                Err(_) => open.rollback().await?,
            }
        }
        result
    }
}

/// The closure of an async [`transaction`]: an async closure taking the connection and
/// the entities, whose future is `Send`. Implemented for every such closure; you never
/// name it.
pub trait TransactionFn<C, E, R>:
    AsyncFnOnce(C, E) -> R + FnOnce(C, E) -> <Self as TransactionFn<C, E, R>>::Fut
{
    /// The closure's future.
    type Fut: Future<Output = R>;
}

impl<F, C, E, Fut, R> TransactionFn<C, E, R> for F
where
    F: AsyncFnOnce(C, E) -> R + FnOnce(C, E) -> Fut,
    Fut: Future<Output = R>,
{
    type Fut = Fut;
}

/// Runs `f` in a transaction and, unless it commits, gives every entity in `entities`
/// back the token it held before: the twin of the blocking
/// [`diesel_occ::transaction`](crate::transaction()), with the same rule.
///
/// **Write versioned entities inside a transaction only through
/// `diesel_occ::asynchronous::transaction`, passing it every entity the transaction
/// writes; after a rollback they hold the tokens they read, so their next save
/// conflicts unless the row is still exactly as they read it.**
///
/// The returned future is `Send`, so it runs inside `tokio::spawn` (an axum handler)
/// whatever the closure borrows.
///
/// **A transaction the database rolled back is never `Ok`**, as with the blocking
/// `transaction`: on PostgreSQL, where any failed statement aborts the transaction and
/// a `COMMIT` then answers `ROLLBACK` without an error, a closure that caught such an
/// error and returned `Ok` gets the error that reports the abort, and the entities get
/// their tokens back. MySQL, MariaDB and SQLite roll back only the failed statement.
/// The library's own outcomes to match on (a conflict, [`Error::UniqueViolation`](crate::Error::UniqueViolation))
/// never abort the transaction: the checked inserts and upserts run in a savepoint on
/// PostgreSQL inside a transaction.
///
/// Inside an enclosing transaction (a `transaction` inside another's closure, on the
/// connection it is given) this one is a savepoint: it rolls back alone, restoring only
/// its own entities, and a later rollback of the enclosing one restores nothing this
/// one kept: make the outermost transaction this one. Without it, after any rollback,
/// discard the entities and read them again.
///
/// A panic inside `f` rolls the transaction back and restores the tokens before it
/// resumes in the caller (whoever polls the future: `catch_unwind` around it, or the
/// `JoinError` of a spawned task), as the blocking `transaction` does: the connection
/// is left outside the transaction and usable, or, if the rollback failed, marked
/// broken as below.
///
/// Dropping the future before it ends restores the tokens too, and marks the
/// connection broken while its transaction is open (as a dropped
/// [`save_all_checked`](super::BatchDsl::save_all_checked) does): later checked writes
/// and transactions on it fail with [`Error::Database`](crate::Error::Database)
/// instead of writing into a transaction that will never commit.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (url, _keep) = shared_database("asynchronous_transaction_doc");
/// let mut conn = SyncConnectionWrapper::<SqliteConnection>::establish(&url).await?;
/// let mut mine = Stock::find(&mut conn, 1).await?;
/// mine.available -= 1;
/// let outcome = diesel_occ::asynchronous::transaction(&mut conn, &mut mine, async |conn, mine| {
///     mine.save_checked(conn).await?;
///     // ... a later step of the transaction fails ...
///     Err::<(), _>(diesel_occ::Error::from(diesel::result::Error::RollbackTransaction))
/// })
/// .await;
/// assert!(outcome.is_err());
/// assert_eq!(mine.version, 1); // the token read, not the rolled-back one
/// # Ok(())
/// # }
/// ```
// Not an `async fn`: the signature promises a `Send` future, checked here once. An
// `async fn`'s future is proven `Send` at each call site instead, where the compiler
// cannot see that the closure's future is `Send` for every lifetime of its arguments
// ("implementation of `AsyncFnOnce` is not general enough" inside `tokio::spawn`, or
// around a nested transaction). `call` does the same for the closure's future.
#[allow(clippy::manual_async_fn)]
pub fn transaction<'a, Conn, E, R, Err, F>(
    conn: &'a mut Conn,
    entities: E,
    f: F,
) -> impl Future<Output = Result<R, Err>> + Send + 'a
where
    Conn: AsyncConnection,
    E: Restore + Send + 'a,
    for<'r> F: AsyncFnOnce(&'r mut Conn, &'r mut E) -> Result<R, Err>
        + TransactionFn<&'r mut Conn, &'r mut E, Result<R, Err>, Fut: Send>
        + Send
        + 'a,
    Err: From<DieselError> + From<crate::Error> + Send + 'a,
    R: Send + 'a,
{
    async move {
        usable(conn)?;
        let mut open = OpenTransaction::begin(conn).await?;
        let mut restoring = Restoring::new(entities);
        // Unwinding would drop `open`, which can only mark the connection broken and
        // leaves the server's transaction (and its locks) open until the connection
        // closes: roll back first, as the blocking `transaction` does.
        let called = catch_panic(call(f, open.conn(), &mut restoring.entities)).await;
        match called {
            Ok(Ok(value)) => {
                open.commit().await?;
                restoring.keep();
                Ok(value)
            }
            Ok(Err(error)) => match open.rollback().await {
                // Broken already: the caller's error says more.
                Ok(()) | Err(DieselError::BrokenTransactionManager) => Err(error),
                Err(rollback) => Err(rollback.into()),
            },
            Err(panic) => {
                open.end_abandoned().await;
                // Unwinding drops `restoring`, which gives the entities their tokens back.
                panic::resume_unwind(panic)
            }
        }
    }
}

/// Polls `future` to its end, or to the panic raised while it was polled.
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

/// Calls the transaction's closure. Its future, held across an await, is named by an
/// opaque type whose `Send` bound holds for every lifetime; as the projection
/// `TransactionFn::Fut` the compiler could not prove it `Send` for the anonymous
/// lifetimes of the transaction's own future ("implementation of `Send` is not general
/// enough").
fn call<'r, Conn, E, R, Err, F>(
    f: F,
    conn: &'r mut Conn,
    entities: &'r mut E,
) -> impl Future<Output = Result<R, Err>> + Send
where
    Conn: AsyncConnection,
    for<'x> F: AsyncFnOnce(&'x mut Conn, &'x mut E) -> Result<R, Err>
        + TransactionFn<&'x mut Conn, &'x mut E, Result<R, Err>, Fut: Send>,
{
    f(conn, entities)
}
