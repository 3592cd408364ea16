//! The blocking strategies on one backend's `Conn`: plain code, compiled once in each
//! backend module (`pg`, `mysql`, `sqlite`) as that module's `blocking`, the way the
//! integration tests compile their scenarios per backend. The backend module gives it
//! `Conn` and what differs in the locking strategies (`locked_read`,
//! `pessimistic_transaction`, `serializable_transaction`). It is not generic over the connection because each query
//! would need a bound naming diesel-occ's and Diesel's statement types; per backend,
//! every type is concrete.

use diesel::prelude::*;
use diesel_occ::blocking::{Combiner, ConnectionSource};
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::statement::CachedUpdate;

use super::{Conn, locked_read, pessimistic_transaction, serializable_transaction};
use crate::harness::{Held, OpResult, Worker};
use crate::measures::{QueryLog, Statements, strip_binds};
use crate::model::{START, Stock, bench_stock};
use crate::outcome::{Once, Seen, is_deadlock, retry_loop};
use crate::strategy::Strategy;

/// Runs one reservation with `strategy` on the worker's connection; `combiner` is the
/// run's, shared by its workers.
pub fn op(
    strategy: Strategy,
    held: &Held<Conn>,
    worker: &mut Worker,
    key: i32,
    combiner: &Combiner<Stock>,
) -> Result<OpResult, String> {
    match strategy {
        Strategy::Blind => {
            let conn = &mut *held.0.borrow_mut();
            retry_loop(worker, || blind_once(conn, key))
        }
        Strategy::Handwritten => {
            let conn = &mut *held.0.borrow_mut();
            retry_loop(worker, || handwritten_once(conn, key))
        }
        Strategy::HandwrittenPrepared => {
            let conn = &mut *held.0.borrow_mut();
            retry_loop(worker, || handwritten_prepared_once(conn, key))
        }
        Strategy::Occ | Strategy::OccEscalate | Strategy::OccEscalateOp => {
            occ(held, &worker.policy, key)
        }
        Strategy::OccCombine => occ_combine(held, combiner, &worker.policy, key),
        Strategy::Pessimistic => {
            let conn = &mut *held.0.borrow_mut();
            retry_loop(worker, || pessimistic_once(conn, key))
        }
        Strategy::Serializable => {
            let conn = &mut *held.0.borrow_mut();
            retry_loop(worker, || serializable_once(conn, key))
        }
        Strategy::Atomic => {
            let conn = &mut *held.0.borrow_mut();
            retry_loop(worker, || atomic_once(conn, key))
        }
        Strategy::OccAsynchronous | Strategy::OccCombineAsynchronous => {
            Err(format!("{} runs on its own runtime", strategy.name()))
        }
    }
}

/// The plain read of a row.
fn read(conn: &mut Conn, key: i32) -> QueryResult<Stock> {
    bench_stock::table
        .find(key)
        .select(Stock::as_select())
        .get_result(conn)
}

/// The lost-update baseline: read, then write what was read minus one, with no
/// predicate on what was read. Every strategy but `handwritten` prepares its
/// UPDATE once per connection, as diesel-occ does, so that they differ by
/// strategy alone.
fn blind_once(conn: &mut Conn, key: i32) -> Once {
    let stock = read(conn, key)?;
    if stock.available <= 0 {
        return Ok(Some(false));
    }
    let written = CachedUpdate::new(
        bench_stock::table.find(key),
        bench_stock::available.eq(stock.available - 1),
    )
    .execute(conn)?;
    Ok(Some(written == 1))
}

/// Exactly what `save_checked` runs, written by hand with plain Diesel: the same
/// read, the same conditional UPDATE (which Diesel prepares again every time),
/// and on a miss the same token read that classifies it.
pub fn handwritten_once(conn: &mut Conn, key: i32) -> Once {
    let stock = read(conn, key)?;
    if stock.available <= 0 {
        return Ok(Some(false));
    }
    let written = diesel::update(
        bench_stock::table
            .find(key)
            .filter(bench_stock::version.eq(stock.version)),
    )
    .set((
        bench_stock::available.eq(stock.available - 1),
        bench_stock::version.eq(stock.version.wrapping_add(1)),
    ))
    .execute(conn)?;
    if written == 1 {
        return Ok(Some(true));
    }
    let _current: Option<i32> = bench_stock::table
        .find(key)
        .select(bench_stock::version)
        .get_result(conn)
        .optional()?;
    Ok(None)
}

