//! The blocking strategies, generic over the worker's connection: the hand-written ones
//! on [`StockSql`] and [`BackendSql`], diesel-occ's in its retry helper and its
//! `Combiner`.

use diesel::QueryResult;
use diesel_occ::blocking::{Combiner, ConnectionSource, LockingConnection};
use diesel_occ::retry::{Attempt, RetryPolicy};

use super::sql::{BackendSql, StockSql};
use crate::harness::{Held, OpResult, Worker};
use crate::measures::{QueryLog, strip_binds};
use crate::model::Stock;
use crate::outcome::{Once, Seen, retry_loop};
use crate::strategy::Strategy;

/// Runs one reservation with `strategy` on the worker's connection; `combiner` is the
/// run's, shared by its workers.
pub fn op<C>(
    strategy: Strategy,
    held: &Held<C>,
    worker: &mut Worker,
    key: i32,
    combiner: &Combiner<Stock>,
) -> Result<OpResult, String>
where
    C: LockingConnection + StockSql + BackendSql,
{
    let once: fn(&mut C, i32) -> Once = match strategy {
        Strategy::Blind => blind_once,
        Strategy::Handwritten => |conn, key| handwritten_once(conn, key, false),
        Strategy::HandwrittenPrepared => |conn, key| handwritten_once(conn, key, true),
        Strategy::Pessimistic => pessimistic_once,
        Strategy::Serializable => serializable_once,
        Strategy::Atomic => atomic_once,
        Strategy::Occ | Strategy::OccEscalate | Strategy::OccEscalateOp => {
            return occ_on(held, &worker.policy, key);
        }
        Strategy::OccCombine => {
            let result = C::combine(held, combiner, &worker.policy, key);
            return Seen::default().finish(result);
        }
        Strategy::OccAsynchronous
        | Strategy::HandwrittenAsynchronous
        | Strategy::OccCombineAsynchronous => {
            return Err(format!("{} runs on its own runtime", strategy.name()));
        }
    };
    let conn = &mut *held.0.borrow_mut();
    retry_loop(worker, || once(conn, key))
}

/// The lost-update baseline: read, then write what was read minus one, with no
/// predicate on what was read. Every strategy but `handwritten` prepares its
/// UPDATE once per connection, as diesel-occ does, so that they differ by
/// strategy alone.
fn blind_once<C: StockSql>(conn: &mut C, key: i32) -> Once {
    let stock = conn.read(key)?;
    if stock.available <= 0 {
        return Ok(Some(false));
    }
    let written = conn.write_available(key, stock.available - 1)?;
    Ok(Some(written == 1))
}

/// Exactly what `save_checked` runs, written by hand with plain Diesel: the same
/// read, the same conditional UPDATE, and on a miss the same token read that
/// classifies it. Unless `prepared`, the UPDATE is Diesel's `update(..).set(..)`,
/// which Diesel prepares again every time (`handwritten`); with it, the same target,
/// changes and SQL text built with `CachedUpdate::new(target, changes)`, prepared once
/// per connection (`handwritten-prepared`). That is the only difference: Diesel's
/// `UpdateStatement` calls `unsafe_to_cache_prepared()` in its `walk_ast` and has no
/// static query id, so Diesel's statement cache never keeps it; `CachedUpdate` renders
/// the same text without that call, and the cache keys it by that text.
pub fn handwritten_once<C: StockSql>(conn: &mut C, key: i32, prepared: bool) -> Once {
    let stock = conn.read(key)?;
    if stock.available <= 0 {
        return Ok(Some(false));
    }
    if conn.write_checked(&stock, stock.available - 1, prepared)? == 1 {
        return Ok(Some(true));
    }
    conn.read_version(key)?;
    Ok(None)
}

/// diesel-occ: `save_checked` inside the blocking retry helper, on any connection
/// source (the worker's connection, the scale-out benchmark's nodes).
pub fn occ_on<S>(source: &S, policy: &RetryPolicy, key: i32) -> Result<OpResult, String>
where
    S: ConnectionSource,
    S::Connection: LockingConnection + StockSql,
{
    let seen = Seen::default();
    let result = diesel_occ::blocking::retry(source, policy, |conn, attempt| {
        seen.track(&attempt, reserve(conn, &attempt, key))
    });
    seen.finish(result)
}

/// One attempt of diesel-occ's reservation: the attempt's read, then a checked save of
/// one unit less; `false` when the row has none left.
pub fn reserve<C: StockSql>(
    conn: &mut C,
    attempt: &Attempt,
    key: i32,
) -> Result<bool, diesel_occ::Error> {
    let mut stock = conn.find_in(attempt, key)?;
    if !stock.take_one() {
        return Ok(false);
    }
    conn.save_stock(&mut stock)?;
    Ok(true)
}

