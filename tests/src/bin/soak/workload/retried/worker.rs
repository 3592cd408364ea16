//! One worker: a random mix of checked writes through the example apps and the retry
//! helper until the deadline, each outcome written to the worker's own log.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use diesel_occ::retry::RetryPolicy;
use diesel_occ::{UuidToken, VersionToken};

use super::attempts::{self, Step};
use super::examples::claims::{self, ClaimError, Effect, Lease, WorkItem};
use super::examples::inventory::{self, PreparedReservation, ReserveError, ReserveRequest};
use super::examples::seat::{self, Booking, BookingError};
use super::{Conn, Shared};
use crate::counters::bump;
use crate::record::{Record, Unknown};

/// Tokens a client might send that must be refused before any read or write.
const HOSTILE: [&str; 7] = [
    "",
    "00000000-0000-0000-0000-000000000000",
    "not-a-token",
    "\"6f1c2a4e-1f7e-4a53-9a57-2d1b1f0c3e11\"",
    "6f1c2a4e-1f7e-4a53-9a57-2d1b1f0c3e11-and-more",
    "' OR 1=1 --",
    "\u{0}\u{feff}",
];

/// `true` with a chance of `percent` in 100.
fn chance(rng: &mut fastrand::Rng, percent: u32) -> bool {
    rng.u32(..100) < percent
}

/// One worker: a connection for the example apps, its own log and view of tokens.
pub(crate) struct Worker<'s, 'a> {
    n: usize,
    shared: &'s Shared<'a>,
    rng: fastrand::Rng,
    conn: Option<Conn>,
    log: Vec<Record>,
    /// The token this worker's "client" last saw for a SKU (often stale by now).
    views: HashMap<String, UuidToken>,
    seq: u64,
}

impl<'s, 'a> Worker<'s, 'a> {
    /// Worker `n`, its random mix drawn from `seed`.
    pub(crate) fn new(n: usize, shared: &'s Shared<'a>, seed: u64) -> Self {
        Worker {
            n,
            shared,
            rng: fastrand::Rng::with_seed(seed),
            conn: None,
            log: Vec::new(),
            views: HashMap::new(),
            seq: 0,
        }
    }

    /// Works until the deadline (or while the run is held open); returns the
    /// worker's log.
    pub(crate) fn run(mut self) -> Vec<Record> {
        while self.shared.running() {
            bump(&self.shared.counters.operations);
            self.seq += 1;
            match self.rng.u32(..100) {
                0..=29 => {
                    if let Some(sku) = self.random_sku() {
                        let delta = self.rng.i32(-3..=4);
                        let step = attempts::update(self.shared, &sku, delta);
                        self.record(step);
                    }
                }
                30..=34 => {
                    if let Some(sku) = self.random_sku() {
                        let step = attempts::delete(self.shared, &sku);
                        self.record(step);
                    }
                }
                35..=44 => self.insert(),
                45..=69 => self.client_edit(),
                70..=87 => self.claim(),
                _ => self.book(),
            }
        }
        self.log
    }

    fn conn(&mut self) -> Option<&mut Conn> {
        if self.conn.is_none() {
            self.conn = self.shared.connect();
            if self.conn.is_none() {
                thread::sleep(Duration::from_millis(5));
            }
        }
        self.conn.as_mut()
    }

    /// A failure whose kind is a database error: the connection may be dead.
    fn failed(&mut self) {
        bump(&self.shared.counters.errors);
        self.conn = None;
    }

    fn random_sku(&mut self) -> Option<String> {
        let live = self.shared.live.read().unwrap();
        if live.is_empty() {
            return None;
        }
        Some(live[self.rng.usize(..live.len())].clone())
    }

    fn record(&mut self, step: Step) {
        match step {
            Step::Ack(record) => {
                bump(&self.shared.counters.acknowledged);
                if let Record::Deleted { sku, .. } = &record {
                    self.shared.live.write().unwrap().retain(|s| s != sku);
                }
                self.log.push(record);
            }
            Step::Unknown(record) => {
                bump(&self.shared.counters.unknown_outcome);
                self.log.push(record);
            }
            Step::Nothing | Step::Failed => {}
        }
    }

