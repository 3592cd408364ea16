//! What the blocking and async transactions share to tell a committed transaction from
//! one the database aborted: on PostgreSQL a failed statement aborts the transaction,
//! and a `COMMIT` of an aborted transaction answers `ROLLBACK` without an error, so a
//! closure that caught the error and returned `Ok` would be reported committed.

use diesel::connection::{TransactionDepthChange, TransactionManagerStatus};
use diesel::result::{Error as DieselError, QueryResult};

/// The `COMMIT` of a transaction the library opened, on a backend where errors abort
/// transactions: when an error the closure caught has aborted the transaction, the
/// `SELECT` fails ("current transaction is aborted") and the `COMMIT` does not run, so
/// the rollback is reported instead of an `Ok`, in the same round trip as the commit.
pub(crate) const COMMIT_UNLESS_ABORTED: &str = "SELECT 1; COMMIT";

/// What runs before a savepoint the library opened is released, on a backend where
/// errors abort transactions: it fails when the transaction was aborted, which the
/// release alone reports on PostgreSQL but not to every driver's transaction manager.
pub(crate) const ABORTED_PROBE: &str = "SELECT 1";

/// Marks the outermost transaction ended in a transaction manager that did not see its
/// `COMMIT`.
pub(crate) fn leave_transaction(status: &mut TransactionManagerStatus) -> QueryResult<()> {
    match status {
        TransactionManagerStatus::Valid(valid) if valid.transaction_depth().is_some() => {
            valid.change_transaction_depth(TransactionDepthChange::DecreaseDepth)
        }
        TransactionManagerStatus::Valid(_) => Ok(()),
        TransactionManagerStatus::InError => Err(DieselError::BrokenTransactionManager),
    }
}
