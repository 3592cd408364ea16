//! The async twin of [`crate::blocking::Combiner`]: the changes that the tasks of one
//! process make to the same row at the same time, applied in groups by a writer task.

use std::fmt;
use std::future::Future;
use std::panic;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use diesel_async::AsyncConnection;

use super::retry::transaction_depth;
use super::{
    AsyncConnectionSource, AsyncLockingConnection, AttemptDsl, CheckedDsl, EntityDsl, retry,
};
use crate::combine::outcome::{after_commit, known_unwritten, unknown};
use crate::combine::{Finished, Member, Pending, Row, Rows, lock, publish};
use crate::error::Error;
use crate::retry::{Attempt, RetryPolicy};
use crate::versioned::Versioned;

/// Applies the changes that the tasks of one process make to the same row at the same
/// time in groups: ONE read, every change of the group in turn, ONE checked save. The
/// async twin of [`crate::blocking::Combiner`], with the same contract: a change depends on
/// the row alone and runs once per attempt of its group; a conflict reads again and
/// runs every change again; a group that fails for good without writing gives each
/// caller the result of its own change; a group whose connection is lost when its save
/// or COMMIT may have reached the server is never run again, and each of its callers
/// gets [`Error::OutcomeUnknown`]; a change that panics leaves its group and the panic
/// resumes in its caller.
///
/// The groups are written by a task that the first caller to find the row idle spawns
/// (`tokio::spawn`, so call it inside a Tokio runtime), with that caller's source and
/// policy; it writes group after group while changes keep arriving, then ends. Because
/// the writer is a task of its own, a caller that goes away never leaves a group half
/// known: dropping the future of [`apply`](Self::apply) while its change waits for the
/// next group withdraws the change; once its group is being written, the change lands
/// or not with the group, as an UPDATE already sent does. Hence the source must be
/// `Clone + 'static` (a deadpool `Pool` is). A writer task that stops mid-group (its
/// runtime shuts down) tells its callers [`Error::OutcomeUnknown`]; one dropped before
/// it ran lets the row go, and its callers run their changes alone.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::Combiner;
/// use diesel_occ::retry::RetryPolicy;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// # let (url, _keep) = shared_database("async_combiner_doc");
/// // A deadpool `Pool` works the same (feature `deadpool`).
/// let source = move || {
///     let url = url.clone();
///     async move { SyncConnectionWrapper::<SqliteConnection>::establish(&url).await }
/// };
/// let policy = RetryPolicy::new();
/// let stock = Combiner::<Stock>::new();
///
/// // Eight reservations at once: the row sees a handful of saves.
/// let reserve = || {
///     stock.apply(&source, &policy, 1, |stock: &mut Stock| {
///         stock.available -= 1;
///         stock.available
///     })
/// };
/// let (a, b, c, d) = tokio::join!(reserve(), reserve(), reserve(), reserve());
/// let (e, f, g, h) = tokio::join!(reserve(), reserve(), reserve(), reserve());
/// let mut left = vec![a?, b?, c?, d?, e?, f?, g?, h?];
/// left.sort();
/// assert_eq!(left, vec![2, 3, 4, 5, 6, 7, 8, 9]);
/// # Ok(())
/// # }
/// ```
pub struct Combiner<T: Versioned> {
    rows: Arc<Rows<T>>,
}

impl<T: Versioned> Combiner<T> {
    /// A combiner with no row in it.
    pub fn new() -> Self {
        Combiner {
            rows: Arc::new(Rows::new()),
        }
    }