    fn insert(&mut self) {
        let sku = format!("w{}-{}", self.n, self.seq);
        let available = self.rng.i32(0..=50);
        let Some(conn) = self.conn() else { return };
        match inventory::add_item(conn, &sku, "soak item", available) {
            Ok(view) => {
                let token = UuidToken::decode(&view.token).expect("the app's own token");
                self.shared.live.write().unwrap().push(sku.clone());
                self.record(Step::Ack(Record::Inserted {
                    sku,
                    token,
                    available,
                }));
            }
            Err(_) => {
                self.failed();
                self.record(Step::Unknown(Record::Unknown {
                    sku,
                    write: Unknown::Insert { available },
                }));
            }
        }
    }

    /// A reservation with the token this worker's client holds: refused before the
    /// edit when stale, checked again by the save.
    fn client_edit(&mut self) {
        let Some(sku) = self.random_sku() else { return };
        if chance(&mut self.rng, 5) {
            return self.hostile(&sku);
        }
        let Some(token) = self.view(&sku) else { return };
        let quantity = self.rng.i32(1..=3);
        let Some(prepared) = self.prepare(&sku, token, quantity) else {
            return;
        };
        self.save(sku, token, prepared);
    }

    /// The token the client holds for `sku`, read when it holds none and now and then.
    fn view(&mut self, sku: &str) -> Option<UuidToken> {
        let refresh = !self.views.contains_key(sku) || chance(&mut self.rng, 30);
        if refresh {
            let conn = self.conn()?;
            match inventory::stock(conn, sku) {
                Ok(view) => {
                    let token = UuidToken::decode(&view.token).expect("the app's own token");
                    self.views.insert(sku.to_owned(), token);
                }
                Err(ReserveError::UnknownSku(_)) => return None,
                Err(_) => {
                    self.failed();
                    return None;
                }
            }
        }
        Some(self.views[sku])
    }

    /// The reservation, checked against the client's token before the edit.
    fn prepare(
        &mut self,
        sku: &str,
        token: UuidToken,
        quantity: i32,
    ) -> Option<PreparedReservation> {
        let text = token.encode();
        let request = ReserveRequest {
            sku,
            quantity,
            token: Some(&text),
        };
        let conn = self.conn()?;
        let error = match inventory::prepare(conn, &request) {
            Ok(prepared) => return Some(prepared),
            Err(error) => error,
        };
        match error {
            ReserveError::StaleToken { current } => {
                bump(&self.shared.counters.conflicts);
                let current = UuidToken::decode(&current).expect("the app's own token");
                self.views.insert(sku.to_owned(), current);
            }
            ReserveError::UnknownSku(_) => {
                self.views.remove(sku);
            }
            ReserveError::Conflict { .. } | ReserveError::Deleted => {
                bump(&self.shared.counters.conflicts);
                self.views.remove(sku);
            }
            ReserveError::InsufficientStock { .. } | ReserveError::StockGuard => {}
            ReserveError::Database(_) => self.failed(),
            other => self.log.push(Record::Unexpected {
                what: format!("a valid token was refused: {other:?}"),
            }),
        }
        None
    }

    /// Saves a prepared reservation: the save's predicate checks the token again.
    fn save(&mut self, sku: String, token: UuidToken, prepared: PreparedReservation) {
        let available = prepared.available_after();
        let Some(conn) = self.conn() else { return };
        match prepared.save(conn) {
            Ok(reserved) => {
                let new = UuidToken::decode(&reserved.token).expect("the app's own token");
                self.views.insert(sku.clone(), new);
                self.record(Step::Ack(Record::Updated {
                    sku,
                    old: token,
                    new,
                    available: reserved.available,
                }));
                debug_assert_eq!(available, reserved.available);
            }
            Err(ReserveError::Conflict { .. } | ReserveError::Deleted) => {
                bump(&self.shared.counters.conflicts);
                self.views.remove(&sku);
            }
            Err(ReserveError::StockGuard) => {}
            Err(_) => {
                self.failed();
                self.record(Step::Unknown(Record::Unknown {
                    sku,
                    write: Unknown::Update {
                        old: token,
                        new: None,
                        available,
                    },
                }));
            }
        }
    }

    fn hostile(&mut self, sku: &str) {
        let text = HOSTILE[self.rng.usize(..HOSTILE.len())];
        let token = (!chance(&mut self.rng, 10)).then_some(text);
        let request = ReserveRequest {
            sku,
            quantity: 1,
            token,
        };
        let Some(conn) = self.conn() else { return };
        match inventory::reserve(conn, &request) {
            Err(ReserveError::InvalidToken(_) | ReserveError::TokenRequired) => {
                bump(&self.shared.counters.hostile_refused);
            }
            Err(ReserveError::Database(_)) => self.failed(),
            other => self.log.push(Record::Unexpected {
                what: format!("hostile token {token:?} was not refused: {other:?}"),
            }),
        }
    }

