//! The `retried` path, the example apps' mix: a fresh database seeded with stock and a
//! concert; the workers, the fault injector and (with `--sabotage`) the saboteurs until
//! the deadline; then the database checked against everything the threads logged
//! (`check.rs`).
//!
//! Every connection of the workers comes from a `MultiHost` source over the database's
//! nodes: one node on a single server, three on the Galera cluster (`galera.rs`), where
//! the retry helper's attempts and the workers' connections spread over the nodes and
//! skip a node that is down.
//!
//! Written once for the connection type `Conn` and the example apps `examples` of the
//! backend module that includes this folder (`postgres.rs`, `mysql.rs`, `sqlite.rs`),
//! as the example apps themselves are.

mod attempts;
mod sabotage;
mod verify;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Barrier, Mutex, RwLock};
use std::thread;
use std::time::Instant;

use diesel::prelude::*;
use diesel_occ::blocking::ConnectionSource;
use diesel_occ::multi_host::MultiHost;
use diesel_occ_examples::schema::inventory as inventory_table;
use diesel_occ_tests::{TestConnection, TestDb};

use self::sabotage::{Rounds, saboteur};
use self::verify::verify;
use self::worker::Worker;
use super::examples::claims::ClaimStats;
use super::examples::inventory::{self, Stock};
use super::examples::{Pool, seat};
use super::{Conn, FAULT_KIND, connect, connect_for_check, examples, fault};
use crate::counters::{Counters, bump};
use crate::options::Args;
use crate::record::Record;
use crate::report::Report;

/// One node's source: a new connection (set up as `connect` does) per checkout.
pub(crate) type NodeSource = Box<dyn Fn() -> ConnectionResult<Conn> + Send + Sync>;

/// Where a run's connections come from, round-robin over the nodes.
pub(crate) type Nodes = MultiHost<NodeSource>;

/// A source over these nodes, each connecting with `connect`.
pub(crate) fn nodes(urls: &[String]) -> Arc<Nodes> {
    Arc::new(Nodes::new(urls.iter().map(|url| {
        let url = url.clone();
        Box::new(move || connect(&url)) as NodeSource
    })))
}

/// Where a run goes.
pub(crate) struct Setup {
    /// The name in the report (`postgres`, ..., `galera`).
    pub(crate) name: &'static str,
    /// The soak database on each node; the first also seeds, and the first that
    /// answers checks.
    pub(crate) urls: Vec<String>,
    /// The source over `urls` (from [`nodes`]).
    pub(crate) nodes: Arc<Nodes>,
    /// Where the seat bookings' r2d2 pool connects (`seat::book` takes one pool).
    pub(crate) pool_url: String,
    /// While set, the threads go on past the deadline (galera: until a restarted node
    /// has served again).
    pub(crate) hold: Arc<AtomicBool>,
}

/// What every worker shares.
pub(crate) struct Shared<'a> {
    /// The first node's URL: seeding, the check.
    pub(crate) url: String,
    /// Every node's URL: the fault injector picks one per fault.
    pub(crate) urls: Vec<String>,
    /// The retry helper's source and the workers' connections.
    pub(crate) nodes: Arc<Nodes>,
    /// What seat bookings check connections out of (`seat::book` retries through it).
    pub(crate) pool: Pool,
    pub(crate) deadline: Instant,
    /// Keeps the threads going past the deadline while set.
    pub(crate) hold: Arc<AtomicBool>,
    pub(crate) counters: &'a Counters,
    pub(crate) live: RwLock<Vec<String>>,
    pub(crate) next_id: AtomicI32,
    pub(crate) concert: AtomicI32,
    pub(crate) claim_stats: ClaimStats,
    /// `--sabotage`: updates skip the token check, to show the check catches it.
    pub(crate) sabotage: bool,
}

impl Shared<'_> {
    /// True before the deadline, and after it while the setup holds the run open.
    pub(crate) fn running(&self) -> bool {
        Instant::now() < self.deadline || self.hold.load(Ordering::SeqCst)
    }

    /// A connection from the next node that answers; `None` when none does.
    pub(crate) fn connect(&self) -> Option<Conn> {
        let pooled = ConnectionSource::checkout(&*self.nodes).ok()?;
        Some(pooled.into_inner().into_inner())
    }
}

/// Runs the workload on this backend's single server; `None` when it could not run
/// (no server).
// galera.rs makes its database on the cluster and calls `run_on` instead.
#[allow(dead_code)]
pub(crate) fn run(args: &Args) -> Option<Report> {
    let backend = Conn::BACKEND;
    let db = TestDb::<Conn>::create(&format!("soak_{backend}"))?;
    let url = db.url().to_owned();
    let urls = vec![url.clone()];
    let setup = Setup {
        name: backend.name(),
        nodes: nodes(&urls),
        urls,
        pool_url: url,
        hold: Arc::default(),
    };
    Some(run_on(args, setup, || {}))
}

/// Runs the workload on `setup`'s database, which it seeds; `before_check` runs after
/// the threads ended, before the check.
pub(crate) fn run_on(args: &Args, setup: Setup, before_check: impl FnOnce()) -> Report {
    let Setup {
        name,
        urls,
        nodes,
        pool_url,
        hold,
    } = setup;
    let url = urls.first().cloned().expect("at least one node");
    let counters = Counters::default();
    let (live, initial) = seed(&url);
    let pool = examples::pool(&pool_url, args.workers as u32).expect("a pool for the bookings");
    let shared = Shared {
        url: url.clone(),
        urls: urls.clone(),
        nodes,
        pool,
        deadline: Instant::now() + args.duration,
        hold,
        counters: &counters,
        live: RwLock::new(live),
        next_id: AtomicI32::new(2),
        concert: AtomicI32::new(1),
        claim_stats: ClaimStats::default(),
        sabotage: args.sabotage,
    };
    let log = run_threads(args, &shared, initial);
    before_check();
    let mut notes = Vec::new();
    if urls.len() > 1 {
        let spread: Vec<String> = shared
            .nodes
            .node_stats()
            .iter()
            .map(|node| {
                format!(
                    "{} served {} failed {}",
                    node.name, node.served, node.failures
                )
            })
            .collect();
        notes.push(format!("checkouts per node: {}", spread.join(", ")));
    }
    let mut conn = urls
        .iter()
        .find_map(|url| connect_for_check(url).ok())
        .expect("connect for the check");
    let (violations, unknown_applied) = verify(&mut conn, &log);
    Report {
        backend: name,
        path: "retried",
        fault_kind: FAULT_KIND,
        notes,
        shortfalls: Vec::new(),
        counters,
        violations,
        unknown_applied,
    }
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
    while !stop.load(Ordering::SeqCst) && shared.running() {
        thread::sleep(args.fault_every);
        // On several nodes, a session of a random node: the admin connection sees only
        // its own node's sessions.
        let url = match shared.urls.len() {
            0 | 1 => &shared.url,
            n => {
                admin = None;
                &shared.urls[rng.usize(..n)]
            }
        };
        if fault(url, &mut admin, &mut rng) {
            bump(&shared.counters.faults);
        }
    }
}