    /// Applies `change` to the row with this key, in a group with the changes other
    /// tasks apply to it at the same time, and returns what `change` returned for the
    /// group that was saved. See [`crate::blocking::Combiner::apply`] for the errors.
    pub async fn apply<S, R, F>(
        &self,
        source: &S,
        policy: &RetryPolicy,
        key: T::Key,
        change: F,
    ) -> Result<R, Error>
    where
        S: AsyncConnectionSource + Clone + Send + 'static,
        S::Connection: AsyncLockingConnection,
        T: Combinable<S::Connection>,
        F: FnMut(&mut T) -> R + Send + 'static,
        R: Send + 'static,
    {
        let mine = Arc::new(Pending::new(change));
        let member: Arc<dyn Member<T>> = Arc::clone(&mine) as Arc<dyn Member<T>>;
        let row = self.rows.take(&key);
        let start = {
            let mut queue = lock(&row.queue);
            queue.waiting.push(member);
            !std::mem::replace(&mut queue.writing, true)
        };
        if start {
            // The task owns the writer's hold on the row from the start: were the task
            // dropped before it ever ran (its runtime shut down), the hold would still
            // let the row go and hand the queued changes back to their callers.
            let writer = Writer {
                rows: Arc::clone(&self.rows),
                key: key.clone(),
                row: Some(Arc::clone(&row)),
                group: Vec::new(),
                idle: false,
            };
            tokio::spawn(write_groups(source.clone(), policy.clone(), writer));
        }
        let queued = Queued {
            rows: &self.rows,
            key: &key,
            row: Some(row),
            mine: &mine,
        };
        let finished = mine.mark.finished_async().await;
        drop(queued);
        match finished {
            // The output of the group's last attempt, which saved it.
            Finished::Done => {
                let output = lock(&mine.output).take();
                match output {
                    Some(output) => Ok(output),
                    None => alone(source, policy, key, &mine.change).await,
                }
            }
            Finished::Failed(error) => Err(error),
            Finished::Panicked(payload) => panic::resume_unwind(payload),
            Finished::Alone => alone(source, policy, key, &mine.change).await,
        }
    }

    /// How many changes to the row with this key wait for the group being written to
    /// end (0 when nobody writes the row).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::asynchronous::Combiner;
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

/// A caller's change while it waits: when the caller goes away before its change was
/// taken into a group, the change is withdrawn. Then it lets the row go.
struct Queued<'a, T: Versioned, M> {
    rows: &'a Rows<T>,
    key: &'a T::Key,
    row: Option<Arc<Row<T>>>,
    mine: &'a Arc<M>,
}

impl<T: Versioned, M> Drop for Queued<'_, T, M> {
    fn drop(&mut self) {
        let Some(row) = self.row.take() else {
            return;
        };
        let mine = Arc::as_ptr(self.mine).cast::<()>();
        lock(&row.queue)
            .waiting
            .retain(|member| Arc::as_ptr(member).cast::<()>() != mine);
        self.rows.release(self.key, row);
    }
}

/// What an entity needs for [`Combiner::apply`] on the async connection `Conn`: the
/// twin of [`crate::blocking::Combinable`]. Implemented for every such [`Versioned`]
/// entity.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::Combinable;
///
/// fn combinable<T: Combinable<SyncConnectionWrapper<SqliteConnection>>>() {}
///
/// # fn main() {
/// combinable::<Stock>();
/// # }
/// ```
pub trait Combinable<Conn: AsyncConnection>:
    Versioned + Clone + PartialEq + Send + Sync + 'static
{
    /// Reads the row for an attempt of a group.
    #[doc(hidden)]
    fn read<'a>(
        conn: &'a mut Conn,
        attempt: &'a Attempt,
        key: Self::Key,
    ) -> impl Future<Output = Result<Self, Error>> + Send + 'a;

    /// Saves the group's row with its token check.
    #[doc(hidden)]
    fn save<'a>(
        &'a mut self,
        conn: &'a mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'a;
}

impl<T, Conn> Combinable<Conn> for T
where
    Conn: AsyncLockingConnection,
    T: CheckedDsl<Conn> + EntityDsl<Conn> + Clone + PartialEq + Send + Sync + 'static,
{
    fn read<'a>(
        conn: &'a mut Conn,
        attempt: &'a Attempt,
        key: T::Key,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'a {
        attempt.find(conn, key)
    }

    fn save<'a>(
        &'a mut self,
        conn: &'a mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'a {
        self.save_checked(conn)
    }
}

/// The writer task: the queued changes as one group, again and again while changes
/// keep arriving; then the row is idle and the task ends.
async fn write_groups<S, T>(source: S, policy: RetryPolicy, mut writer: Writer<T>)
where
    S: AsyncConnectionSource + Send,
    S::Connection: AsyncLockingConnection,
    T: Combinable<S::Connection>,
{
    while let Some(group) = writer.next_group() {
        writer.group = group;
        let result = write_group(&source, &policy, &writer.key, &writer.group).await;
        publish(&mut writer.group, result);
    }
}

