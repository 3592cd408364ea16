//! One path's run on the `counters` table: seeded rows, workers writing random rows,
//! two racers that force a stale write every round, the fault thread; then the rows
//! checked against what every writer was told.
//!
//! The racers make the sabotage twin's loss certain rather than likely: both read the
//! same row, then racer 0 writes, and only after it finished racer 1 writes from what
//! it read before. A checked write refuses racer 1's; a twin without the check loses
//! racer 0's change. They go on past the duration until three rounds have run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use diesel_occ::Error;

use super::counter::{self, RACE_ROW, ROWS};
use super::{Conn, FAULT_KIND, connect, connect_for_check, fault};
use crate::check::counters::{self, Write};
use crate::counters::{Counters, bump};
use crate::options::Args;
use crate::report::Report;

/// One write path: an operation cut where a concurrent writer can slip in.
pub(super) trait Path: Sync {
    /// What each thread writes through: the backend's connection, or an async
    /// connection with the runtime that drives it (`asynchronous.rs`).
    type Conn: Open;

    /// What the read hands to the write.
    type Read: Send;

    /// Where the threads' connections go: the database, or its standby.
    fn connects_to<'a>(&self, ctx: &Ctx<'a>) -> &'a str {
        ctx.url
    }

    /// Sets the seeded database up for the path (the bypass guard's trigger).
    fn prepare(&self, conn: &mut Conn, sabotage: bool) {
        let _ = (conn, sabotage);
    }

    /// Every row's counter now: `counters.value`, unless the path writes another table.
    fn values(&self, conn: &mut Conn) -> diesel::QueryResult<Values> {
        counter::values(conn)
    }

    /// Reads what the write starts from. `kind` picks the operation when a path has
    /// several: a worker's random number, or the racer's number (0 writes first).
    fn read(&self, conn: &mut Self::Conn, row: i32, kind: u32) -> Result<Self::Read, Error>;

    /// Writes, and says what the writer was told. With `ctx.sabotage`, the same write
    /// without its token check.
    fn write(&self, conn: &mut Self::Conn, read: Self::Read, ctx: &Ctx<'_>) -> Outcome;
}

/// A connection a thread opens, and opens again after a fault.
pub(super) trait Open: Sized {
    fn open(url: &str) -> diesel::ConnectionResult<Self>;
}

impl Open for Conn {
    fn open(url: &str) -> diesel::ConnectionResult<Conn> {
        connect(url)
    }
}

/// What a write's caller was told.
pub(super) enum Outcome {
    /// Acknowledged: these rows took these changes.
    Acked(Vec<Write>),
    /// Refused with a typed error (a conflict, a false predicate, a rollback):
    /// nothing was written.
    Refused,
    /// Refused by a transaction that reported it did not commit (an error from its
    /// `COMMIT`, or the helper's report of one the database aborted): these changes
    /// must not be in the rows (the check looks for their tags).
    RolledBack(Vec<Write>),
    /// An error after the write may have reached the server: each change happened
    /// once or not at all.
    Unknown(Vec<Write>),
}

impl Outcome {
    /// The outcome of a write that made `writes` when it returned `Ok`.
    pub(super) fn of(result: Result<(), Error>, writes: Vec<Write>) -> Outcome {
        match result {
            Ok(()) => Outcome::Acked(writes),
            Err(error) if refused(&error) => Outcome::Refused,
            Err(_) => Outcome::Unknown(writes),
        }
    }
}

/// An error that says nothing was written.
pub(super) fn refused(error: &Error) -> bool {
    error.is_conflict()
        || error.as_batch_conflict().is_some()
        || error.is_not_found()
        || matches!(error, Error::UniqueViolation(_))
}

/// What a write sees of the run.
pub(super) struct Ctx<'a> {
    /// The run's database, for paths that connect on their own (the combiners).
    pub(super) url: &'a str,
    /// Its standby (`retry_with_standby`): the pair's streaming standby on
    /// `--backend pg-replicas`, else the database itself.
    pub(super) standby_url: &'a str,
    pub(super) sabotage: bool,
    pub(super) counters: &'a Counters,
}

/// Everything the threads were told.
#[derive(Default)]
struct Tally {
    acknowledged: Vec<Write>,
    unknown: Vec<Write>,
    rolled_back: Vec<Write>,
}