    /// A work-item claim with a short lease, completed, sometimes late, sometimes twice.
    fn claim(&mut self) {
        let worker = format!("worker-{}", self.n);
        let stats = &self.shared.claim_stats;
        let now = claims::now_ms();
        let Some(item) = self.claimable(now) else {
            return;
        };
        let Some(conn) = self.conn() else { return };
        let lease = match claims::claim(conn, &item, &worker, now, 40, stats) {
            Ok(Some(lease)) => lease,
            Ok(None) => return bump(&self.shared.counters.conflicts),
            Err(ClaimError::NotClaimable { .. }) => return,
            Err(_) => return self.failed(),
        };
        // Some workers stall past their lease: someone else may claim the item, and
        // then the fencing token must refuse this completion.
        if chance(&mut self.rng, 15) {
            thread::sleep(Duration::from_millis(50));
        }
        self.complete(worker, &lease);
    }

    /// The next claimable item; when there is none, enqueues one for later.
    fn claimable(&mut self, now: i64) -> Option<WorkItem> {
        let conn = self.conn()?;
        match claims::next_claimable(conn, now) {
            Ok(Some(item)) => Some(item),
            Ok(None) => {
                let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
                let conn = self.conn()?;
                if claims::enqueue_item(conn, id, "soak job").is_err() {
                    self.failed();
                }
                None
            }
            Err(_) => {
                self.failed();
                None
            }
        }
    }

    /// Completes a lease; now and then replays the completion, which must not apply
    /// the effect twice.
    fn complete(&mut self, worker: String, lease: &Lease) {
        let stats = &self.shared.claim_stats;
        let Some(conn) = self.conn() else { return };
        match claims::complete(conn, lease, stats) {
            Ok(Effect::Applied) => {
                let record = Record::Completed {
                    item: lease.item.id,
                    worker,
                    fence: lease.fence,
                };
                self.record(Step::Ack(record));
                if chance(&mut self.rng, 10) {
                    let Some(conn) = self.conn() else { return };
                    match claims::complete(conn, lease, stats) {
                        Err(ClaimError::AlreadyCompleted | ClaimError::Fenced { .. }) => {}
                        Err(ClaimError::Database(_)) => self.failed(),
                        Ok(Effect::AlreadyApplied) => {}
                        other => panic!("a replayed completion did {other:?}"),
                    }
                }
            }
            Ok(Effect::AlreadyApplied) => {}
            Err(ClaimError::Fenced { .. }) => bump(&self.shared.counters.fenced),
            Err(ClaimError::Changed | ClaimError::AlreadyCompleted) => {
                bump(&self.shared.counters.conflicts)
            }
            Err(_) => self.failed(),
        }
    }

    /// A seat booking through `seat::book`, which retries on a conflict with
    /// connections from the shared pool.
    fn book(&mut self) {
        let concert = self.shared.concert.load(Ordering::SeqCst);
        let buyer = format!("w{}-{}", self.n, self.seq);
        let policy = RetryPolicy::new().max_attempts(5);
        match seat::book(&self.shared.pool, &policy, concert, &buyer, |_| {}) {
            Ok(Booking::Confirmed { seat_no, attempts }) => {
                let counters = self.shared.counters;
                let extra = u64::from(attempts - 1);
                counters.retries.fetch_add(extra, Ordering::Relaxed);
                counters.conflicts.fetch_add(extra, Ordering::Relaxed);
                self.record(Step::Ack(Record::Booked {
                    concert,
                    seat_no,
                    buyer,
                }));
            }
            Ok(Booking::SoldOut { .. }) => self.next_concert(concert),
            Err(BookingError::GaveUp { attempts }) => {
                let counters = self.shared.counters;
                counters
                    .conflicts
                    .fetch_add(u64::from(attempts), Ordering::Relaxed);
                bump(&counters.exhausted);
            }
            Err(BookingError::UnknownConcert(_)) => {}
            // The pool replaces a connection that died.
            Err(_) => bump(&self.shared.counters.errors),
        }
    }

    /// `concert` is sold out: creates the next one and points the workers at it.
    fn next_concert(&mut self, concert: i32) {
        let next = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let Some(conn) = self.conn() else { return };
        if seat::create_concert(conn, next, "soak concert", 20).is_ok() {
            let _ = self.shared.concert.compare_exchange(
                concert,
                next,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        } else {
            self.failed();
        }
    }
}
