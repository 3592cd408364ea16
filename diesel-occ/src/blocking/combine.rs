//! Changes to one row, made by the threads of one process at the same time, applied in
//! groups: one read, the changes one after another, one checked save ([`Combiner`]).

use std::fmt;
use std::panic;
use std::sync::Arc;

use diesel::Connection;

use super::retry::transaction_depth;
use super::{AttemptDsl, ConnectionSource, retry};
use crate::blocking::LockingConnection;
use crate::blocking::{CheckedDsl, EntityDsl};
use crate::combine::{Finished, Member, Pending, Row, Rows, State, lock, outcome, publish};
use crate::error::Error;
use crate::retry::{Attempt, RetryPolicy};
use crate::versioned::Versioned;

/// Applies the changes that the threads of one process make to the same row at the same
/// time in groups: ONE read of the row, every change of the group applied to it in
/// turn, ONE checked save. On a hot row that turns a crowd of writers that keep
/// invalidating one another's reads, or queue on a row lock, into one writer.
///
/// [`apply`](Self::apply) hands a change (`FnMut(&mut T) -> R`) to the row's group.
/// The first caller to find the row idle leads: it runs the group through
/// [`retry`](super::retry) with its own connection source and policy (read with
/// [`AttemptDsl::find`], save with `save_checked`, nothing written when the changes
/// left the row as it was read). Callers that arrive meanwhile wait and form the next
/// group, which the first of them leads. Each change sees the row as the changes
/// before it in its group left it, so a group is the same as its changes run one after
/// another, and it lands whole or not at all:
///
/// - On a conflict (a writer of another process, or one that does not go through this
///   combiner) the group is read again and every change runs again: **a change must
///   depend on the row alone**, as the closure of `retry` must, and is run once per
///   attempt of its group.
/// - When a group fails for good with an error that wrote nothing (the row is gone, a
///   CHECK constraint refused the save, the policy gave up on conflicts), a caller
///   whose change was the group's only one gets that error, and when there were more,
///   every caller runs its change again in a group of its own, so each gets the result
///   of its own change: one change that breaks a constraint does not cost the others
///   theirs.
/// - **A group whose outcome is unknown is never run again**: when the connection is
///   lost at the group's save (outside a transaction) or at the attempt's COMMIT, the
///   server may have applied the group, so every caller of the group gets
///   [`Error::OutcomeUnknown`] and reads the row to know. The same holds for a change
///   run again alone.
/// - A change that panics is left out of its group (the row is put back as it was
///   before that change), and the panic resumes in the thread that called `apply`.
///
/// Use one combiner per entity type for the whole process (it is `Sync`; share it in an
/// `Arc` or a `static`), and the same source and policy for every caller: a group is
/// written with its leader's. Rows nobody is writing take no memory. Combining only
/// helps rows written from several threads at once: a lone writer runs exactly the
/// statements of the plain `retry` loop (the read and the `UPDATE`). When the change
/// needs more than the row (other reads, other writes, I/O), use
/// [`RetryPolicy::escalate_hot_rows`] instead.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use std::sync::Arc;
/// use diesel_occ::blocking::Combiner;
/// use diesel_occ::retry::RetryPolicy;
///
/// #[derive(Debug, PartialEq)]
/// struct SoldOut;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// # let (url, _keep) = shared_database("combiner_doc");
/// let source = || SqliteConnection::establish(&url);
/// let policy = RetryPolicy::new();
/// let stock = Arc::new(Combiner::<Stock>::new());
///
/// // Eight threads reserve one unit each: the row sees a handful of saves.
/// let reserved: Vec<Result<i32, SoldOut>> = std::thread::scope(|scope| {
///     let threads: Vec<_> = (0..8)
///         .map(|_| {
///             scope.spawn(|| {
///                 stock.apply(&source, &policy, 1, |stock: &mut Stock| {
///                     if stock.available == 0 {
///                         return Err(SoldOut);
///                     }
///                     stock.available -= 1;
///                     Ok(stock.available)
///                 })
///             })
///         })
///         .collect();
///     threads.into_iter().map(|t| t.join().unwrap()).collect::<Result<_, _>>()
/// })?;
///
/// // Ten in stock: eight reservations succeed, each sees a different amount left.
/// let mut left: Vec<i32> = reserved.into_iter().map(Result::unwrap).collect();
/// left.sort();
/// assert_eq!(left, vec![2, 3, 4, 5, 6, 7, 8, 9]);
/// # Ok(())
/// # }
/// ```
pub struct Combiner<T: Versioned> {
    rows: Rows<T>,
}

impl<T: Versioned> Combiner<T> {
    /// A combiner with no row in it.
    pub fn new() -> Self {
        Combiner { rows: Rows::new() }
    }

