//! Where a cancellation lands, forced: an operation runs until it stands at the [`Stage`] the
//! test picked, and only then is its future dropped: never a deadline, so exactly there.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use deadpool::managed::Manager;
use diesel::QueryResult;
use diesel::expression::functions::declare_sql_function;
use diesel::sqlite::SqliteConnection;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, PoolError as ManagerError};
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, AsyncMysqlConnection, AsyncPgConnection, TransactionManager};
use diesel_occ::asynchronous::BlockInPlace;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::AsyncTestConnection;
use diesel_occ_tests::entities::Counter;

use crate::flavours::asynchronous::run_sql;

/// Where an operation's future is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Waiting for a connection: the test holds every connection of the pool.
    Checkout,
    /// After the attempt's read, before its save.
    AfterRead,
    /// After the save, before the attempt ends (an escalated attempt's transaction holds the row).
    AfterSave,
    /// After the save, while the server runs [`CutConnection::GATE`], its answer unread.
    MidStatement,
    /// In the backoff after an optimistic attempt conflicted (an escalated one retries at once).
    Backoff,
}

impl Stage {
    /// The stages, in order, an operation on `C` can stand still at: not inside a statement or a
    /// blocking closure when `C` runs them within one poll ([`CutConnection::IN_PLACE`]).
    pub(crate) fn all_reachable<C: CutConnection>(in_blocking_closure: bool) -> Vec<Stage> {
        use Stage::*;
        let mut stages = vec![Checkout];
        if !(in_blocking_closure && C::IN_PLACE) {
            stages.extend([AfterRead, AfterSave]);
        }
        if !in_blocking_closure && !C::IN_PLACE {
            stages.push(MidStatement);
        }
        stages.push(Backoff);
        stages
    }
}

/// The attempts a cut lands in, optimistic and escalated (`true`), with a backoff a cut cannot
/// miss: full jitter over an hour, under a millisecond once in millions.
pub(crate) fn policies() -> [(bool, RetryPolicy); 2] {
    let patient = RetryPolicy::new().backoff(Duration::from_secs(3600), Duration::from_secs(3600));
    [(false, patient.clone()), (true, patient.escalate_after(0))]
}

/// One run's cut: its stage, and the gate an operation stops at there.
#[derive(Debug)]
pub(crate) struct Cut {
    stage: Stage,
    reached: AtomicBool,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Cut {
    pub(crate) fn new(stage: Stage) -> Arc<Self> {
        Arc::new(Cut {
            stage,
            reached: AtomicBool::new(false),
            open: Mutex::new(false),
            opened: Condvar::new(),
        })
    }

    pub(crate) fn stage(&self) -> Stage {
        self.stage
    }

    /// In an async operation: at the cut's stage, tells the test and waits for the drop.
    pub(crate) async fn stop_at(&self, here: Stage) {
        if self.pass(here) {
            std::future::pending::<()>().await;
        }
    }

    /// In a blocking closure: at the cut's stage, tells the test and blocks until the drop has
    /// begun; the closure then runs to its end (a blocking task cannot be stopped).
    pub(crate) fn block_at(&self, here: Stage) {
        if self.pass(here) {
            let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            // A poisoned lock still tells whether the gate is open.
            drop(self.opened.wait_while(open, |open| !*open));
        }
    }

    /// Notes that the operation passed `here`; says whether that is the cut's stage.
    pub(crate) fn pass(&self, here: Stage) -> bool {
        let hit = here == self.stage;
        if hit {
            self.reached.store(true, Ordering::SeqCst);
        }
        hit
    }

    fn reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }

    fn open(&self) {
        *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.opened.notify_all();
    }

    /// After the operation's save: runs [`CutConnection::GATE`] if the cut is mid-statement.
    pub(crate) async fn statement<C: CutConnection>(&self, conn: &mut C) -> QueryResult<()> {
        if self.stage == Stage::MidStatement {
            conn.batch_execute(C::GATE).await?;
        }
        Ok(())
    }