/// One statement, no read: `SET available = available - 1 WHERE id = ? AND
/// available > 0`.
fn atomic_once<C: StockSql>(conn: &mut C, key: i32) -> Once {
    Ok(Some(conn.take_one(key)? == 1))
}

/// The pessimistic lock: the backend's locking read (`SELECT ... FOR UPDATE`, or a plain
/// read after SQLite's `BEGIN IMMEDIATE`) in its pessimistic transaction, then the
/// write.
fn pessimistic_once<C: StockSql + BackendSql>(conn: &mut C, key: i32) -> Once {
    conn.pessimistic_transaction(|conn| {
        let stock = conn.locked_read(key)?;
        read_write(conn, stock)
    })
}

/// A serializable transaction (as the backend runs one): a plain read, then the write;
/// a concurrent writer makes one of them fail, and the loop retries.
fn serializable_once<C: StockSql + BackendSql>(conn: &mut C, key: i32) -> Once {
    conn.serializable_transaction(|conn| {
        let stock = conn.read(key)?;
        read_write(conn, stock)
    })
}

/// The read and the write of the locking strategies, inside their transaction.
fn read_write<C: StockSql>(conn: &mut C, stock: Stock) -> QueryResult<Option<bool>> {
    if stock.available <= 0 {
        return Ok(Some(false));
    }
    conn.write(&stock, stock.available - 1)?;
    Ok(Some(true))
}

/// What `saves` successful saves ran each way, as the report's lines: the statements
/// of diesel-occ's saves (Diesel's instrumentation), the statements each way prepared
/// into the connection's cache, and whether diesel-occ's read and UPDATE are the
/// hand-written ones.
pub fn statements<C: StockSql>(conn: &mut C, saves: i32) -> Result<Vec<String>, String> {
    let log = QueryLog::attach(conn);
    // What ran since the last call, without binds, and how many were prepared.
    let split = |log: &QueryLog| {
        let (cached, ran): (Vec<String>, Vec<String>) =
            log.take().into_iter().partition(|s| QueryLog::cached(s));
        (
            ran.iter().map(|s| strip_binds(s)).collect::<Vec<_>>(),
            cached.len(),
        )
    };
    let (mut read, mut saved, mut cached) = (Vec::new(), Vec::new(), [0; 3]);
    for key in 1..=saves {
        let mut stock = conn.find_stock(key).map_err(|e| e.to_string())?;
        read = split(&log).0;
        stock.available -= 1;
        conn.save_stock(&mut stock).map_err(|e| e.to_string())?;
        let (ran, cache) = split(&log);
        cached[0] += cache;
        saved.extend(ran);
    }
    // Hand-written, the UPDATE prepared every time, then once: the last save's read
    // and UPDATE.
    let mut hand = [Vec::new(), Vec::new()];
    for (way, prepared) in [(1, false), (2, true)] {
        for key in 1..=saves {
            handwritten_once(conn, key, prepared).map_err(|e| e.to_string())?;
            let (ran, cache) = split(&log);
            (hand[way - 1], cached[way]) = (ran, cached[way] + cache);
        }
    }
    let at = |sql: &[String], i: usize| sql.get(i).cloned().unwrap_or_default();
    let (occ_read, occ_update) = (at(&read, 0), saved.last().cloned().unwrap_or_default());
    let (hand_read, hand_update, prepared_update) =
        (at(&hand[0], 0), at(&hand[0], 1), at(&hand[1], 1));
    // Diesel puts parentheses around a plain `.eq()` but not around diesel-occ's token
    // comparison: the same SQL, grouped differently.
    let ungrouped = |sql: &str| sql.replace(['(', ')'], "");
    let same = ungrouped(&occ_read) == ungrouped(&hand_read)
        && ungrouped(&occ_update) == ungrouped(&hand_update)
        && prepared_update == hand_update;
    Ok(vec![
        format!(
            "statements per successful save: {:.3} ({} statements for {saves} saves, Diesel \
             instrumentation)",
            saved.len() as f64 / f64::from(saves.max(1)),
            saved.len()
        ),
        format!(
            "  statements prepared into the cache by {saves} saves: diesel-occ {} (its UPDATE, \
             once, then reused), hand-written {} (Diesel prepares its own UPDATE again for every \
             execution), hand-written prepared {} (its UPDATE as a CachedUpdate)",
            cached[0], cached[1], cached[2]
        ),
        format!("  diesel-occ read:    {occ_read}"),
        format!("  hand-written read:  {hand_read}"),
        format!("  diesel-occ update:  {occ_update}"),
        format!("  hand-written update: {hand_update}"),
        format!("  hand-written prepared update: {prepared_update}"),
        format!("  same statements (ignoring grouping parentheses): {same}"),
    ])
}
