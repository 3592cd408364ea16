//! Changes to one row, made by the threads of one process at the same time, applied in
//! groups: one read, the changes one after another, one checked save ([`Combiner`]).

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use diesel::dsl::{AsSelect, Select};
use diesel::query_builder::QueryId;
use diesel::query_dsl::methods::SelectDsl;
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{Connection, Selectable};

use super::{AttemptDsl, ConnectionSource, RetryPolicy, retry};
use crate::backend::{LockedRead, LockingConnection};
use crate::blocking::CheckedDsl;
use crate::error::{EntityKey, Error};
use crate::statement::{CurrentToken, GuardedUpdate};
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
/// - When a group fails for good, its leader gets the error and every other caller of
///   the group runs its change again in a group of its own, so each caller gets the
///   error of its own change.
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
/// # include!("doctest_setup.rs");
/// use std::sync::Arc;
/// use diesel_occ::retry::{Combiner, RetryPolicy};
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
    rows: Mutex<HashMap<EntityKey, Arc<Row<T>>>>,
    _entity: PhantomData<fn() -> T>,
}

impl<T: Versioned> Combiner<T> {
    /// A combiner with no row in it.
    pub fn new() -> Self {
        Combiner {
            rows: Mutex::new(HashMap::new()),
            _entity: PhantomData,
        }
    }

    /// Applies `change` to the row with this key, in a group with the changes other
    /// threads apply to it at the same time, and returns what `change` returned for the
    /// group that was saved.
    ///
    /// `change` may run more than once (once per attempt of its group, on the row read
    /// again); only the last run's result and row are kept. The errors are
    /// [`retry`](super::retry)'s: [`Error::NotFound`] when the row is gone,
    /// [`Error::RetriesExhausted`] when the policy gave up, any other error of the
    /// read or the save.
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
        let mine = Arc::new(Pending {
            change: Mutex::new(change),
            output: Mutex::new(None),
            mark: Mark::default(),
        });
        let member: Arc<dyn Member<T>> = Arc::clone(&mine) as Arc<dyn Member<T>>;
        let row = self.row(&key);
        let finished = match row.join(member) {
            Turn::Lead(group) => {
                Leader {
                    row: &row,
                    mine: &mine.mark,
                    group,
                }
                .lead(source, policy, &key);
                mine.mark.finished()
            }
            Turn::Finished(finished) => finished,
        };
        self.forget_if_idle(&key, &row);
        match finished {
            // The output of the group's last attempt, which saved it.
            Finished::Done => match lock(&mine.output).take() {
                Some(output) => Ok(output),
                None => alone(source, policy, key, &mut *lock(&mine.change)),
            },
            Finished::Failed(error) => Err(error),
            Finished::Panicked(payload) => panic::resume_unwind(payload),
            Finished::Alone => alone(source, policy, key, &mut *lock(&mine.change)),
        }
    }

    /// How many changes to the row with this key wait for the group being written to
    /// end (0 when nobody writes the row): what a caller arriving now would wait behind.
    ///
    /// ```
    /// # include!("doctest_setup.rs");
    /// use diesel_occ::retry::Combiner;
    ///
    /// # fn main() {
    /// let stock = Combiner::<Stock>::new();
    /// assert_eq!(stock.waiting(&1), 0);
    /// # }
    /// ```
    pub fn waiting(&self, key: &T::Key) -> usize {
        let rows = lock(&self.rows);
        rows.get(&T::entity_key(key))
            .map_or(0, |row| lock(&row.queue).waiting.len())
    }

    /// The row's queue, made when nobody writes the row.
    fn row(&self, key: &T::Key) -> Arc<Row<T>> {
        let mut rows = lock(&self.rows);
        Arc::clone(rows.entry(T::entity_key(key)).or_default())
    }

    /// Forgets the row when nobody writes it and nobody but the map and the caller
    /// holds its queue, so that rows nobody writes take no memory.
    fn forget_if_idle(&self, key: &T::Key, row: &Arc<Row<T>>) {
        let mut rows = lock(&self.rows);
        // Callers take their handle under this lock, so the count cannot grow meanwhile.
        if Arc::strong_count(row) == 2 {
            let queue = lock(&row.queue);
            if !queue.led && queue.waiting.is_empty() {
                drop(queue);
                rows.remove(&T::entity_key(key));
            }
        }
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
            .field("table", &T::TABLE_NAME)
            .field("rows", &lock(&self.rows).len())
            .finish()
    }
}