/// `handwritten` with its UPDATE prepared once per connection: the same target
/// and changes, the same SQL text, built with `CachedUpdate::new(target, changes)`
/// instead of `diesel::update(target).set(changes)`. That is the only
/// difference: Diesel's `UpdateStatement` calls `unsafe_to_cache_prepared()`
/// in its `walk_ast` and has no static query id, so Diesel's statement cache
/// never keeps it; `CachedUpdate` renders the same text without that call, and
/// the cache keys it by that text.
pub fn handwritten_prepared_once(conn: &mut Conn, key: i32) -> Once {
    let stock = read(conn, key)?;
    if stock.available <= 0 {
        return Ok(Some(false));
    }
    let written = CachedUpdate::new(
        bench_stock::table
            .find(key)
            .filter(bench_stock::version.eq(stock.version)),
        (
            bench_stock::available.eq(stock.available - 1),
            bench_stock::version.eq(stock.version.wrapping_add(1)),
        ),
    )
    .execute(conn)?;
    if written == 1 {
        return Ok(Some(true));
    }
    let _current: Option<i32> = bench_stock::table
        .find(key)
        .select(bench_stock::version)
        .get_result(conn)
        .optional()?;
    Ok(None)
}

/// diesel-occ: `save_checked` inside the blocking retry helper, with the
/// worker's connection as the helper's source.
fn occ(held: &Held<Conn>, policy: &RetryPolicy, key: i32) -> Result<OpResult, String> {
    occ_on(held, policy, key)
}

/// The same on any connection source (the scale-out benchmark's nodes).
pub fn occ_on<S>(source: &S, policy: &RetryPolicy, key: i32) -> Result<OpResult, String>
where
    S: ConnectionSource<Connection = Conn>,
{
    let mut seen = Seen::default();
    let mut deadlocks = 0;
    let result = diesel_occ::blocking::retry(source, policy, |conn, attempt| {
        seen.last_attempt = attempt.number();
        let result = (|| {
            let mut stock: Stock = attempt.find(conn, key)?;
            if stock.available <= 0 {
                return Ok(false);
            }
            stock.available -= 1;
            stock.save_checked(conn)?;
            Ok(true)
        })();
        if let Err(error) = &result {
            seen.saw(error);
            deadlocks += u32::from(is_deadlock(error));
        }
        result
    });
    seen.finish(result).map(|op| OpResult { deadlocks, ..op })
}

/// diesel-occ's `Combiner`, shared by every worker of the run: the reservations the
/// workers make to one row at the same time share one read and one checked save.
fn occ_combine(
    held: &Held<Conn>,
    combiner: &Combiner<Stock>,
    policy: &RetryPolicy,
    key: i32,
) -> Result<OpResult, String> {
    let result = combiner.apply(held, policy, key, |stock: &mut Stock| {
        if stock.available <= 0 {
            return false;
        }
        stock.available -= 1;
        true
    });
    Seen::default().finish(result)
}

/// One statement, no read: `SET available = available - 1 WHERE id = ? AND
/// available > 0`.
fn atomic_once(conn: &mut Conn, key: i32) -> Once {
    let written = CachedUpdate::new(
        bench_stock::table
            .find(key)
            .filter(bench_stock::available.gt(0)),
        (
            bench_stock::available.eq(bench_stock::available - 1),
            bench_stock::version.eq(bench_stock::version + 1),
        ),
    )
    .execute(conn)?;
    Ok(Some(written == 1))
}

/// The pessimistic lock: the backend's locking read (`SELECT ... FOR UPDATE`, or a plain
/// read after SQLite's `BEGIN IMMEDIATE`) in its pessimistic transaction, then the
/// write.
fn pessimistic_once(conn: &mut Conn, key: i32) -> Once {
    pessimistic_transaction(conn, |conn| {
        let stock = locked_read(conn, key)?;
        read_write(conn, stock)
    })
}

