//! [`transaction`]: a transaction on a blocking connection that gives the entities
//! written inside it their tokens back when it rolls back.

use std::panic::{self, AssertUnwindSafe};

use diesel::connection::{Connection, TransactionManager};
use diesel::result::{Error as DieselError, QueryResult};

use crate::aborted::{ABORTED_PROBE, COMMIT_UNLESS_ABORTED, leave_transaction};
use crate::dialect::Dialect;
use crate::error::Error;
use crate::restore::{Restore, Restoring};

/// Runs `f` in a transaction and, unless it commits, gives every entity in `entities`
/// back the token it held before: the safe way to write checked entities in a
/// transaction.
///
/// **The rule: write versioned entities inside a transaction only through
/// `diesel_occ::transaction`, passing it every entity the transaction writes; after a
/// rollback they hold the tokens they read, so their next save conflicts unless the
/// row is still exactly as they read it.**
///
/// `entities` is a `&mut` to an entity, a [`Tracked`](crate::Tracked) entity, a `Vec` or slice of
/// them, or a tuple of those ([`Restore`]); `f` gets the connection and the entities
/// back. When `f` returns `Ok` and the transaction commits, the entities keep the
/// fresh tokens their saves assigned. When `f` returns `Err`, the commit fails (a
/// serialization failure at `COMMIT`) or `f` panics, the transaction rolls back and
/// each entity's token is restored; its other fields keep their edits. A panic then
/// resumes in the caller; the connection is left outside the transaction (or, if the
/// rollback failed, marked broken so that later writes on it fail). A batch
/// ([`BatchDsl::save_all_checked`](crate::BatchDsl::save_all_checked)) and
/// [`VersionColumnDsl::force_increment`](crate::VersionColumnDsl::force_increment) inside it
/// are covered like single saves.
///
/// **A transaction the database rolled back is never `Ok`.** On PostgreSQL any failed
/// statement aborts the transaction, and a `COMMIT` then answers `ROLLBACK` without an
/// error: when `f` catches such an error and returns `Ok`, this returns the error that
/// reports the abort ("current transaction is aborted"), converted to `Err`, and
/// restores the entities, in the same round trip as the commit. MySQL, MariaDB and
/// SQLite roll back only the failed statement, and the transaction commits. The
/// library's own outcomes to match on, a conflict and a taken key
/// ([`Error::UniqueViolation`]), never abort it on any backend: the checked inserts and
/// upserts run in a savepoint on PostgreSQL inside a transaction, so "insert, or carry
/// on if the key is taken" commits the closure's other writes.
///
/// Inside an enclosing transaction this one is a savepoint, and a later rollback of
/// the enclosing one restores nothing: make the outermost transaction this one.
/// Without it, after any rollback, discard the entities and read them again.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut mine = Stock::find(&mut conn, 1)?;
/// mine.available -= 1;
/// let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
///     mine.save_checked(conn)?;
///     // ... a later step of the transaction fails ...
///     Err::<(), _>(diesel_occ::Error::from(diesel::result::Error::RollbackTransaction))
/// });
/// assert!(outcome.is_err());
/// assert_eq!(mine.version, 1); // the token read, not the rolled-back one
///
/// // Another writer saves; the rolled-back entity now conflicts instead of winning.
/// let mut theirs = Stock::find(&mut conn, 1)?;
/// theirs.available = 0;
/// theirs.save_checked(&mut conn)?;
/// assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
/// # Ok(())
/// # }
/// ```
pub fn transaction<Conn, E, R, Err, F>(conn: &mut Conn, entities: E, f: F) -> Result<R, Err>
where
    Conn: Connection,
    E: Restore,
    F: FnOnce(&mut Conn, &mut E) -> Result<R, Err>,
    Err: From<diesel::result::Error>,
{
    let mut restoring = Restoring::new(entities);
    let outer = depth(conn);
    Conn::TransactionManager::begin_transaction(conn)?;
    // Diesel's `transaction` does not end its transaction when the closure panics.
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(conn, &mut restoring.entities)));
    match outcome {
        Ok(Ok(value)) => {
            commit(conn)?;
            restoring.keep();
            Ok(value)
        }
        Ok(Err(error)) => match Conn::TransactionManager::rollback_transaction(conn) {
            // Broken already: the closure's error says more.
            Ok(()) | Err(DieselError::BrokenTransactionManager) => Err(error),
            Err(rollback) => Err(rollback.into()),
        },
        Err(panic) => {
            end_abandoned(conn, outer);
            // Unwinding drops `restoring`, which gives the entities their tokens back.
            panic::resume_unwind(panic)
        }
    }
}

/// Commits the innermost transaction the library opened on `conn`, or fails, rolling it
/// back, when the database aborted it: see [`COMMIT_UNLESS_ABORTED`].
pub(crate) fn commit<Conn: Connection>(conn: &mut Conn) -> QueryResult<()> {
    if Dialect::errors_abort_transactions::<Conn::Backend>() {
        let probe = match depth(conn) {
            Some(1) => COMMIT_UNLESS_ABORTED,
            _ => ABORTED_PROBE,
        };
        if let Err(aborted) = conn.batch_execute(probe) {
            // A failed COMMIT has ended the transaction already: nothing to roll back.
            if depth(conn).is_some_and(|depth| depth > 0)
                && Conn::TransactionManager::rollback_transaction(conn).is_err()
            {
                Conn::TransactionManager::transaction_manager_status_mut(conn).set_in_error();
            }
            return Err(aborted);
        }
        if probe == COMMIT_UNLESS_ABORTED {
            // Diesel's `PgConnection` learns from libpq that the transaction ended.
            return leave_transaction(Conn::TransactionManager::transaction_manager_status_mut(
                conn,
            ));
        }
    }
    Conn::TransactionManager::commit_transaction(conn)
}

/// Runs `write`, whose error may be an outcome the caller matches on and carries on
/// from (a taken key), so that its failure leaves the caller's transaction usable: in
/// a savepoint when a transaction is open on a backend where errors abort transactions.
/// Outside a transaction, or elsewhere, it runs as it is.
pub(crate) fn recoverable<Conn, R>(
    conn: &mut Conn,
    write: impl FnOnce(&mut Conn) -> Result<R, Error>,
) -> Result<R, Error>
where
    Conn: Connection,
{
    if Dialect::errors_abort_transactions::<Conn::Backend>() && depth(conn).is_some_and(|d| d > 0) {
        conn.transaction(write)
    } else {
        write(conn)
    }
}

/// How many transactions (the outermost and its savepoints) are open on `conn`, or
/// `None` when its transaction manager cannot say.
fn depth<Conn: Connection>(conn: &mut Conn) -> Option<u32> {
    let status = Conn::TransactionManager::transaction_manager_status_mut(conn);
    status
        .transaction_depth()
        .ok()
        .map(|depth| depth.map_or(0, |depth| depth.get()))
}

/// Rolls back the transaction a panicking closure left open above depth `outer`. When
/// that cannot be done, the connection's transaction manager is marked broken, so that
/// later checked writes fail instead of returning `Ok` inside a transaction that will
/// never commit, and a pool closes the connection.
fn end_abandoned<Conn: Connection>(conn: &mut Conn, outer: Option<u32>) {
    let rolled_back = match (outer, depth(conn)) {
        (Some(outer), Some(now)) if now == outer => true,
        (Some(outer), Some(now)) if Some(now) == outer.checked_add(1) => {
            Conn::TransactionManager::rollback_transaction(conn).is_ok()
        }
        _ => false,
    };
    if !rolled_back {
        Conn::TransactionManager::transaction_manager_status_mut(conn).set_in_error();
    }
}