impl Tally {
    /// Records an outcome; `false` when the connection should be replaced.
    fn add(&mut self, outcome: Outcome, counters: &Counters) -> bool {
        match outcome {
            Outcome::Acked(writes) => {
                bump(&counters.acknowledged);
                self.acknowledged.extend(writes);
                true
            }
            Outcome::Refused => {
                bump(&counters.conflicts);
                true
            }
            Outcome::RolledBack(writes) => {
                bump(&counters.conflicts);
                self.rolled_back.extend(writes);
                true
            }
            Outcome::Unknown(writes) => {
                bump(&counters.unknown_outcome);
                self.unknown.extend(writes);
                false
            }
        }
    }

    fn merge(&mut self, other: Tally) {
        self.acknowledged.extend(other.acknowledged);
        self.unknown.extend(other.unknown);
        self.rolled_back.extend(other.rolled_back);
    }
}

/// Where a path runs: a database made for it, and the standby its reads may go to.
pub(crate) struct Site<'a> {
    /// The name the report gives the backend.
    pub(crate) backend: &'static str,
    pub(crate) url: &'a str,
    pub(crate) standby_url: &'a str,
    /// Waits until the standby has replayed what the primary wrote (the seed).
    pub(crate) wait_replayed: &'a dyn Fn(),
    /// Runs on a thread of its own beside the workers (the pair's `--failover`),
    /// with the run's counters.
    pub(crate) beside: Option<Beside<'a>>,
}

/// A fault that runs beside the workers and says what happened: notes for the figures,
/// then shortfalls (what the run failed to show).
pub(crate) type Beside<'a> = &'a (dyn Fn(&Counters) -> (Vec<String>, Vec<String>) + Sync);

