//! How a retry policy's deadline bounds the waits inside an attempt: the checkout and
//! the lock wait of a locking read.
//!
//! The loop itself only decides between attempts (no attempt starts after the deadline,
//! no backoff sleeps past it). A wait that starts inside an attempt gets the time left
//! instead: a pool checkout waits at most that long, and a locking read asks the server
//! to give up waiting for the row lock by then (how is per backend, in
//! [`crate::backend`]). Bounding on the server rather than by abandoning the statement
//! keeps the connection in step with the server, so it can go back to its pool.
//!
//! A server that does not answer at all (its host died or hangs, the network to it is
//! cut, a session the server lost track of) cannot end the wait itself. The async
//! helpers therefore also bound the locking read on the client: a read that has not
//! answered [`NO_ANSWER_GRACE`] after the time left is abandoned, its connection marked
//! broken (discarded, no further statement on it) and the attempt fails with
//! [`no_answer`]. Nothing of the attempt can have committed: its COMMIT was never sent.
//! The blocking helpers cannot: Diesel's `MysqlConnection` and `PgConnection` expose no
//! read timeout, so there a node that stops answering holds the read until the
//! operating system gives up on the connection.

use std::time::{Duration, Instant};

use diesel::result::Error as DieselError;

#[cfg(feature = "async")]
use crate::error::PoolError;
use crate::error::{Error, PoolErrorKind};

/// The instant a deadline of `budget` from now falls on; `None` without a deadline, or
/// when it lies beyond what an `Instant` can hold (which no caller lives to see).
pub(crate) fn instant(budget: Option<Duration>) -> Option<Instant> {
    budget.and_then(|budget| Instant::now().checked_add(budget))
}

/// The time left before `deadline`, zero once it has passed.
pub(crate) fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()))
}

/// The error of a checkout that the deadline ended before the source answered.
#[cfg(feature = "async")]
pub(crate) fn checkout_timed_out() -> PoolError {
    PoolError::from_kind(PoolErrorKind::Timeout)
}

/// True for a checkout that timed out with no time left before `deadline`: the deadline,
/// not the pool's own timeout, ended it. After a retried attempt the loop then reports
/// the deadline with that attempt's error, as when it does not start a retry at all.
pub(crate) fn cut_checkout(error: &Error, deadline: Option<Instant>) -> bool {
    matches!(error, Error::Pool(pool) if pool.kind() == PoolErrorKind::Timeout)
        && remaining(deadline) == Some(Duration::ZERO)
}

/// How long an r2d2 checkout may wait: the pool's own `connection_timeout`, or the time
/// left when that is shorter.
#[cfg(feature = "r2d2")]
pub(crate) fn pool_wait(pool_timeout: Duration, remaining: Option<Duration>) -> Duration {
    remaining.map_or(pool_timeout, |left| left.min(pool_timeout))
}

/// Waits for `checkout` at most `remaining`; dropping a checkout future that has not
/// handed out a connection yet leaves nothing behind (a pool's waiter, or a connection
/// still being opened, which closes).
#[cfg(feature = "async")]
pub(crate) async fn checkout_within<F, P>(
    checkout: F,
    remaining: Option<Duration>,
) -> Result<P, PoolError>
where
    F: std::future::Future<Output = Result<P, PoolError>>,
{
    match remaining {
        None => checkout.await,
        // Tokio polls the checkout before the timer: a connection that is ready is
        // handed out even when no time is left.
        Some(left) => tokio::time::timeout(left, checkout)
            .await
            .unwrap_or_else(|_elapsed| Err(checkout_timed_out())),
    }
}

/// How long after the time left the async helpers wait for a locking read's answer
/// before abandoning it: long enough that the server's own bound (which keeps the
/// connection usable) normally ends the wait first.
#[cfg(feature = "async")]
pub(crate) const NO_ANSWER_GRACE: Duration = Duration::from_millis(500);

/// The message of [`no_answer`] (kept in `backend`, which classifies it).
#[cfg(feature = "async")]
pub(crate) use crate::backend::NO_ANSWER;

/// The error of a locking read that the server did not answer within the time left
/// (and [`NO_ANSWER_GRACE`]): a lock wait the deadline ended
/// ([`TransientKind::LockWaitTimeout`](crate::TransientKind::LockWaitTimeout)), so the
/// loop ends with the deadline reached.
#[cfg(feature = "async")]
pub(crate) fn no_answer() -> Error {
    DieselError::DatabaseError(
        diesel::result::DatabaseErrorKind::Unknown,
        Box::new(NO_ANSWER.to_owned()),
    )
    .into()
}

/// The error of a locking read that was bounded by `remaining`: a lock wait that the
/// bound ended becomes a lock wait timeout ([`TransientKind::LockWaitTimeout`]) on every
/// backend, whatever the server reported (MariaDB reports its statement time limit).
///
/// [`TransientKind::LockWaitTimeout`]: crate::TransientKind::LockWaitTimeout
pub(crate) fn locked_read_error(error: DieselError, remaining: Option<Duration>) -> Error {
    let error = match remaining {
        Some(_) => crate::backend::lock_wait_bound_reached(error),
        None => error,
    };
    error.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// An abandoned locking read is a lock wait the deadline ended: retryable, so the
    /// loop reports the deadline (no time is left for another attempt), and its
    /// `Display` says what happened without SQL.
    #[cfg(feature = "async")]
    #[test]
    fn an_abandoned_locking_read_is_a_lock_wait_timeout() {
        let error = no_answer();
        assert_eq!(
            error.transient_kind(),
            Some(crate::TransientKind::LockWaitTimeout)
        );
        assert!(error.is_retryable());
        assert!(!error.to_string().contains("SELECT"), "{error}");
    }

    #[test]
    fn the_time_left_shrinks_to_zero_and_never_below() {
        assert_eq!(remaining(instant(None)), None);
        let left = remaining(instant(Some(50 * MS))).expect("a deadline");
        assert!(left <= 50 * MS, "{left:?}");
        let past = Instant::now().checked_sub(MS);
        assert_eq!(remaining(past), past.map(|_| Duration::ZERO));
        // A deadline no clock reaches counts as none.
        assert_eq!(instant(Some(Duration::MAX)), None);
    }

    #[cfg(feature = "r2d2")]
    #[test]
    fn an_r2d2_checkout_waits_for_the_shorter_of_the_pool_timeout_and_the_time_left() {
        let pool = 30_000 * MS;
        assert_eq!(pool_wait(pool, None), pool);
        assert_eq!(pool_wait(pool, Some(300 * MS)), 300 * MS);
        assert_eq!(pool_wait(200 * MS, Some(300 * MS)), 200 * MS);
        assert_eq!(pool_wait(pool, Some(Duration::ZERO)), Duration::ZERO);
    }
}
