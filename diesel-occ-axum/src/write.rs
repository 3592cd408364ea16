//! The read, the evaluation of the [`Preconditions`] and the write, in one call inside
//! diesel-occ's retry helper: blocking here, async with feature `async`.

use diesel_occ::blocking::{ConnectionSource, LockingConnection};
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::{Error, Versioned};

use crate::preconditions::Preconditions;
use crate::problem::Problem;
use crate::validators::Validators;

impl Preconditions {
    /// Runs a conditional write: each attempt of
    /// [`diesel_occ::blocking::retry`] on a fresh connection of `source` calls `read`
    /// (the row as it is now; [`Error::NotFound`] when it does not exist), evaluates
    /// the preconditions against its token ([`check`](Self::check): 412, 404, 428), and
    /// then calls `write` with the row (`None` when there is none, for a create under
    /// `If-None-Match: *`). A write that meets another writer's commit is retried with
    /// a fresh read, so a tag that went stale meanwhile is 412 on the re-read. Errors
    /// are answered as [`problem`](Self::problem) maps them.
    ///
    /// Every form of write fits: `entity.save_checked` after changing it (a `PUT`),
    /// `T::update_by_key(conn, key, entity.token(), form)` with a `ChangesetColumns`
    /// form (a `PATCH`), `entity.delete_checked` (a `DELETE`), and `insert_checked` when
    /// `write` gets `None` (a create-only `PUT`).
    ///
    /// Call it where blocking is allowed (`tokio::task::spawn_blocking`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use axum::http::Request;
    /// use diesel_occ::prelude::*;
    /// use diesel_occ::retry::RetryPolicy;
    /// use diesel_occ_axum::Preconditions;
    ///
    /// # fn main() {
    /// # let source = blocking_source();
    /// let (mut parts, ()) = Request::put("/jobs/1").header("if-match", "\"3\"").body(()).unwrap().into_parts();
    /// let preconditions = Preconditions::from_parts(&mut parts).unwrap();
    /// let policy = RetryPolicy::new();
    /// let saved = preconditions.write(
    ///     &source,
    ///     &policy,
    ///     |conn, attempt| attempt.find::<Job>(conn, 1),
    ///     |conn, job| {
    ///         let mut job = job.ok_or_else(|| diesel_occ::NotFound::of::<Job>(&1))?;
    ///         job.status = "running".into();
    ///         job.save_checked(conn)?;
    ///         Ok(job.version)
    ///     },
    /// );
    /// assert_eq!(saved.unwrap(), 4);
    /// // The same request again: its tag is stale now.
    /// let stale = preconditions.write(&source, &policy, |conn, attempt| attempt.find::<Job>(conn, 1), |_, _| Ok(0));
    /// assert_eq!(stale.unwrap_err().status(), 412);
    /// # }
    /// ```
    pub fn write<S, T, R>(
        &self,
        source: &S,
        policy: &RetryPolicy,
        mut read: impl FnMut(&mut S::Connection, &Attempt) -> Result<T, Error>,
        mut write: impl FnMut(&mut S::Connection, Option<T>) -> Result<R, Error>,
    ) -> Result<R, Problem>
    where
        S: ConnectionSource + ?Sized,
        S::Connection: LockingConnection,
        T: Versioned,
    {
        let outcome = diesel_occ::blocking::retry(source, policy, |conn, attempt| {
            let current = present(read(conn, &attempt))?;
            if let Err(refused) = self.check(validators(&current).as_ref()) {
                return Ok(Err(refused));
            }
            write(conn, current).map(Ok)
        });
        outcome.map_err(|error| self.problem(error))?
    }
}

/// The row read, `None` when it does not exist.
pub(crate) fn present<T>(read: Result<T, Error>) -> Result<Option<T>, Error> {
    match read {
        Ok(row) => Ok(Some(row)),
        Err(error) if error.is_not_found() => Ok(None),
        Err(error) => Err(error),
    }
}

/// The validators of the row read.
pub(crate) fn validators<T: Versioned>(current: &Option<T>) -> Option<Validators> {
    current.as_ref().map(|row| Validators::of(row.token()))
}