/// What an entity needs for [`Combiner::apply`] on connection `Conn`: a checked read
/// and save, [`Clone`] (to put the row back when a change panics) and [`PartialEq`] (to
/// write nothing when the changes left the row as it was read). Implemented for every
/// such [`Versioned`] entity.
///
/// ```
/// # include!("doctest_setup.rs");
/// use diesel_occ::retry::Combinable;
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
    fn read(conn: &mut Conn, attempt: &super::Attempt, key: Self::Key) -> Result<Self, Error>;

    /// Saves the group's row with its token check.
    #[doc(hidden)]
    fn save(&mut self, conn: &mut Conn) -> Result<(), Error>;
}

impl<T, Conn> Combinable<Conn> for T
where
    Conn: LockingConnection,
    T: Versioned + Clone + PartialEq + Send + Selectable<Conn::Backend>,
    T::SelectExpression: QueryId,
    T::FindQuery: SelectDsl<AsSelect<T, Conn::Backend>>,
    Select<T::FindQuery, AsSelect<T, Conn::Backend>>:
        RunQueryDsl<Conn> + LoadQuery<'static, Conn, T>,
    LockedRead<Select<T::FindQuery, AsSelect<T, Conn::Backend>>>: LoadQuery<'static, Conn, T>,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn read(conn: &mut Conn, attempt: &super::Attempt, key: T::Key) -> Result<T, Error> {
        attempt.find(conn, key)
    }

    fn save(&mut self, conn: &mut Conn) -> Result<(), Error> {
        self.save_checked(conn)
    }
}

/// The callers waiting to change one row, and whether a group of it is being written.
struct Row<T> {
    queue: Mutex<Queue<T>>,
}

impl<T> Default for Row<T> {
    fn default() -> Self {
        Row {
            queue: Mutex::new(Queue {
                waiting: Vec::new(),
                led: false,
            }),
        }
    }
}

struct Queue<T> {
    waiting: Vec<Arc<dyn Member<T>>>,
    led: bool,
}

/// What a caller of [`Combiner::apply`] is told when it may go on.
enum Turn<T> {
    /// Write this group (its own change first).
    Lead(Vec<Arc<dyn Member<T>>>),
    /// Its change was dealt with by another caller's group.
    Finished(Finished),
}

impl<T> Row<T> {
    /// Queues `member`; leads at once when nobody writes the row, else waits until its
    /// change is finished or it is handed the lead of the next group.
    fn join(&self, member: Arc<dyn Member<T>>) -> Turn<T> {
        let mut queue = lock(&self.queue);
        if !queue.led {
            queue.led = true;
            return Turn::Lead(vec![member]);
        }
        let mark = Arc::clone(&member);
        queue.waiting.push(member);
        drop(queue);
        match mark.mark().wait_turn() {
            Some(finished) => Turn::Finished(finished),
            // Handed the lead: the group is everyone queued meanwhile, itself included.
            None => Turn::Lead(std::mem::take(&mut lock(&self.queue).waiting)),
        }
    }
}

/// A queued change, whatever its closure and result types.
trait Member<T>: Send + Sync {
    /// Runs the change on `row`, keeping its output; false (the row as before, the
    /// caller told) when it panicked.
    fn run(&self, row: &mut T) -> bool;

    /// Where the change stands.
    fn mark(&self) -> &Mark;
}

/// A caller's change, its output and where it stands.
struct Pending<F, R> {
    change: Mutex<F>,
    output: Mutex<Option<R>>,
    mark: Mark,
}

