//! `memory`: bytes held per `Tracked<T>` (against the bare entity) and per row of a
//! `retry::HotRows` memory, and that memory's peak when filled to its bound and offered
//! as many rows again, counted by the allocator ([`alloc`]), not estimated from type
//! sizes. Bytes are the sizes asked of the allocator; its bookkeeping comes on top.

mod alloc;

use std::time::Duration;

use diesel::prelude::*;
use diesel_occ::blocking::retry;
use diesel_occ::retry::{HotRows, RetryPolicy};
use diesel_occ::{
    ConcurrencyConflict, ConflictState, Error, Operation, TokenValue, Tracked, Versioned,
};
use diesel_occ_bench::cli;
use diesel_occ_bench::harness::Held;
use diesel_occ_bench::model::Stock;

diesel::table! {
    /// An entity with text, for the `Tracked<T>` figure.
    memory_article (id) {
        /// The key.
        id -> Integer,
        /// A short text.
        title -> Text,
        /// A longer text.
        body -> Text,
        /// The version token.
        version -> Integer,
    }
}

/// An entity with two strings (32 and 200 bytes here).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = memory_article)]
#[occ(track)]
struct Article {
    id: i32,
    title: String,
    body: String,
    #[occ(version)]
    version: i32,
}

/// The tracked form of the benchmark's entity.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = diesel_occ_bench::model::bench_stock)]
#[occ(track)]
struct TrackedStock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: i32,
}

/// `memory`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Entities per Tracked<T> measurement
    #[arg(long, default_value = "100000", value_parser = cli::count)]
    items: usize,
    /// The HotRows bound to fill (default: the default bound)
    #[arg(long, default_value = "4096", value_parser = cli::count)]
    capacity: usize,
}

/// Runs the measurements.
pub(crate) fn main(args: &Args) -> Result<(), String> {
    alloc::start();
    let items = args.items;
    println!("-- Tracked<T>: {items} values, each boxed; bytes held per value, measured");
    tracked(items, "3 x i32", |i| TrackedStock {
        id: i as i32,
        available: 10,
        version: 1,
    });
    tracked(items, "2 x i32 + 2 strings of 32 and 200 B", |i| Article {
        id: i as i32,
        title: format!("{i:>32}"),
        body: format!("{i:>200}"),
        version: 1,
    });
    hot_rows(args.capacity)
}

/// Bytes held per value by `items` values `make(i)`, each in its own box (its inline
/// part and heap alike), and per `Tracked` of it: prints both and the difference.
fn tracked<T: diesel_occ::Tracking + Clone + 'static>(
    items: usize,
    what: &str,
    make: impl Fn(usize) -> T,
) {
    let held_per_item = |make: &dyn Fn(usize) -> Box<dyn std::any::Any>| {
        let mut values = Vec::with_capacity(items);
        let before = alloc::current();
        values.extend((0..items).map(make));
        let held = alloc::current() - before;
        drop(values);
        held as f64 / items as f64
    };
    let bare = held_per_item(&|i| Box::new(make(i)));
    let kept = held_per_item(&|i| Box::new(Tracked::new(make(i))));
    println!(
        "Tracked<T>, T = {what} (size_of T {} B, Tracked<T> {} B): T {bare:.1} B, \
         Tracked<T> {kept:.1} B, tracking costs {:.1} B",
        size_of::<T>(),
        size_of::<Tracked<T>>(),
        kept - bare
    );
}

/// A conflict on the benchmark's row `id`, as a checked save reports it.
fn conflict(id: i32) -> Error {
    ConcurrencyConflict::new(
        Stock::sql_table_name(),
        Stock::entity_key(&id),
        Operation::Update,
        TokenValue::Integer(1),
        ConflictState::Stale {
            current: TokenValue::Integer(2),
        },
    )
    .into()
}

/// Fills a `HotRows` memory of `capacity` rows through the retry helper (one conflict
/// per row, which makes the row hot for an hour), then offers as many rows again.
fn hot_rows(capacity: usize) -> Result<(), String> {
    // An attempt on a hot row runs in a transaction: SQLite in memory opens it.
    let conn = SqliteConnection::establish(":memory:").map_err(|e| e.to_string())?;
    let held = Held::new(conn);
    let rows = i32::try_from(capacity).map_err(|_| "--capacity: too large".to_owned())?;
    let offer = |policy: &RetryPolicy, id: i32| {
        // The attempt's error is the point; the helper gives up after it.
        let _ = retry(&held, policy, |_, _| Err::<(), _>(conflict(id)));
    };
    // Warm-up on a memory of its own: whatever the first call initialises once.
    let warm = RetryPolicy::new()
        .max_attempts(1)
        .escalate_hot_rows(1, Duration::from_secs(3600));
    for id in 0..64 {
        offer(&warm, id);
    }
    drop(warm);

    let before_memory = alloc::current();
    let memory = HotRows::with_capacity(capacity);
    let policy = RetryPolicy::new().max_attempts(1).escalate_hot_rows_with(
        &memory,
        1,
        Duration::from_secs(3600),
    );
    let empty = alloc::current() - before_memory;
    alloc::reset_peak();
    let base = alloc::current();
    println!(
        "-- HotRows: capacity {capacity} rows, one conflict per row (hot for an hour), \
         key (id=N) of table {}",
        Stock::sql_table_name()
    );
    println!("empty memory and its policy: {empty} B");
    for id in 1..=rows {
        offer(&policy, id);
    }
    let full = alloc::current() - base;
    println!(
        "{rows:>7} rows: {full} B held, {:.1} B per row",
        full as f64 / f64::from(rows)
    );
    for id in rows + 1..=2 * rows {
        offer(&policy, id);
    }
    let refused = alloc::current() - base;
    let peak = alloc::peak() - base;
    println!(
        "after {rows} more rows offered to the full memory: {refused} B held \
         ({} B more than full: the bound holds)",
        refused - full
    );
    println!(
        "peak while filling and past the bound: {peak} B above the empty memory \
         ({:.1} B per row of the bound; it includes the hash table's growth, when the \
         old and new tables are both held, and one attempt's transient allocations)",
        peak as f64 / capacity as f64
    );
    Ok(())
}