/// Runs `path` in `site`'s fresh database.
pub(super) fn run<P: Path>(args: &Args, name: &'static str, path: &P, site: &Site<'_>) -> Report {
    let url = site.url;
    let mut setup = connect(url).expect("connect to seed");
    let initial = counter::seed(&mut setup);
    path.prepare(&mut setup, args.sabotage);
    drop(setup);
    (site.wait_replayed)();
    let counters = Counters::default();
    let run = Run {
        deadline: Instant::now() + args.duration,
        ctx: Ctx {
            url,
            standby_url: site.standby_url,
            sabotage: args.sabotage,
            counters: &counters,
        },
    };
    let (tally, (notes, shortfalls)) = thread::scope(|scope| {
        let beside = site.beside.map(|fault| {
            let counters = &counters;
            scope.spawn(move || fault(counters))
        });
        let tally = run.threads(args, path);
        let said = beside.map_or_else(Default::default, |fault| {
            fault
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (tally, said)
    });
    let mut conn = connect_for_check(url).expect("connect for the check");
    let rows = path.values(&mut conn).expect("read the counters");
    let (mut violations, needed) =
        counters::counters(&initial, &rows, &tally.acknowledged, &tally.unknown);
    let labels = counter::labels(&mut conn).expect("read the labels");
    violations.extend(counters::tags(
        &labels,
        &tally.acknowledged,
        &tally.rolled_back,
    ));
    Report {
        backend: site.backend,
        path: name,
        fault_kind: FAULT_KIND,
        notes,
        shortfalls,
        counters,
        violations,
        unknown_applied: needed as usize,
    }
}

/// One run's shared state.
struct Run<'a> {
    deadline: Instant,
    ctx: Ctx<'a>,
}

impl Run<'_> {
    fn threads<P: Path>(&self, args: &Args, path: &P) -> Tally {
        let stop = AtomicBool::new(false);
        let tally = Mutex::new(Tally::default());
        let race = Race::default();
        thread::scope(|scope| {
            if !args.fault_every.is_zero() {
                let stop = &stop;
                scope.spawn(move || self.inject_faults(args, stop));
            }
            let mut threads = Vec::new();
            for racer in 0..2 {
                let (race, tally) = (&race, &tally);
                threads.push(scope.spawn(move || {
                    let mine = self.race(path, racer, race);
                    tally.lock().unwrap().merge(mine);
                }));
            }
            for n in 0..args.workers {
                let tally = &tally;
                let seed = args.seed.wrapping_add(n as u64 * 7919);
                threads.push(scope.spawn(move || {
                    let mine = self.work(path, seed);
                    tally.lock().unwrap().merge(mine);
                }));
            }
            for thread in threads {
                if let Err(panic) = thread.join() {
                    stop.store(true, Ordering::SeqCst);
                    std::panic::resume_unwind(panic);
                }
            }
            stop.store(true, Ordering::SeqCst);
        });
        tally.into_inner().unwrap()
    }

    /// A worker: random rows, random operations, until the deadline.
    fn work<P: Path>(&self, path: &P, seed: u64) -> Tally {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut tally = Tally::default();
        let mut conn = None;
        while Instant::now() < self.deadline {
            let Some(c) = self.connection(path, &mut conn) else {
                continue;
            };
            bump(&self.ctx.counters.operations);
            let row = rng.i32(1..=ROWS);
            match path.read(c, row, rng.u32(..)) {
                Ok(read) => {
                    if !tally.add(path.write(c, read, &self.ctx), self.ctx.counters) {
                        conn = None;
                    }
                }
                Err(error) if refused(&error) => {}
                Err(_) => {
                    bump(&self.ctx.counters.errors);
                    conn = None;
                }
            }
        }
        tally
    }

    /// A racer: rounds on `RACE_ROW` (see the module's doc).
    fn race<P: Path>(&self, path: &P, racer: u32, race: &Race) -> Tally {
        let mut tally = Tally::default();
        let mut conn = None;
        loop {
            race.gate.wait();
            if race.stop.load(Ordering::SeqCst) {
                return tally;
            }
            let mut read = self
                .connection(path, &mut conn)
                .and_then(|c| path.read(c, RACE_ROW, racer).ok());
            race.gate.wait();
            if racer == 0 {
                self.race_write(path, &mut conn, read.take(), &mut tally);
            }
            race.gate.wait();
            if racer == 1 {
                self.race_write(path, &mut conn, read.take(), &mut tally);
            } else {
                // Read by both after the next round's first gate.
                let rounds = race.rounds.fetch_add(1, Ordering::SeqCst) + 1;
                let done = rounds >= 3 && Instant::now() >= self.deadline;
                race.stop.store(done, Ordering::SeqCst);
            }
        }
    }

    fn race_write<P: Path>(
        &self,
        path: &P,
        conn: &mut Option<P::Conn>,
        read: Option<P::Read>,
        tally: &mut Tally,
    ) {
        let (Some(c), Some(read)) = (conn.as_mut(), read) else {
            return;
        };
        bump(&self.ctx.counters.operations);
        if !tally.add(path.write(c, read, &self.ctx), self.ctx.counters) {
            *conn = None;
        }
    }

    /// The connection, made anew when there is none; `None` (after a pause) when
    /// the server refuses one.
    fn connection<'c, P: Path>(
        &self,
        path: &P,
        conn: &'c mut Option<P::Conn>,
    ) -> Option<&'c mut P::Conn> {
        if conn.is_none() {
            match P::Conn::open(path.connects_to(&self.ctx)) {
                Ok(new) => *conn = Some(new),
                Err(_) => {
                    bump(&self.ctx.counters.errors);
                    thread::sleep(Duration::from_millis(5));
                    return None;
                }
            }
        }
        conn.as_mut()
    }

    /// One fault every `--fault-every` until the threads are done.
    fn inject_faults(&self, args: &Args, stop: &AtomicBool) {
        let mut rng = fastrand::Rng::with_seed(args.seed ^ 0xfa17);
        let mut admin = None;
        while !stop.load(Ordering::SeqCst) {
            thread::sleep(args.fault_every);
            if !stop.load(Ordering::SeqCst) && fault(self.ctx.url, &mut admin, &mut rng) {
                bump(&self.ctx.counters.faults);
            }
        }
    }
}

/// The racers' meeting points and their stop decision.
struct Race {
    gate: Barrier,
    stop: AtomicBool,
    rounds: AtomicU64,
}

impl Default for Race {
    fn default() -> Self {
        Race {
            gate: Barrier::new(2),
            stop: AtomicBool::new(false),
            rounds: AtomicU64::new(0),
        }
    }
}

/// The seeded rows' values, for the check.
pub(super) type Values = BTreeMap<i32, i32>;
