//! The async [`transaction`] that restores tokens on rollback, and [`OpenTransaction`], which marks
//! a connection broken when a transaction the library opened is abandoned.

use std::future::Future;

use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, TransactionManager};

use super::usable;
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
}

impl<'c, Conn: AsyncConnection> OpenTransaction<'c, Conn> {
    /// `BEGIN`, or a savepoint inside the caller's transaction.
    pub(crate) async fn begin(conn: &'c mut Conn) -> Result<Self, DieselError> {
        let mut open = OpenTransaction { conn, open: true };
        match Conn::TransactionManager::begin_transaction(open.conn).await {
            Ok(()) => Ok(open),
            Err(error) => {
                open.open = false;
                Err(error)
            }
        }
    }

    pub(crate) fn conn(&mut self) -> &mut Conn {
        self.conn
    }

    pub(crate) async fn commit(&mut self) -> Result<(), DieselError> {
        let outcome = Conn::TransactionManager::commit_transaction(self.conn).await;
        // Ended either way: a failed commit is rolled back or marked by diesel-async.
        self.open = false;
        outcome
    }

    pub(crate) async fn rollback(&mut self) -> Result<(), DieselError> {
        let outcome = Conn::TransactionManager::rollback_transaction(self.conn).await;
        self.open = false;
        outcome
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
/// whatever the closure borrows. A `transaction` inside another's closure, on the
/// connection it is given, is a savepoint: it rolls back alone, restoring only its own
/// entities.
///
/// Dropping the future before it ends restores the tokens too, and marks the
/// connection broken while its transaction is open (as a dropped
/// [`save_all_checked`](super::BatchDsl::save_all_checked) does): later checked writes
/// and transactions on it fail with [`Error::Database`](crate::Error::Database)
/// instead of writing into a transaction that will never commit.
///
/// ```
/// # include!("../retry/doctest_setup.rs");
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
        match call(f, open.conn(), &mut restoring.entities).await {
            Ok(value) => {
                open.commit().await?;
                restoring.keep();
                Ok(value)
            }
            Err(error) => match open.rollback().await {
                // Broken already: the caller's error says more.
                Ok(()) | Err(DieselError::BrokenTransactionManager) => Err(error),
                Err(rollback) => Err(rollback.into()),
            },
        }
    }
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
