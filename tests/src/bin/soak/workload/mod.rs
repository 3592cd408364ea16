//! One backend's run: a fresh database seeded with stock and a concert; the workers,
//! the fault injector and (with `--sabotage`) the saboteurs until the deadline; then
//! the database checked against everything the threads logged.
//!
//! Written once for the connection type `Conn` and the example apps `examples` of the
//! backend module that includes this folder (`postgres.rs`, `mysql.rs`, `sqlite.rs`),
//! as the example apps themselves are.

mod retried;
mod sabotage;
mod verify;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Barrier, Mutex, RwLock};
use std::thread;
use std::time::Instant;

use diesel::prelude::*;
use diesel_occ_examples::schema::inventory as inventory_table;
use diesel_occ_tests::{TestConnection, TestDb};

use self::sabotage::{Rounds, saboteur};
use self::verify::verify;
use self::worker::Worker;
use super::examples::claims::ClaimStats;
use super::examples::inventory::{self, Stock};
use super::examples::{Pool, seat};
use super::{Conn, connect, examples, fault};
use crate::options::Args;
use crate::record::Record;
use crate::report::Report;
use crate::run::{Counters, bump};

/// What every worker shares.
pub(crate) struct Shared<'a> {
    pub(crate) url: String,
    /// What seat bookings check connections out of (`seat::book` retries through it).
    pub(crate) pool: Pool,
    pub(crate) deadline: Instant,
    pub(crate) counters: &'a Counters,
    pub(crate) live: RwLock<Vec<String>>,
    pub(crate) next_id: AtomicI32,
    pub(crate) concert: AtomicI32,
    pub(crate) claim_stats: ClaimStats,
    /// `--sabotage`: updates skip the token check, to show the check catches it.
    pub(crate) sabotage: bool,
}

/// Runs the workload on this backend; `None` when it could not run (no server).
pub(crate) fn run(args: &Args) -> Option<Report> {
    let backend = Conn::BACKEND;
    let db = TestDb::<Conn>::create(&format!("soak_{backend}"))?;
    let url = db.url().to_owned();
    let counters = Counters::default();
    let (live, initial) = seed(&url);
    let pool = examples::pool(&url, args.workers as u32).expect("a pool for the bookings");
    let shared = Shared {
        url: url.clone(),
        pool,
        deadline: Instant::now() + args.duration,
        counters: &counters,
        live: RwLock::new(live),
        next_id: AtomicI32::new(2),
        concert: AtomicI32::new(1),
        claim_stats: ClaimStats::default(),
        sabotage: args.sabotage,
    };
    let log = run_threads(args, &shared, initial);
    let mut conn = connect(&url).expect("connect for the check");
    let (violations, unknown_applied) = verify(&mut conn, &log);
    Some(Report {
        backend,
        counters,
        violations,
        unknown_applied,
    })
}

/// Seeds 40 `inventory` rows and the first concert; returns the live SKUs and the
/// log's first records (the seeded rows as acknowledged inserts).
fn seed(url: &str) -> (Vec<String>, Vec<Record>) {
    let mut setup = connect(url).expect("connect");
    let mut live = Vec::new();
    for i in 0..40 {
        let sku = format!("seed-{i}");
        inventory::add_item(&mut setup, &sku, "seeded", 50).expect("seed inventory");
        live.push(sku);
    }
    let initial: Vec<Record> = inventory_table::table
        .select(Stock::as_select())
        .load(&mut setup)
        .expect("seeded rows")
        .into_iter()
        .map(|stock| Record::Inserted {
            sku: stock.sku,
            token: stock.version,
            available: stock.available,
        })
        .collect();
    seat::create_concert(&mut setup, 1, "soak concert", 20).expect("first concert");
    (live, initial)
}

/// Runs the threads until the deadline; returns all their logs after `initial`.
fn run_threads(args: &Args, shared: &Shared<'_>, initial: Vec<Record>) -> Vec<Record> {
    let stop = AtomicBool::new(false);
    let logs = Mutex::new(vec![initial]);
    let (barrier, rounds) = (Barrier::new(2), Rounds::default());
    thread::scope(|scope| {
        if !args.fault_every.is_zero() {
            let stop = &stop;
            scope.spawn(move || inject_faults(args, shared, stop));
        }
        if args.sabotage {
            let (logs, barrier, rounds) = (&logs, &barrier, &rounds);
            for n in 0..2 {
                scope.spawn(move || {
                    let log = saboteur(shared, barrier, rounds, args.seed ^ (0x5ab0 + n));
                    logs.lock().unwrap().push(log);
                });
            }
        }
        let workers: Vec<_> = (0..args.workers)
            .map(|n| {
                let logs = &logs;
                scope.spawn(move || {
                    let seed = args.seed.wrapping_add(n as u64 * 7919);
                    let log = Worker::new(n, shared, seed).run();
                    logs.lock().unwrap().push(log);
                })
            })
            .collect();
        for worker in workers {
            if worker.join().is_err() {
                logs.lock().unwrap().push(vec![Record::Unexpected {
                    what: "a worker panicked on an unexpected outcome".into(),
                }]);
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
    logs.into_inner().unwrap().into_iter().flatten().collect()
}

/// The fault thread: one fault every `--fault-every` until the workers are done.
fn inject_faults(args: &Args, shared: &Shared<'_>, stop: &AtomicBool) {
    let mut rng = fastrand::Rng::with_seed(args.seed ^ 0xfa17);
    let mut admin = None;
    while !stop.load(Ordering::SeqCst) && Instant::now() < shared.deadline {
        thread::sleep(args.fault_every);
        if fault(&shared.url, &mut admin, &mut rng) {
            bump(&shared.counters.faults);
        }
    }
}