    /// Runs `operation` (on `pool`) until it stands at the cut's stage, then drops it; `holder`
    /// holds what the gate waits for. Panics if it ends first, or is not there within a minute.
    pub(crate) async fn drop_at_stage<C: CutConnection, F: Future>(
        self: &Arc<Self>,
        pool: &Pool<C>,
        holder: &mut C,
        operation: F,
    ) where
        AsyncDieselConnectionManager<C>: Manager<Type = C, Error = ManagerError>,
    {
        let size = pool.status().max_size;
        let held = match self.stage {
            Stage::Checkout => hold_all(pool).await,
            Stage::MidStatement => {
                let mut pooled = hold_all(pool).await;
                let mut conns: Vec<&mut C> = pooled.iter_mut().map(|conn| &mut **conn).collect();
                // Bounded, as a gate another connection still holds (a pooled one
                // that ran the gate statement) would hang the test, not fail it.
                let closing = C::close_gate(holder, &mut conns, self);
                let closed = tokio::time::timeout(Duration::from_secs(60), closing).await;
                closed.expect("the gate's lock is free");
                Vec::new()
            }
            _ => Vec::new(),
        };
        self.run_until(operation, async || match self.stage {
            Stage::Checkout => pool.status().waiting > 0,
            Stage::MidStatement => C::gate_waiting(holder, self).await,
            // The attempt that conflicted gave its connection back: only the backoff is left.
            Stage::Backoff => self.reached() && pool.status().available == size,
            Stage::AfterRead | Stage::AfterSave => self.reached(),
        })
        .await;
        drop(held);
        if self.stage == Stage::MidStatement {
            C::open_gate(holder).await;
        }
    }

    /// Runs `operation` until it stops at the cut's gate ([`stop_at`](Self::stop_at),
    /// [`block_at`](Self::block_at)), then drops it.
    pub(crate) async fn drop_when_stopped<F: Future>(&self, operation: F) {
        self.run_until(operation, async || self.reached()).await;
    }

    /// Polls `operation` until `stopped`, then drops it, opening the gate as the drop begins.
    async fn run_until<F: Future>(&self, operation: F, mut stopped: impl AsyncFnMut() -> bool) {
        let mut operation = pin!(operation);
        // Declared after the operation, so dropped before it: a blocking closure stopped
        // at the gate goes on while the operation's drop waits for it.
        let _open = OpenOnDrop(self);
        let (started, stage) = (Instant::now(), self.stage);
        loop {
            tokio::select! {
                biased;
                _ = operation.as_mut() => panic!("the operation ended before its cut at {stage:?}"),
                () = tokio::time::sleep(Duration::from_millis(2)) => {}
            }
            if stopped().await {
                return;
            }
            let in_time = started.elapsed() < Duration::from_secs(60);
            assert!(in_time, "the operation never reached its cut at {stage:?}");
        }
    }
}

struct OpenOnDrop<'c>(&'c Cut);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// Checks out every connection of `pool`, so that the next checkout waits.
async fn hold_all<C: CutConnection>(pool: &Pool<C>) -> Vec<Object<C>>
where
    AsyncDieselConnectionManager<C>: Manager<Type = C, Error = ManagerError>,
{
    let mut held = Vec::new();
    for _ in 0..pool.status().max_size {
        // Bounded, so a leaked connection fails the test instead of hanging it.
        let checkout = tokio::time::timeout(Duration::from_secs(60), pool.get());
        let pooled = checkout.await.expect("a connection of the pool came back");
        held.push(pooled.expect("pooled connection"));
    }
    held
}

/// After a cut: the row, as `read` on the test's own `checker`, holds whole writes,
/// exactly `value` of them, and every connection `pool` hands out is outside any
/// transaction and reads that row: none went back to the pool in a broken state.
pub(crate) async fn assert_after_cut<C: CutConnection>(
    checker: &mut C,
    pool: &Pool<C>,
    value: i32,
    read: &mut impl AsyncFnMut(&mut C) -> Counter,
    what: &str,
) where
    AsyncDieselConnectionManager<C>: Manager<Type = C, Error = ManagerError>,
{
    let row = read(checker).await;
    row.assert_whole();
    assert_eq!(row.value, value, "{what}: exactly the writes that landed");
    let mut held = hold_all(pool).await;
    for conn in &mut held {
        let status = C::TransactionManager::transaction_manager_status_mut(conn);
        // (An unusable transaction manager fails too.)
        let outside = matches!(status.transaction_depth(), Ok(None));
        assert!(outside, "{what}: a pooled connection in a transaction");
        let read = read(conn).await;
        assert_eq!(read, row, "{what}: a pooled connection reads the row");
    }
}