impl<T, F, R> Member<T> for Pending<F, R>
where
    T: Clone,
    F: FnMut(&mut T) -> R + Send,
    R: Send,
{
    fn run(&self, row: &mut T) -> bool {
        let before = row.clone();
        let mut change = lock(&self.change);
        match panic::catch_unwind(AssertUnwindSafe(|| (*change)(row))) {
            Ok(output) => {
                *lock(&self.output) = Some(output);
                true
            }
            Err(payload) => {
                *row = before;
                self.mark.set(State::Finished(Finished::Panicked(payload)));
                false
            }
        }
    }

    fn mark(&self) -> &Mark {
        &self.mark
    }
}

/// Where a queued change stands, and the caller's wake-up.
#[derive(Default)]
struct Mark {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
enum State {
    /// In the queue or in a group being written.
    #[default]
    Queued,
    /// Its caller leads the next group.
    Lead,
    Finished(Finished),
}

/// What became of a change.
enum Finished {
    /// Its group was saved (or needed no save): the output is the change's.
    Done,
    /// Its group failed for good and its caller led it: the error.
    Failed(Error),
    /// Its group failed for good under another leader: run it alone.
    Alone,
    /// The change panicked: the panic, to resume in the caller.
    Panicked(Box<dyn Any + Send>),
}

impl Mark {
    /// Sets the state and wakes the caller.
    fn set(&self, state: State) {
        *lock(&self.state) = state;
        self.changed.notify_one();
    }

    /// Waits until the change is finished (`Some`) or its caller is handed the lead.
    fn wait_turn(&self) -> Option<Finished> {
        let mut state = lock(&self.state);
        loop {
            match std::mem::take(&mut *state) {
                State::Queued => {}
                State::Lead => return None,
                State::Finished(finished) => return Some(finished),
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// What became of the change of a caller that led its group. Its group published
    /// it before the lead ended; were it not there, the change runs alone.
    fn finished(&self) -> Finished {
        match std::mem::take(&mut *lock(&self.state)) {
            State::Finished(finished) => finished,
            State::Queued | State::Lead => Finished::Alone,
        }
    }

    fn is_queued(&self) -> bool {
        matches!(*lock(&self.state), State::Queued)
    }
}

/// The caller writing a group of one row. When it is done (also when it unwinds
/// mid-group, whose members then run alone), the first caller queued meanwhile leads.
struct Leader<'a, T> {
    row: &'a Row<T>,
    mine: &'a Mark,
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
        for member in self.group.drain(..) {
            let mark = member.mark();
            match &result {
                Ok(()) => mark.set(State::Finished(Finished::Done)),
                Err(_) if std::ptr::eq(mark, self.mine) => {}
                Err(_) => mark.set(State::Finished(Finished::Alone)),
            }
        }
        // Unless its own change panicked and left the group.
        if let Err(error) = result {
            if self.mine.is_queued() {
                self.mine.set(State::Finished(Finished::Failed(error)));
            }
        }
    }
}

impl<T> Drop for Leader<'_, T> {
    fn drop(&mut self) {
        // Only when `lead` unwound: the members it took run alone.
        for member in self.group.drain(..) {
            member.mark().set(State::Finished(Finished::Alone));
        }
        let mut queue = lock(&self.row.queue);
        match queue.waiting.first() {
            Some(next) => next.mark().set(State::Lead),
            None => queue.led = false,
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
    retry(source, policy, |conn, attempt| {
        let read = T::read(conn, &attempt, key.clone())?;
        let mut row = read.clone();
        group.retain(|member| member.run(&mut row));
        if row != read {
            row.save(conn)?;
        }
        Ok(())
    })
}

/// A change whose group failed, written in a group of its own, so that its caller gets
/// the error of its own change.
fn alone<S, T, R>(
    source: &S,
    policy: &RetryPolicy,
    key: T::Key,
    change: &mut impl FnMut(&mut T) -> R,
) -> Result<R, Error>
where
    S: ConnectionSource + ?Sized,
    S::Connection: LockingConnection,
    T: Combinable<S::Connection>,
{
    retry(source, policy, |conn, attempt| {
        let read = T::read(conn, &attempt, key.clone())?;
        let mut row = read.clone();
        let output = change(&mut row);
        if row != read {
            row.save(conn)?;
        }
        Ok(output)
    })
}

fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::test_support::{Stock, TestDb};

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
        assert!(lock(&combiner.rows).is_empty(), "{combiner:?}");
    }
}
