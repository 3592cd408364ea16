//! `--sabotage`: two writers that read the same row, wait for each other, then both
//! write it back without the token in the predicate. The later write always starts
//! from a token the earlier one has just replaced, so every round in which both land
//! is a lost update; the barrier makes that certain, not a matter of timing. (The
//! workers' retried updates are sabotaged too, in `attempts.rs`.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};

use diesel::prelude::*;
use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_examples::schema::inventory as inventory_table;

use super::examples::inventory::Stock;
use super::{Conn, Shared};
use crate::counters::bump;
use crate::record::{Record, Unknown};

/// What the saboteurs share.
#[derive(Default)]
pub(crate) struct Rounds {
    /// What they agreed to write in this round: a SKU, or `None` to stop.
    sku: Mutex<Option<Option<String>>>,
    /// Their acknowledged writes so far.
    landed: AtomicU64,
    played: AtomicU64,
}

/// Past the deadline the saboteurs go on until this many of their writes landed (three
/// rounds' worth, however slow the machine), or they gave up after `MAX_LATE_ROUNDS`.
const MIN_LANDED: u64 = 6;
const MAX_LATE_ROUNDS: u64 = 200;

impl Rounds {
    /// The leader's choice for the next round: a random live SKU (`None` when there is
    /// none left), or `None` to stop.
    fn choose(&self, shared: &Shared<'_>, rng: &mut fastrand::Rng) {
        let played = self.played.fetch_add(1, Ordering::SeqCst);
        let more = shared.running()
            || (self.landed.load(Ordering::SeqCst) < MIN_LANDED && played < MAX_LATE_ROUNDS);
        let sku = more.then(|| {
            let live = shared.live.read().unwrap_or_else(|e| e.into_inner());
            rng.choice(live.iter()).cloned()
        });
        *self.sku.lock().unwrap_or_else(|e| e.into_inner()) = sku;
    }

    fn chosen(&self) -> Option<Option<String>> {
        self.sku.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One of the two saboteurs; returns its log.
pub(crate) fn saboteur(
    shared: &Shared<'_>,
    barrier: &Barrier,
    rounds: &Rounds,
    seed: u64,
) -> Vec<Record> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut conn: Option<Conn> = None;
    let mut log = Vec::new();
    loop {
        // Every wait is reached by both threads whatever happened in between: a
        // saboteur that skipped one would leave the other waiting forever.
        if barrier.wait().is_leader() {
            rounds.choose(shared, &mut rng);
        }
        barrier.wait();
        let Some(sku) = rounds.chosen() else { break };
        if conn.is_none() {
            conn = shared.connect();
        }
        let read: Option<Stock> = match (&sku, conn.as_mut()) {
            (Some(sku), Some(c)) => inventory_table::table
                .find(sku)
                .select(Stock::as_select())
                .first(c)
                .ok(),
            _ => None,
        };
        barrier.wait();
        let (Some(sku), Some(stock), Some(c)) = (sku, read, conn.as_mut()) else {
            continue;
        };
        bump(&shared.counters.operations);
        if !write_blindly(shared, rounds, c, sku, stock, &mut log) {
            conn = None;
        }
    }
    log
}

/// Writes `stock` back plus one with a fresh token and no token in the predicate, and
/// logs the outcome; `false` when the connection failed.
fn write_blindly(
    shared: &Shared<'_>,
    rounds: &Rounds,
    conn: &mut Conn,
    sku: String,
    stock: Stock,
    log: &mut Vec<Record>,
) -> bool {
    use diesel_occ_examples::schema::inventory::dsl;
    let new = UuidToken::initial();
    let available = stock.available + 1;
    let written = diesel::update(dsl::inventory.find(&sku))
        .set((dsl::available.eq(available), dsl::version.eq(new)))
        .execute(conn);
    match written {
        Ok(1) => {
            bump(&shared.counters.acknowledged);
            rounds.landed.fetch_add(1, Ordering::SeqCst);
            log.push(Record::Updated {
                sku,
                old: stock.version,
                new,
                available,
            });
        }
        // Deleted meanwhile.
        Ok(_) => {}
        Err(_) => {
            bump(&shared.counters.errors);
            bump(&shared.counters.unknown_outcome);
            log.push(Record::Unknown {
                sku,
                write: Unknown::Update {
                    old: stock.version,
                    new: Some(new),
                    available,
                },
            });
            return false;
        }
    }
    true
}