/// The writer task's hold on its row. When the task stops mid-group (its runtime shuts
/// down, or it panics), nobody knows whether the group was saved: its callers get an
/// error saying so, and the changes queued behind it run alone, as do the changes of a
/// task dropped before it ran. Either way the row is let go.
struct Writer<T: Versioned> {
    rows: Arc<Rows<T>>,
    key: T::Key,
    row: Option<Arc<Row<T>>>,
    group: Vec<Arc<dyn Member<T>>>,
    /// The queue was found empty and the row marked as not being written.
    idle: bool,
}

impl<T: Versioned> Writer<T> {
    /// The changes queued meanwhile, or `None` (the row no longer being written) when
    /// there are none.
    fn next_group(&mut self) -> Option<Vec<Arc<dyn Member<T>>>> {
        let row = self.row.as_ref()?;
        let mut queue = lock(&row.queue);
        if queue.waiting.is_empty() {
            queue.writing = false;
            self.idle = true;
            return None;
        }
        Some(std::mem::take(&mut queue.waiting))
    }
}

impl<T: Versioned> Drop for Writer<T> {
    fn drop(&mut self) {
        let Some(row) = self.row.take() else {
            return;
        };
        if !self.idle {
            for member in self.group.drain(..) {
                if member.mark().is_queued() {
                    member
                        .mark()
                        .finish(Finished::Failed(Error::OutcomeUnknown));
                }
            }
            let mut queue = lock(&row.queue);
            for member in queue.waiting.drain(..) {
                member.mark().finish(Finished::Alone);
            }
            queue.writing = false;
        }
        self.rows.release(&self.key, row);
    }
}

/// Writes one group through the async `retry`: read, every change still in the group
/// in turn, save.
async fn write_group<S, T>(
    source: &S,
    policy: &RetryPolicy,
    key: &T::Key,
    group: &[Arc<dyn Member<T>>],
) -> Result<(), Error>
where
    S: AsyncConnectionSource,
    S::Connection: AsyncLockingConnection,
    T: Combinable<S::Connection>,
{
    write(source, policy, key, |row| {
        for member in group.iter().filter(|member| member.mark().is_queued()) {
            member.run(row);
        }
    })
    .await
}

/// A change whose group failed and wrote nothing, written in a group of its own, so
/// that its caller gets the result of its own change.
async fn alone<S, T, R, F>(
    source: &S,
    policy: &RetryPolicy,
    key: T::Key,
    change: &std::sync::Mutex<F>,
) -> Result<R, Error>
where
    S: AsyncConnectionSource,
    S::Connection: AsyncLockingConnection,
    T: Combinable<S::Connection>,
    F: FnMut(&mut T) -> R + Send,
    R: Send,
{
    write(source, policy, &key, |row| (*lock(change))(row)).await
}

/// Runs `change` on the row through the async `retry` and saves it; a save whose
/// outcome is unknown (at the UPDATE or at the attempt's COMMIT) ends it with
/// [`Error::OutcomeUnknown`], as in the blocking combiner.
async fn write<S, T, O>(
    source: &S,
    policy: &RetryPolicy,
    key: &T::Key,
    change: impl Fn(&mut T) -> O + Sync,
) -> Result<O, Error>
where
    S: AsyncConnectionSource,
    S::Connection: AsyncLockingConnection,
    T: Combinable<S::Connection>,
    O: Send,
{
    let committing = std::sync::atomic::AtomicBool::new(false);
    let (change, committing_ref) = (&change, &committing);
    let result = retry(source, policy, async |conn, attempt| {
        committing_ref.store(false, Ordering::Relaxed);
        let (output, saved) = change_row(conn, &attempt, key.clone(), change).await?;
        committing_ref.store(saved && attempt.runs_in_transaction(), Ordering::Relaxed);
        Ok(output)
    })
    .await;
    after_commit(result, committing.load(Ordering::Relaxed))
}