/// A serializable transaction (as the backend runs one): a plain read, then the write;
/// a concurrent writer makes one of them fail, and the loop retries.
fn serializable_once(conn: &mut Conn, key: i32) -> Once {
    serializable_transaction(conn, |conn| {
        let stock = read(conn, key)?;
        read_write(conn, stock)
    })
}

/// The read and the write of the locking strategies, inside their transaction.
fn read_write(conn: &mut Conn, stock: Stock) -> Once {
    if stock.available <= 0 {
        return Ok(Some(false));
    }
    CachedUpdate::new(
        bench_stock::table.find(stock.id),
        (
            bench_stock::available.eq(stock.available - 1),
            bench_stock::version.eq(stock.version.wrapping_add(1)),
        ),
    )
    .execute(conn)?;
    Ok(Some(true))
}

/// Drops and creates the table with `keys` rows of [`START`] stock.
pub fn reset(conn: &mut Conn, keys: i32) -> QueryResult<()> {
    use diesel::connection::SimpleConnection;
    conn.batch_execute(
        "DROP TABLE IF EXISTS bench_stock; \
         CREATE TABLE bench_stock (id INTEGER PRIMARY KEY, \
         available INTEGER NOT NULL, version INTEGER NOT NULL)",
    )?;
    let ids: Vec<i32> = (1..=keys).collect();
    for chunk in ids.chunks(1000) {
        let rows: Vec<_> = chunk
            .iter()
            .map(|&id| {
                (
                    bench_stock::id.eq(id),
                    bench_stock::available.eq(START),
                    bench_stock::version.eq(1),
                )
            })
            .collect();
        diesel::insert_into(bench_stock::table)
            .values(&rows)
            .execute(conn)?;
    }
    Ok(())
}

/// Units taken from the table since [`reset`].
pub fn taken(conn: &mut Conn, keys: i32) -> QueryResult<i64> {
    let left: Vec<i32> = bench_stock::table
        .select(bench_stock::available)
        .load(conn)?;
    let start = i64::from(START) * i64::from(keys);
    Ok(start - left.into_iter().map(i64::from).sum::<i64>())
}

/// Statements run by successful saves, counted by Diesel's instrumentation,
/// and the SQL of diesel-occ's UPDATE and of the hand-written one.
pub fn statements(conn: &mut Conn, saves: i32) -> Result<Statements, String> {
    let log = QueryLog::attach(conn);
    let mut measured = Statements {
        saves: saves as usize,
        ..Default::default()
    };
    for key in 1..=saves {
        let mut stock = Stock::find(conn, key).map_err(|e| e.to_string())?;
        if let Some(sql) = log.take().first() {
            measured.occ_read = strip_binds(sql);
        }
        stock.available -= 1;
        stock.save_checked(conn).map_err(|e| e.to_string())?;
        let (cache, run): (Vec<String>, Vec<String>) =
            log.take().into_iter().partition(|s| QueryLog::cached(s));
        measured.cached += cache.len();
        measured.statements += run.len();
        if let Some(sql) = run.last() {
            measured.occ_update = strip_binds(sql);
        }
    }
    for key in 1..=saves {
        handwritten_once(conn, key).map_err(|e| e.to_string())?;
        measured.hand_cached += log.take().iter().filter(|s| QueryLog::cached(s)).count();
    }
    handwritten_once(conn, 1).map_err(|e| e.to_string())?;
    let hand = log.take();
    let text = |sql: Option<&String>| sql.map(|s| strip_binds(s)).unwrap_or_default();
    measured.handwritten_read = text(hand.first());
    measured.handwritten_update = text(hand.get(1));
    for key in 1..=saves {
        handwritten_prepared_once(conn, key).map_err(|e| e.to_string())?;
        let (cache, run): (Vec<String>, Vec<String>) =
            log.take().into_iter().partition(|s| QueryLog::cached(s));
        measured.prepared_cached += cache.len();
        if let Some(sql) = run.get(1) {
            measured.prepared_update = strip_binds(sql);
        }
    }
    Ok(measured)
}