    /// Applies `change` to the row with this key, in a group with the changes other
    /// threads apply to it at the same time, and returns what `change` returned for the
    /// group that was saved.
    ///
    /// `change` may run more than once (once per attempt of its group, on the row read
    /// again, and once more alone when its group failed without writing); only the last
    /// run's result and row are kept. The errors are [`retry`](super::retry)'s:
    /// [`Error::NotFound`] when the row is gone, [`Error::RetriesExhausted`] when the
    /// policy gave up, any other error of the read or the save; and
    /// [`Error::OutcomeUnknown`] when the connection was lost after the change's group
    /// may have been saved (it may or may not be in the row, and is not run again).
    pub fn apply<S, R, F>(
        &self,
        source: &S,
        policy: &RetryPolicy,
        key: T::Key,
        change: F,
    ) -> Result<R, Error>
    where
        S: ConnectionSource + ?Sized,
        S::Connection: LockingConnection,
        T: Combinable<S::Connection>,
        F: FnMut(&mut T) -> R + Send + 'static,
        R: Send + 'static,
    {
        let mine = Arc::new(Pending::new(change));
        let member: Arc<dyn Member<T>> = Arc::clone(&mine) as Arc<dyn Member<T>>;
        let row = self.rows.take(&key);
        let finished = match join(&row, member) {
            Turn::Lead(group) => {
                Leader { row: &row, group }.lead(source, policy, &key);
                mine.mark.finished()
            }
            Turn::Finished(finished) => finished,
        };
        self.rows.release(&key, row);
        match finished {
            // The output of the group's last attempt, which saved it.
            Finished::Done => match lock(&mine.output).take() {
                Some(output) => Ok(output),
                None => write(source, policy, key, &mut *lock(&mine.change)),
            },
            Finished::Failed(error) => Err(error),
            Finished::Panicked(payload) => panic::resume_unwind(payload),
            // Its group wrote nothing: alone, for its own result.
            Finished::Alone => write(source, policy, key, &mut *lock(&mine.change)),
        }
    }

    /// How many changes to the row with this key wait for the group being written to
    /// end (0 when nobody writes the row): what a caller arriving now would wait behind.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::blocking::Combiner;
    ///
    /// # fn main() {
    /// let stock = Combiner::<Stock>::new();
    /// assert_eq!(stock.waiting(&1), 0);
    /// # }
    /// ```
    pub fn waiting(&self, key: &T::Key) -> usize {
        self.rows.waiting(key)
    }
}

impl<T: Versioned> Default for Combiner<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Versioned> fmt::Debug for Combiner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Combiner")
            .field("table", &T::sql_table_name())
            .field("rows", &self.rows.len())
            .finish()
    }
}

/// What an entity needs for [`Combiner::apply`] on connection `Conn`: a checked read
/// and save, [`Clone`] (to put the row back when a change panics) and [`PartialEq`] (to
/// write nothing when the changes left the row as it was read). Implemented for every
/// such [`Versioned`] entity.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::blocking::Combinable;
///
/// fn combinable<T: Combinable<SqliteConnection>>() {}
///
/// # fn main() {
/// // `Stock` derives `Versioned`, `Clone` and `PartialEq`.
/// combinable::<Stock>();
/// # }
/// ```
pub trait Combinable<Conn: Connection>: Versioned + Clone + PartialEq + Send {
    /// Reads the row for an attempt of a group.
    #[doc(hidden)]
    fn read(conn: &mut Conn, attempt: &Attempt, key: Self::Key) -> Result<Self, Error>;

    /// Saves the group's row with its token check.
    #[doc(hidden)]
    fn save(&mut self, conn: &mut Conn) -> Result<(), Error>;
}

impl<T, Conn> Combinable<Conn> for T
where
    Conn: LockingConnection,
    T: CheckedDsl<Conn> + EntityDsl<Conn> + Clone + PartialEq + Send,
{
    fn read(conn: &mut Conn, attempt: &Attempt, key: T::Key) -> Result<T, Error> {
        attempt.find(conn, key)
    }

    fn save(&mut self, conn: &mut Conn) -> Result<(), Error> {
        self.save_checked(conn)
    }
}

/// What a caller of [`Combiner::apply`] is told when it may go on.
enum Turn<T> {
    /// Write this group (its own change in it).
    Lead(Vec<Arc<dyn Member<T>>>),
    /// Its change was dealt with by another caller's group.
    Finished(Finished),
}

/// Queues `member`; leads at once when nobody writes the row, else waits until its
/// change is finished or it is handed the lead of the next group.
fn join<T>(row: &Row<T>, member: Arc<dyn Member<T>>) -> Turn<T> {
    let mut queue = lock(&row.queue);
    if !queue.writing {
        queue.writing = true;
        return Turn::Lead(vec![member]);
    }
    let mark = Arc::clone(&member);
    queue.waiting.push(member);
    drop(queue);
    match mark.mark().wait_turn() {
        Some(finished) => Turn::Finished(finished),
        // Handed the lead: the group is everyone queued meanwhile, itself included.
        None => Turn::Lead(std::mem::take(&mut lock(&row.queue).waiting)),
    }
}

