//! One backend's run: a fresh database seeded with stock and a concert; the workers,
//! the fault injector and (with `--sabotage`) the saboteurs until the deadline; then
//! the database checked against everything the threads logged.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, RwLock};
use std::thread;
use std::time::Instant;

use diesel::prelude::*;
use diesel_occ_examples::claims::ClaimStats;
use diesel_occ_examples::db::Target;
use diesel_occ_examples::inventory::{self, Stock};
use diesel_occ_examples::schema::inventory as inventory_table;
use diesel_occ_examples::seat;
use diesel_occ_tests::{Backend, TestConnection, TestDb};

use crate::options::Args;
use crate::record::Record;
use crate::report::Report;
use crate::retried::{self, Ops};
use crate::sabotage::{Rounds, saboteur};
use crate::verify::verify;
use crate::worker::Worker;

/// What the run did, counted by all threads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) operations: AtomicU64,
    pub(crate) acknowledged: AtomicU64,
    pub(crate) conflicts: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) exhausted: AtomicU64,
    pub(crate) faults: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) unknown_outcome: AtomicU64,
    pub(crate) hostile_refused: AtomicU64,
    pub(crate) fenced: AtomicU64,
}

pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// What every worker shares.
pub(crate) struct Shared<'a> {
    pub(crate) target: Target,
    pub(crate) url: String,
    pub(crate) deadline: Instant,
    pub(crate) counters: &'a Counters,
    pub(crate) live: RwLock<Vec<String>>,
    pub(crate) next_id: AtomicI32,
    pub(crate) concert: AtomicI32,
    pub(crate) claim_stats: ClaimStats,
    /// `--sabotage`: updates skip the token check, to show the check catches it.
    pub(crate) sabotage: bool,
}

/// Runs `backend`; `None` when it could not run (no server, or not built).
pub(crate) fn run(args: &Args, backend: Backend) -> Option<Report> {
    match backend {
        Backend::Postgres => {
            run_backend::<diesel::pg::PgConnection>(args, &retried::pg_ops::ops(), backend)
        }
        #[cfg(feature = "mysql")]
        Backend::Mysql => {
            run_backend::<diesel::mysql::MysqlConnection>(args, &retried::mysql_ops::ops(), backend)
        }
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => {
            eprintln!("mysql: not built (run with --features mysql)");
            None
        }
        Backend::Sqlite => run_backend::<diesel::sqlite::SqliteConnection>(
            args,
            &retried::sqlite_ops::ops(),
            backend,
        ),
    }
}

fn run_backend<C: TestConnection>(args: &Args, ops: &Ops, backend: Backend) -> Option<Report> {
    let db = TestDb::<C>::create(&format!("soak_{backend}"))?;
    let url = db.url().to_owned();
    let target = Target::parse(&url);
    let counters = Counters::default();
    let (live, initial) = seed(&target);
    let shared = Shared {
        target,
        url: url.clone(),
        deadline: Instant::now() + args.duration,
        counters: &counters,
        live: RwLock::new(live),
        next_id: AtomicI32::new(2),
        concert: AtomicI32::new(1),
        claim_stats: ClaimStats::default(),
        sabotage: args.sabotage,
    };
    let log = run_threads(args, ops, &shared, initial);
    let mut conn = shared.target.connect().expect("connect for the check");
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
fn seed(target: &Target) -> (Vec<String>, Vec<Record>) {
    let mut setup = target.connect().expect("connect");
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
fn run_threads(args: &Args, ops: &Ops, shared: &Shared<'_>, initial: Vec<Record>) -> Vec<Record> {
    let stop = AtomicBool::new(false);
    let logs = Mutex::new(vec![initial]);
    let (barrier, rounds) = (Barrier::new(2), Rounds::default());
    thread::scope(|scope| {
        if !args.fault_every.is_zero() {
            let stop = &stop;
            scope.spawn(move || inject_faults(args, ops, shared, stop));
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
                    let log = Worker::new(n, shared, ops, seed).run();
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
fn inject_faults(args: &Args, ops: &Ops, shared: &Shared<'_>, stop: &AtomicBool) {
    let mut rng = fastrand::Rng::with_seed(args.seed ^ 0xfa17);
    let mut admin = None;
    while !stop.load(Ordering::SeqCst) && Instant::now() < shared.deadline {
        thread::sleep(args.fault_every);
        if (ops.fault)(&shared.url, &mut admin, &mut rng) {
            bump(&shared.counters.faults);
        }
    }
}