/// What a cut needs from a connection type.
pub(crate) trait CutConnection: AsyncTestConnection {
    /// Whether statements run within one poll (`BlockInPlace`, multi-threaded): none can be cut.
    const IN_PLACE: bool = false;
    /// A statement that waits, once [`close_gate`](Self::close_gate) ran, until
    /// [`open_gate`](Self::open_gate) (or the drop, on SQLite).
    const GATE: &'static str;

    /// Makes [`GATE`](Self::GATE) wait on `pooled`, every connection of the pool:
    /// `holder` takes the lock it waits for. (In place, no statement can be cut.)
    async fn close_gate(_holder: &mut Self, _pooled: &mut [&mut Self], _cut: &Arc<Cut>) {
        unreachable!("no statement to cut in place")
    }
    /// Whether a [`GATE`](Self::GATE) statement is waiting on the server now.
    async fn gate_waiting(_holder: &mut Self, _cut: &Cut) -> bool {
        unreachable!("no statement to cut in place")
    }
    /// Lets a waiting [`GATE`](Self::GATE) statement go.
    async fn open_gate(_holder: &mut Self) {}
}

async fn count<C: AsyncConnection>(conn: &mut C, query: &str) -> i64
where
    diesel::dsl::select<diesel::expression::SqlLiteral<diesel::sql_types::BigInt>>:
        diesel_async::methods::LoadQuery<'static, C, i64>,
{
    use diesel_async::RunQueryDsl;
    let query = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(query));
    query.get_result(conn).await.expect("gate query")
}

impl CutConnection for AsyncPgConnection {
    // Advisory locks belong to the database, so tests side by side do not meet.
    const GATE: &'static str = "SELECT pg_advisory_lock(7071)";

    async fn close_gate(holder: &mut Self, _: &mut [&mut Self], _: &Arc<Cut>) {
        run_sql(holder, Self::GATE).await;
    }

    async fn gate_waiting(holder: &mut Self, _: &Cut) -> bool {
        let waiting = "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
             AND NOT granted AND database = \
             (SELECT oid FROM pg_database WHERE datname = current_database()))";
        count(holder, waiting).await > 0
    }

    async fn open_gate(holder: &mut Self) {
        run_sql(holder, "SELECT pg_advisory_unlock(7071)").await;
    }
}

impl CutConnection for AsyncMysqlConnection {
    // User locks belong to the server: the name carries the test's database.
    const GATE: &'static str = "SELECT GET_LOCK(CONCAT(DATABASE(), '.gate'), 60)";

    async fn close_gate(holder: &mut Self, _: &mut [&mut Self], _: &Arc<Cut>) {
        let got = count(holder, "GET_LOCK(CONCAT(DATABASE(), '.gate'), 60)").await;
        assert_eq!(got, 1, "hold the gate");
    }

    async fn gate_waiting(holder: &mut Self, _: &Cut) -> bool {
        let waiting = "(SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE DB = DATABASE() AND STATE = 'User lock')";
        count(holder, waiting).await > 0
    }

    async fn open_gate(holder: &mut Self) {
        count(holder, "RELEASE_LOCK(CONCAT(DATABASE(), '.gate'))").await;
    }
}

#[declare_sql_function]
extern "SQL" {
    /// The SQLite gate: a function of the test's that stops at the cut.
    fn occ_gate() -> diesel::sql_types::Integer;
}

/// SQLite on the blocking pool: the gate is a function of the test's that blocks its
/// statement's thread until the drop begins (the wrapper's drop waits for that thread).
impl CutConnection for SyncConnectionWrapper<SqliteConnection> {
    const GATE: &'static str = "SELECT occ_gate()";

    async fn close_gate(_: &mut Self, pooled: &mut [&mut Self], cut: &Arc<Cut>) {
        for conn in pooled {
            let cut = Arc::clone(cut);
            let registered = conn.spawn_blocking(move |conn| {
                occ_gate_utils::register_impl(conn, move || {
                    cut.block_at(Stage::MidStatement);
                    1
                })
            });
            registered.await.expect("register the gate");
        }
    }

    async fn gate_waiting(_: &mut Self, cut: &Cut) -> bool {
        cut.reached()
    }
}

/// SQLite in place: no future can be dropped inside a statement, so there is no gate.
impl CutConnection for SyncConnectionWrapper<SqliteConnection, BlockInPlace> {
    const IN_PLACE: bool = true;
    const GATE: &'static str = "SELECT 1";
}