/// One attempt: reads the row, changes it, and saves it unless the change left it as it
/// was read; also says whether it saved. A save that fails with the connection gone,
/// outside a transaction, may have been applied: its error is
/// [`Error::OutcomeUnknown`].
async fn change_row<C, T, O>(
    conn: &mut C,
    attempt: &Attempt,
    key: T::Key,
    change: impl FnOnce(&mut T) -> O,
) -> Result<(O, bool), Error>
where
    C: AsyncConnection,
    T: Combinable<C>,
{
    let read = T::read(conn, attempt, key).await?;
    let mut row = read.clone();
    let output = change(&mut row);
    if row == read {
        return Ok((output, false));
    }
    // Inside a transaction the save commits nothing by itself: a lost connection rolls
    // it back.
    let in_transaction = transaction_depth(conn).is_ok_and(|depth| depth > 0);
    match row.save(conn).await {
        Ok(()) => Ok((output, true)),
        Err(error) if in_transaction || known_unwritten(&error) => Err(error),
        Err(error) if conn.batch_execute("SELECT 1").await.is_ok() => Err(error),
        Err(error) => Err(unknown(&error)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;

    use super::*;
    use crate::retry::OwnedConnection;
    use crate::test_support::{Stock, TestDb};

    type Conn = SyncConnectionWrapper<diesel::sqlite::SqliteConnection>;

    /// A source whose first checkout panics: the writer task stops before it writes.
    #[derive(Clone)]
    struct PanicsOnce {
        url: String,
        panicked: Arc<AtomicBool>,
    }

    impl AsyncConnectionSource for PanicsOnce {
        type Connection = Conn;
        type Pooled<'a> = OwnedConnection<Conn>;

        async fn checkout(&self) -> Result<OwnedConnection<Conn>, crate::PoolError> {
            assert!(
                self.panicked.swap(true, Ordering::SeqCst),
                "the source's own bug"
            );
            Ok(OwnedConnection::new(Conn::establish(&self.url).await?))
        }
    }

    #[test]
    fn a_writer_task_that_stops_mid_group_says_the_outcome_is_unknown_and_lets_the_row_go() {
        let db = TestDb::new();
        let source = PanicsOnce {
            url: db.url.clone(),
            panicked: Arc::new(AtomicBool::new(false)),
        };
        let combiner = Combiner::<Stock>::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let policy = RetryPolicy::new();
        let error = runtime
            .block_on(combiner.apply(&source, &policy, 1, |stock: &mut Stock| {
                stock.available -= 1;
            }))
            .unwrap_err();
        assert!(matches!(error, Error::OutcomeUnknown), "{error:?}");
        assert_eq!(combiner.rows.len(), 0, "the row was let go");
        // The row was never written, and the next change goes through.
        assert_eq!(db.stock().available, 10);
        runtime
            .block_on(combiner.apply(&source, &policy, 1, |stock: &mut Stock| {
                stock.available -= 1;
            }))
            .expect("saved");
        assert_eq!(db.stock().available, 9);
    }

    #[test]
    fn a_writer_task_dropped_before_it_ran_lets_the_row_go_and_its_changes_run() {
        let db = TestDb::new();
        let url = db.url.clone();
        let source = move || {
            let url = url.clone();
            async move { Conn::establish(&url).await }
        };
        let combiner = Combiner::<Stock>::new();
        let policy = RetryPolicy::new();
        let take_one = |stock: &mut Stock| {
            stock.available -= 1;
            stock.available
        };
        let mut first = std::pin::pin!(combiner.apply(&source, &policy, 1, take_one));
        // The first change spawns the writer task on a runtime that never polls it, and
        // that runtime shuts down: the task is dropped before it ran.
        let lost = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let entered = lost.enter();
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(first.as_mut().poll(&mut context).is_pending());
        drop(entered);
        drop(lost);

        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // The timeouts only turn a hang into a failure.
        let limit = std::time::Duration::from_secs(10);
        let first = runtime
            .block_on(async { tokio::time::timeout(limit, first).await })
            .expect("the change of the lost task is not left waiting");
        assert_eq!(first.expect("run alone"), 9);
        let next = runtime
            .block_on(async {
                tokio::time::timeout(limit, combiner.apply(&source, &policy, 1, take_one)).await
            })
            .expect("a later change is not left waiting");
        assert_eq!(next.expect("saved"), 8);
        assert_eq!(db.stock().available, 8);
        assert_eq!(combiner.rows.len(), 0, "the row was let go");
    }
}