#[cfg(feature = "async")]
mod asynchronous {
    use diesel_occ::asynchronous::{AsyncAttemptFn, AsyncConnectionSource, AsyncLockingConnection};
    use diesel_occ::retry::{Attempt, RetryPolicy};
    use diesel_occ::{Error, Versioned};

    use super::{present, validators};
    use crate::preconditions::Preconditions;
    use crate::problem::Problem;

    /// An async closure `async |conn: &mut C, row: Option<T>| -> R` whose future is
    /// `Send`: the `write` of [`Preconditions::write_async`]. Implemented for every such
    /// closure; you never implement or name it (`AsyncFnOnce` alone cannot say that the
    /// future is `Send`).
    pub trait AsyncWriteFn<C, T, R>:
        AsyncFnOnce(C, Option<T>) -> R
        + FnOnce(C, Option<T>) -> <Self as AsyncWriteFn<C, T, R>>::Fut
    {
        /// The closure's future.
        type Fut: Future<Output = R>;
    }

    impl<F, C, T, R, Fut> AsyncWriteFn<C, T, R> for F
    where
        F: AsyncFnOnce(C, Option<T>) -> R + FnOnce(C, Option<T>) -> Fut,
        Fut: Future<Output = R>,
    {
        type Fut = Fut;
    }

    impl Preconditions {
        /// [`write`](Preconditions::write) on an async connection source (a deadpool or
        /// bb8 pool): the read, the evaluation and the write in each attempt of
        /// [`diesel_occ::asynchronous::retry`]. `read` and `write` are async closures,
        /// cloned for each attempt.
        ///
        /// ```
        /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
        /// use axum::http::Request;
        /// use diesel_occ::asynchronous::prelude::*;
        /// use diesel_occ::retry::RetryPolicy;
        /// use diesel_occ_axum::Preconditions;
        ///
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// # let pool = async_pool().await;
        /// let (mut parts, ()) = Request::delete("/jobs/1").header("if-match", "\"3\"").body(()).unwrap().into_parts();
        /// let preconditions = Preconditions::from_parts(&mut parts).unwrap();
        /// let deleted = preconditions
        ///     .write_async(
        ///         &pool,
        ///         &RetryPolicy::new(),
        ///         async |conn, attempt| attempt.find::<Job>(conn, 1).await,
        ///         async |conn, job| match job {
        ///             Some(job) => job.delete_checked(conn).await,
        ///             None => Ok(()),
        ///         },
        ///     )
        ///     .await;
        /// assert!(deleted.is_ok());
        /// # }
        /// ```
        pub async fn write_async<S, T, R, Read, Write>(
            &self,
            source: &S,
            policy: &RetryPolicy,
            read: Read,
            write: Write,
        ) -> Result<R, Problem>
        where
            S: AsyncConnectionSource + ?Sized,
            S::Connection: AsyncLockingConnection,
            T: Versioned + Send,
            R: Send,
            for<'c> Read: AsyncFnOnce(&'c mut S::Connection, Attempt) -> Result<T, Error>
                + AsyncAttemptFn<&'c mut S::Connection, Result<T, Error>, Fut: Send>
                + Clone
                + Send
                + Sync,
            for<'c> Write: AsyncFnOnce(&'c mut S::Connection, Option<T>) -> Result<R, Error>
                + AsyncWriteFn<&'c mut S::Connection, T, Result<R, Error>, Fut: Send>
                + Clone
                + Send
                + Sync,
        {
            let (read, write) = (&read, &write);
            let outcome = diesel_occ::asynchronous::retry(source, policy, async |conn, attempt| {
                let current = present(read.clone()(conn, attempt).await)?;
                if let Err(refused) = self.check(validators(&current).as_ref()) {
                    return Ok(Err(refused));
                }
                write.clone()(conn, current).await.map(Ok)
            })
            .await;
            outcome.map_err(|error| self.problem(error))?
        }
    }
}

#[cfg(feature = "async")]
pub use self::asynchronous::AsyncWriteFn;
