//! The async twin of [`crate::retry::Combiner`]: the changes that the tasks of one
//! process make to the same row at the same time, applied in groups by a writer task.

use std::fmt;
use std::future::Future;
use std::panic;
use std::sync::Arc;

use diesel::Selectable;
use diesel::dsl::{AsSelect, Select};
use diesel::query_builder::QueryId;
use diesel::query_dsl::methods::SelectDsl;
use diesel_async::AsyncConnection;
use diesel_async::methods::LoadQuery;

use super::{
    AsyncConnectionSource, AsyncLockingConnection, AttemptDsl, CheckedDsl, GuardedUpdate, retry,
};
use crate::backend::LockedRead;
use crate::error::Error;
use crate::retry::combine::{Finished, Member, Pending, Row, Rows, lock, publish};
use crate::retry::{Attempt, RetryPolicy};
use crate::statement::CurrentToken;
use crate::versioned::Versioned;

/// Applies the changes that the tasks of one process make to the same row at the same
/// time in groups: ONE read, every change of the group in turn, ONE checked save. The
/// async twin of [`crate::retry::Combiner`], with the same contract: a change depends on
/// the row alone and runs once per attempt of its group; a conflict reads again and
/// runs every change again; a group that fails for good gives each caller the error of
/// its own change; a change that panics leaves its group and the panic resumes in its
/// caller.
///
/// The groups are written by a task that the first caller to find the row idle spawns
/// (`tokio::spawn`, so call it inside a Tokio runtime), with that caller's source and
/// policy; it writes group after group while changes keep arriving, then ends. Because
/// the writer is a task of its own, a caller that goes away never leaves a group half
/// known: dropping the future of [`apply`](Self::apply) while its change waits for the
/// next group withdraws the change; once its group is being written, the change lands
/// or not with the group, as an UPDATE already sent does. Hence the source must be
/// `Clone + 'static` (a deadpool `Pool` is).
///
/// ```
/// # include!("../retry/doctest_setup.rs");
/// use diesel_async::AsyncConnection;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::{Combiner, RetryPolicy};
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
    /// group that was saved. See [`crate::retry::Combiner::apply`] for the errors.
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
            tokio::spawn(write_groups(
                source.clone(),
                policy.clone(),
                key.clone(),
                Arc::clone(&self.rows),
                Arc::clone(&row),
            ));
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
    /// # include!("../retry/doctest_setup.rs");
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
/// twin of [`crate::retry::Combinable`]. Implemented for every such [`Versioned`]
/// entity.
///
/// ```
/// # include!("../retry/doctest_setup.rs");
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
    T: Versioned + Clone + PartialEq + Send + Sync + 'static + Selectable<Conn::Backend>,
    T::SelectExpression: QueryId,
    T::FindQuery: SelectDsl<AsSelect<T, Conn::Backend>>,
    Select<T::FindQuery, AsSelect<T, Conn::Backend>>: LoadQuery<'static, Conn, T> + Send + 'static,
    LockedRead<Select<T::FindQuery, AsSelect<T, Conn::Backend>>>: LoadQuery<'static, Conn, T>,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
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
async fn write_groups<S, T>(
    source: S,
    policy: RetryPolicy,
    key: T::Key,
    rows: Arc<Rows<T>>,
    row: Arc<Row<T>>,
) where
    S: AsyncConnectionSource + Send,
    S::Connection: AsyncLockingConnection,
    T: Combinable<S::Connection>,
{
    let mut writer = Writer {
        rows,
        key,
        row: Some(row),
        group: Vec::new(),
        idle: false,
    };
    while let Some(group) = writer.next_group() {
        writer.group = group;
        let result = write_group(&source, &policy, &writer.key, &writer.group).await;
        publish(&mut writer.group, result, None);
    }
}

/// The writer task's hold on its row. When the task stops mid-group (its runtime shuts
/// down, or it panics), nobody knows whether the group was saved: its callers get an
/// error saying so, and the changes queued behind it run alone. Either way the row is
/// let go.
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
    retry(source, policy, async |conn, attempt| {
        change_row(conn, &attempt, key.clone(), |row| {
            for member in group.iter().filter(|member| member.mark().is_queued()) {
                member.run(row);
            }
        })
        .await
    })
    .await
}

/// A change whose group failed, written in a group of its own, so that its caller gets
/// the error of its own change.
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
    let key = &key;
    retry(source, policy, async |conn, attempt| {
        change_row(conn, &attempt, key.clone(), |row| (*lock(change))(row)).await
    })
    .await
}

/// One attempt: reads the row, changes it, and saves it unless the change left it as it
/// was read.
async fn change_row<C, T, O>(
    conn: &mut C,
    attempt: &Attempt,
    key: T::Key,
    change: impl FnOnce(&mut T) -> O,
) -> Result<O, Error>
where
    C: AsyncConnection,
    T: Combinable<C>,
{
    let read = T::read(conn, attempt, key).await?;
    let mut row = read.clone();
    let output = change(&mut row);
    if row != read {
        row.save(conn).await?;
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;

    use super::*;
    use crate::retry::OwnedConnection;
    use crate::retry::test_support::{Stock, TestDb};

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
}