/// The caller writing a group of one row. When it is done (also when it unwinds
/// mid-group, whose callers are then told the outcome is unknown, as nobody knows
/// whether the group was saved), the first caller queued meanwhile leads.
struct Leader<'a, T> {
    row: &'a Row<T>,
    group: Vec<Arc<dyn Member<T>>>,
}

impl<T> Leader<'_, T> {
    /// Writes the group and publishes what became of each change.
    fn lead<S>(mut self, source: &S, policy: &RetryPolicy, key: &T::Key)
    where
        S: ConnectionSource + ?Sized,
        S::Connection: LockingConnection,
        T: Combinable<S::Connection>,
    {
        let result = write_group(source, policy, key.clone(), &mut self.group);
        publish(&mut self.group, result);
    }
}

impl<T> Drop for Leader<'_, T> {
    fn drop(&mut self) {
        // Only when `lead` unwound, maybe after the group's save was sent.
        for member in self.group.drain(..) {
            if member.mark().is_queued() {
                member
                    .mark()
                    .finish(Finished::Failed(Error::OutcomeUnknown));
            }
        }
        let mut queue = lock(&self.row.queue);
        match queue.waiting.first() {
            Some(next) => next.mark().set(State::Lead),
            None => queue.writing = false,
        }
    }
}

/// Writes one group through `retry`: read, every change in turn, save. Changes that
/// panic leave the group (their callers are told at once).
fn write_group<S, T>(
    source: &S,
    policy: &RetryPolicy,
    key: T::Key,
    group: &mut Vec<Arc<dyn Member<T>>>,
) -> Result<(), Error>
where
    S: ConnectionSource + ?Sized,
    S::Connection: LockingConnection,
    T: Combinable<S::Connection>,
{
    write(source, policy, key, |row| {
        group.retain(|member| member.run(row));
    })
}

/// Runs `change` on the row through `retry` and saves it; a save whose outcome is
/// unknown (at the UPDATE or at the attempt's COMMIT) ends it with
/// [`Error::OutcomeUnknown`] (see [`outcome`]).
fn write<S, T, O>(
    source: &S,
    policy: &RetryPolicy,
    key: T::Key,
    mut change: impl FnMut(&mut T) -> O,
) -> Result<O, Error>
where
    S: ConnectionSource + ?Sized,
    S::Connection: LockingConnection,
    T: Combinable<S::Connection>,
{
    let mut committing = false;
    let result = retry(source, policy, |conn, attempt| {
        committing = false;
        let (output, saved) = change_row(conn, &attempt, key.clone(), &mut change)?;
        committing = saved && attempt.runs_in_transaction();
        Ok(output)
    });
    outcome::after_commit(result, committing)
}

/// One attempt: reads the row, changes it, and saves it unless the change left it as it
/// was read; also says whether it saved. A save that fails with the connection gone,
/// outside a transaction, may have been applied: its error is
/// [`Error::OutcomeUnknown`].
fn change_row<C, T, O>(
    conn: &mut C,
    attempt: &Attempt,
    key: T::Key,
    change: impl FnOnce(&mut T) -> O,
) -> Result<(O, bool), Error>
where
    C: Connection,
    T: Combinable<C>,
{
    let read = T::read(conn, attempt, key)?;
    let mut row = read.clone();
    let output = change(&mut row);
    if row == read {
        return Ok((output, false));
    }
    // Inside a transaction the save commits nothing by itself: a lost connection rolls
    // it back.
    let in_transaction = transaction_depth(conn).is_ok_and(|depth| depth > 0);
    match row.save(conn) {
        Ok(()) => Ok((output, true)),
        Err(error)
            if in_transaction
                || outcome::known_unwritten(&error)
                || conn.batch_execute("SELECT 1").is_ok() =>
        {
            Err(error)
        }
        Err(error) => Err(outcome::unknown(&error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Stock, TestDb};

    #[test]
    fn rows_nobody_writes_take_no_memory() {
        let db = TestDb::new();
        let combiner = Combiner::<Stock>::new();
        let source = || Ok::<_, diesel::ConnectionError>(db.connect());
        let policy = RetryPolicy::new();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    combiner.apply(&source, &policy, 1, |stock: &mut Stock| {
                        stock.available -= 1
                    })
                });
            }
        });
        assert_eq!(db.stock().available, 2);
        assert_eq!(combiner.rows.len(), 0, "{combiner:?}");
    }
}
