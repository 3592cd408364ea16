//! Soak: many workers, a random mix of checked writes, injected faults, then a check
//! that nothing acknowledged was lost.
//!
//! ```text
//! cargo run --release -p diesel-occ-tests --features mysql --bin soak -- \
//!     --backend all --duration 30s --workers 8
//! ```
//!
//! Options: `--backend postgres,mysql,sqlite|all` (default `all`), `--duration 30s`
//! (per backend; `ms`, `s` or `m`), `--workers 8`, `--fault-every 200ms` (`0` turns
//! faults off, and then the run fails unless `--min-faults 0`), `--seed N`,
//! `--min-acknowledged 100` and `--min-faults 1` (a backend that acknowledged fewer
//! writes or injected fewer faults proves too little: the run fails), and
//! `--sabotage`, which turns the checked updates into plain read-modify-writes without
//! the token in the predicate and adds two writers that read the same row, meet at a
//! barrier and both write it blindly (past the duration if need be, until three rounds
//! have landed): the check must report lost updates and the run must exit with 1 (CI
//! asserts both). Servers come from `OCC_POSTGRES_URL` / `OCC_MYSQL_URL` as for the
//! tests; each backend runs in a fresh database that is dropped afterwards.
//!
//! Workers run on the example schemas until the duration is up:
//!
//! - checked updates and deletes of `inventory` rows through the retry helper (a new
//!   connection per attempt, escalation after 3 conflicts);
//! - client-token edits: a reservation with a token the worker read earlier (often
//!   stale by then), checked before the edit and by the save's predicate, plus hostile
//!   tokens that must be refused with a typed error;
//! - inserts of new `inventory` rows;
//! - work-item claims with short leases, some completed after the lease ran out (the
//!   fencing token must refuse them when the item was claimed again), some replayed;
//! - seat bookings on concerts of 20 seats.
//!
//! Faults: a fault thread kills a random session of the soak database every
//! `--fault-every` (PostgreSQL `pg_terminate_backend`, MariaDB `KILL`); on SQLite it holds
//! the database's write lock for 50 ms instead. Workers reconnect after a failure.
//!
//! Every acknowledged write is logged (the token the ack says the row holds), and so is
//! every write whose outcome is unknown (its connection died after the statement may
//! have been sent). The check afterwards (`check.rs`) rebuilds each `inventory` row's
//! chain of tokens: every acknowledged write must be on it, each unknown write at most
//! once, and the row must end where the chain ends with the value its last write wrote.
//! It counts a violation for: two acknowledged writes from the same token (a lost
//! update); a final state (token and value, or no row) that the acknowledged writes
//! plus at most the unknown ones do not explain; a row holding a value other than its
//! last acknowledged write's; a deleted row that exists; an acknowledged row that
//! vanished; an acknowledgement that did not change the token; a hostile token that was
//! not refused; a broken invariant (stock below zero, a nil token, seats sold plus seats
//! left not equal to capacity, an acknowledged seat or effect missing, an item
//! processed twice, a done item without its effect or with a stale fence).
//!
//! The last lines give one verdict per backend (`soak: postgres: passed`, or
//! `soak: postgres: FAILED: ...` with the number of violations and lost updates, or the
//! evidence that was missing). Exit code 1 when any backend has a violation, 3 when one
//! proved too little (too few acknowledged writes or faults), 2 when a backend could not
//! run.

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ::retry::{self, RetryPolicy};
use diesel_occ::{Error as OccError, UuidToken, VersionToken};
use diesel_occ_examples::claims::{self, ClaimError, ClaimStats, Effect, Status, WorkItem};
use diesel_occ_examples::db::{AnyConnection, Target};
use diesel_occ_examples::inventory::{self, ReserveError, ReserveRequest, Stock};
use diesel_occ_examples::schema::{concerts, inventory as inventory_table, seat_assignments};
use diesel_occ_examples::schema::{work_effects, work_items};
use diesel_occ_examples::seat::{self, Booking, BookingError};
use diesel_occ_tests::{Backend, TestConnection, TestDb};

use record::{Record, Unknown};

mod check;
mod record;

/// Command-line options.
#[derive(Debug, Clone)]
struct Args {
    backends: Vec<Backend>,
    duration: Duration,
    workers: usize,
    fault_every: Duration,
    seed: u64,
    sabotage: bool,
    /// A backend that acknowledged fewer writes proves too little.
    min_acknowledged: u64,
    /// A backend that injected fewer faults proves too little.
    min_faults: u64,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (examples: 500ms, 30s, 2m)");
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |at| text.split_at(at));
    let n: u64 = number.parse().map_err(|_| bad())?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(bad()),
    }
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        backends: Backend::ALL.to_vec(),
        duration: Duration::from_secs(30),
        workers: 8,
        fault_every: Duration::from_millis(200),
        seed: 0x5eed_0cc0,
        sabotage: false,
        min_acknowledged: MIN_ACKNOWLEDGED,
        min_faults: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (flag.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or(format!("{name} needs a value"))
        };
        match name.as_str() {
            "--backend" => {
                let list = value()?;
                args.backends = if list == "all" {
                    Backend::ALL.to_vec()
                } else {
                    list.split(',')
                        .map(|name| {
                            Backend::ALL
                                .into_iter()
                                .find(|b| b.name() == name.trim())
                                .ok_or(format!("unknown backend {name:?}"))
                        })
                        .collect::<Result<_, _>>()?
                };
            }
            "--duration" => args.duration = parse_duration(&value()?)?,
            "--workers" => {
                args.workers = value()?.parse().map_err(|_| "bad --workers")?;
                if args.workers == 0 {
                    return Err("--workers must be at least 1".into());
                }
            }
            "--fault-every" => args.fault_every = parse_duration(&value()?)?,
            "--seed" => args.seed = value()?.parse().map_err(|_| "bad --seed")?,
            "--sabotage" => args.sabotage = true,
            "--min-acknowledged" => {
                args.min_acknowledged = value()?.parse().map_err(|_| "bad --min-acknowledged")?
            }
            "--min-faults" => args.min_faults = value()?.parse().map_err(|_| "bad --min-faults")?,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(args)
}

/// The default `--min-acknowledged`: a debug build's 3-second run on a loaded 2-core
/// machine acknowledges several times this many writes on every backend.
const MIN_ACKNOWLEDGED: u64 = 100;

/// `true` with a chance of `percent` in 100.
fn chance(rng: &mut fastrand::Rng, percent: u32) -> bool {
    rng.u32(..100) < percent
}

/// What the run did, counted by all threads.
#[derive(Debug, Default)]
struct Counters {
    operations: AtomicU64,
    acknowledged: AtomicU64,
    conflicts: AtomicU64,
    retries: AtomicU64,
    exhausted: AtomicU64,
    faults: AtomicU64,
    errors: AtomicU64,
    unknown_outcome: AtomicU64,
    hostile_refused: AtomicU64,
    fenced: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// What every worker shares.
struct Shared<'a> {
    target: Target,
    url: String,
    deadline: Instant,
    counters: &'a Counters,
    live: RwLock<Vec<String>>,
    next_id: AtomicI32,
    concert: AtomicI32,
    claim_stats: ClaimStats,
    /// `--sabotage`: updates skip the token check, to show the check catches it.
    sabotage: bool,
}

/// The backend-specific part: the retry helper on the backend's own connection type
/// and the fault injector.
struct Ops {
    /// A checked update of `sku` by `delta` through the retry helper.
    update: fn(&Shared<'_>, &str, i32) -> Step,
    /// A checked delete of `sku` through the retry helper.
    delete: fn(&Shared<'_>, &str) -> Step,
    /// Injects one fault; returns whether it did.
    fault: fn(&str, &mut Option<AnyConnection>, &mut fastrand::Rng) -> bool,
}

/// What one retried operation ended with.
enum Step {
    Ack(Record),
    Unknown(Record),
    Nothing,
    Failed,
}

const POLICY_ATTEMPTS: u32 = 8;

fn policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(POLICY_ATTEMPTS)
        .backoff(Duration::from_millis(1), Duration::from_millis(20))
        .deadline(Duration::from_secs(3))
        .escalate_after(3)
}

/// Counts the outcome of a retry-helper call and turns it into a step.
fn settle<T>(
    shared: &Shared<'_>,
    attempts: u32,
    result: Result<T, OccError>,
    pending: Option<Record>,
    ack: impl FnOnce(T) -> Step,
) -> Step {
    let c = shared.counters;
    c.retries
        .fetch_add(u64::from(attempts.saturating_sub(1)), Ordering::Relaxed);
    match result {
        Ok(value) => ack(value),
        Err(OccError::RetriesExhausted(_)) => {
            bump(&c.exhausted);
            // The last attempt failed with a conflict (no write) or a transient error,
            // which should mean no effect; a write it may have sent stays unknown all
            // the same, since the check allows an unknown write to have had none.
            pending.map_or(Step::Nothing, Step::Unknown)
        }
        Err(error) if error.is_not_found() || error.is_conflict() => Step::Nothing,
        Err(_) => {
            bump(&c.errors);
            match pending {
                Some(record) => Step::Unknown(record),
                None => Step::Failed,
            }
        }
    }
}

macro_rules! backend_ops {
    ($name:ident, $conn:ty, $setup:expr, $fault:expr) => {
        mod $name {
            use super::*;

            type Conn = $conn;

            fn source(url: &str) -> impl Fn() -> Result<Conn, diesel::ConnectionError> + '_ {
                move || {
                    let mut conn = Conn::establish(url)?;
                    // A session killed right after connecting fails here: an error for
                    // the helper, not a panic.
                    conn.batch_execute($setup)
                        .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
                    Ok(conn)
                }
            }

            pub(super) fn update(shared: &Shared<'_>, sku: &str, delta: i32) -> Step {
                use diesel_occ::prelude::*;
                let attempts = std::cell::Cell::new(0);
                // The write this attempt may have made, until its outcome is known.
                let pending = std::cell::Cell::new(None::<Unknown>);
                let result = retry::retry(&source(&shared.url), &policy(), |conn, attempt| {
                    attempts.set(attempt.number());
                    pending.set(None);
                    let mut stock: Stock = attempt.find(conn, sku.to_owned())?;
                    if stock.available + delta < 0 {
                        return Ok(None);
                    }
                    let old = stock.version;
                    stock.available += delta;
                    let mut write = Unknown::Update {
                        old,
                        new: None,
                        available: stock.available,
                    };
                    pending.set(Some(write));
                    if shared.sabotage {
                        // The plain read-modify-write the library exists to prevent:
                        // no token in the predicate. The check must catch it.
                        use diesel_occ_examples::schema::inventory::dsl;
                        stock.version = UuidToken::initial();
                        let written = diesel::update(dsl::inventory.find(sku))
                            .set((
                                dsl::available.eq(stock.available),
                                dsl::version.eq(stock.version),
                            ))
                            .execute(conn)?;
                        pending.set(None);
                        return Ok((written == 1).then_some((old, stock.version, stock.available)));
                    }
                    let saved = stock.save_checked(conn);
                    if saved.as_ref().is_err_and(|e| e.is_conflict()) {
                        shared.counters.conflicts.fetch_add(1, Ordering::Relaxed);
                        pending.set(None);
                    }
                    saved?;
                    if attempt.is_escalated() {
                        // The commit is still to come: an error now leaves it unknown,
                        // but the token it would leave is known.
                        if let Unknown::Update { new, .. } = &mut write {
                            *new = Some(stock.version);
                        }
                        pending.set(Some(write));
                        return Ok(Some((old, stock.version, stock.available)));
                    }
                    pending.set(None);
                    Ok(Some((old, stock.version, stock.available)))
                });
                let pending = pending.get().map(|write| Record::Unknown {
                    sku: sku.to_owned(),
                    write,
                });
                settle(
                    shared,
                    attempts.get(),
                    result,
                    pending,
                    |saved| match saved {
                        None => Step::Nothing,
                        Some((old, new, available)) => Step::Ack(Record::Updated {
                            sku: sku.to_owned(),
                            old,
                            new,
                            available,
                        }),
                    },
                )
            }

            pub(super) fn delete(shared: &Shared<'_>, sku: &str) -> Step {
                use diesel_occ::prelude::*;
                let attempts = std::cell::Cell::new(0);
                let pending = std::cell::Cell::new(None::<UuidToken>);
                let result = retry::retry(&source(&shared.url), &policy(), |conn, attempt| {
                    attempts.set(attempt.number());
                    pending.set(None);
                    let stock: Stock = attempt.find(conn, sku.to_owned())?;
                    pending.set(Some(stock.version));
                    let deleted = stock.delete_checked(conn);
                    if deleted.as_ref().is_err_and(|e| e.is_conflict()) {
                        shared.counters.conflicts.fetch_add(1, Ordering::Relaxed);
                        pending.set(None);
                    }
                    deleted?;
                    Ok(stock.version)
                });
                let pending = pending.get().map(|old| Record::Unknown {
                    sku: sku.to_owned(),
                    write: Unknown::Delete { old },
                });
                settle(shared, attempts.get(), result, pending, |old| {
                    Step::Ack(Record::Deleted {
                        sku: sku.to_owned(),
                        old,
                    })
                })
            }

            pub(super) fn ops() -> Ops {
                Ops {
                    update,
                    delete,
                    fault: $fault,
                }
            }
        }
    };
}

/// Kills one session of the soak database other than the injector's own.
fn kill_server_session(
    url: &str,
    admin: &mut Option<AnyConnection>,
    rng: &mut fastrand::Rng,
) -> bool {
    use diesel::sql_types::BigInt;

    #[derive(QueryableByName)]
    struct Session {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }
    if admin.is_none() {
        *admin = Target::parse(url).connect().ok();
    }
    let Some(conn) = admin.as_mut() else {
        return false;
    };
    let list = match conn {
        AnyConnection::Postgres(_) => {
            "SELECT CAST(pid AS BIGINT) AS id FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()"
        }
        _ => {
            "SELECT CAST(id AS SIGNED) AS id FROM information_schema.processlist \
             WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        }
    };
    let sessions: Vec<Session> = match diesel::sql_query(list).load(conn) {
        Ok(sessions) => sessions,
        Err(_) => {
            *admin = None;
            return false;
        }
    };
    if sessions.is_empty() {
        return false;
    }
    let victim = sessions[rng.usize(..sessions.len())].id;
    // Counted only when the server says it ended a session: one that ended on its own
    // meanwhile is not a fault this run injected.
    match conn {
        AnyConnection::Postgres(c) => {
            #[derive(QueryableByName)]
            struct Killed {
                #[diesel(sql_type = diesel::sql_types::Bool)]
                killed: bool,
            }
            // `false` when no such session was left to signal.
            diesel::sql_query(format!("SELECT pg_terminate_backend({victim}) AS killed"))
                .get_result::<Killed>(c)
                .is_ok_and(|k| k.killed)
        }
        // An error (1094, unknown thread) when the session had already ended.
        #[cfg(feature = "mysql")]
        AnyConnection::Mysql(c) => c
            .batch_execute(&format!("KILL CONNECTION {victim}"))
            .is_ok(),
        AnyConnection::Sqlite(_) => false,
    }
}

/// SQLite: holds the write lock for 50 ms, so writers wait (or meet a busy error).
fn hold_sqlite_lock(
    url: &str,
    admin: &mut Option<AnyConnection>,
    _rng: &mut fastrand::Rng,
) -> bool {
    if admin.is_none() {
        *admin = Target::parse(url).connect().ok();
        // SQLite's busy handler backs off to 100 ms sleeps, so a waiter that polls with
        // it loses the lock to eight busy writers for seconds: poll every millisecond
        // instead, or a short run injects almost nothing.
        if let Some(AnyConnection::Sqlite(conn)) = admin.as_mut() {
            if conn.batch_execute("PRAGMA busy_timeout = 0").is_err() {
                *admin = None;
            }
        }
    }
    let Some(AnyConnection::Sqlite(conn)) = admin.as_mut() else {
        return false;
    };
    let give_up = Instant::now() + Duration::from_secs(2);
    while conn.batch_execute("BEGIN IMMEDIATE").is_err() {
        if Instant::now() > give_up {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    thread::sleep(Duration::from_millis(50));
    if conn.batch_execute("ROLLBACK").is_err() {
        *admin = None;
    }
    true
}

backend_ops!(
    pg_ops,
    diesel::pg::PgConnection,
    "SET lc_messages TO 'C'",
    kill_server_session
);
#[cfg(feature = "mysql")]
backend_ops!(
    mysql_ops,
    diesel::mysql::MysqlConnection,
    "SET SESSION sql_mode = DEFAULT",
    kill_server_session
);
backend_ops!(
    sqlite_ops,
    diesel::sqlite::SqliteConnection,
    "PRAGMA busy_timeout = 10000",
    hold_sqlite_lock
);

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

/// One worker: a connection for the example apps, its own log and view of tokens.
struct Worker<'s, 'a> {
    n: usize,
    shared: &'s Shared<'a>,
    ops: &'s Ops,
    rng: fastrand::Rng,
    conn: Option<AnyConnection>,
    log: Vec<Record>,
    /// The token this worker's "client" last saw for a SKU (often stale by now).
    views: HashMap<String, UuidToken>,
    seq: u64,
}

impl Worker<'_, '_> {
    fn conn(&mut self) -> Option<&mut AnyConnection> {
        if self.conn.is_none() {
            self.conn = self.shared.target.connect().ok();
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

    fn run(mut self) -> Vec<Record> {
        while Instant::now() < self.shared.deadline {
            bump(&self.shared.counters.operations);
            self.seq += 1;
            match self.rng.u32(..100) {
                0..=29 => {
                    if let Some(sku) = self.random_sku() {
                        let delta = self.rng.i32(-3..=4);
                        let step = (self.ops.update)(self.shared, &sku, delta);
                        self.record(step);
                    }
                }
                30..=34 => {
                    if let Some(sku) = self.random_sku() {
                        let step = (self.ops.delete)(self.shared, &sku);
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
        let refresh = !self.views.contains_key(&sku) || chance(&mut self.rng, 30);
        if refresh {
            let Some(conn) = self.conn() else { return };
            match inventory::stock(conn, &sku) {
                Ok(view) => {
                    let token = UuidToken::decode(&view.token).expect("the app's own token");
                    self.views.insert(sku.clone(), token);
                }
                Err(ReserveError::UnknownSku(_)) => return,
                Err(_) => return self.failed(),
            }
        }
        let token = self.views[&sku];
        let text = token.encode();
        let quantity = self.rng.i32(1..=3);
        let request = ReserveRequest {
            sku: &sku,
            quantity,
            token: Some(&text),
        };
        let Some(conn) = self.conn() else { return };
        let prepared = match inventory::prepare(conn, &request) {
            Ok(prepared) => prepared,
            Err(ReserveError::StaleToken { current }) => {
                bump(&self.shared.counters.conflicts);
                let current = UuidToken::decode(&current).expect("the app's own token");
                self.views.insert(sku, current);
                return;
            }
            Err(ReserveError::UnknownSku(_)) => {
                self.views.remove(&sku);
                return;
            }
            Err(ReserveError::Conflict { .. } | ReserveError::Deleted) => {
                bump(&self.shared.counters.conflicts);
                self.views.remove(&sku);
                return;
            }
            Err(ReserveError::InsufficientStock { .. } | ReserveError::StockGuard) => return,
            Err(ReserveError::Database(_)) => return self.failed(),
            Err(other) => {
                return self.log.push(Record::Unexpected {
                    what: format!("a valid token was refused: {other:?}"),
                });
            }
        };
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

    fn claim(&mut self) {
        let worker = format!("worker-{}", self.n);
        let stats = &self.shared.claim_stats;
        let now = claims::now_ms();
        let Some(conn) = self.conn() else { return };
        let item = match claims::next_claimable(conn, now) {
            Ok(Some(item)) => item,
            Ok(None) => {
                let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
                let pending = WorkItem::pending(id, "soak job");
                let Some(conn) = self.conn() else { return };
                if diesel::insert_into(work_items::table)
                    .values(pending)
                    .execute(conn)
                    .is_err()
                {
                    self.failed();
                }
                return;
            }
            Err(_) => return self.failed(),
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
        let Some(conn) = self.conn() else { return };
        match claims::complete(conn, &lease, stats) {
            Ok(Effect::Applied) => {
                let record = Record::Completed {
                    item: lease.item.id,
                    worker: worker.clone(),
                    fence: lease.fence,
                };
                self.record(Step::Ack(record));
                // A replayed delivery must not apply the effect twice.
                if chance(&mut self.rng, 10) {
                    let Some(conn) = self.conn() else { return };
                    match claims::complete(conn, &lease, stats) {
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

    fn book(&mut self) {
        let concert = self.shared.concert.load(Ordering::SeqCst);
        let buyer = format!("w{}-{}", self.n, self.seq);
        let Some(conn) = self.conn() else { return };
        match seat::book(conn, concert, &buyer, 5) {
            Ok(Booking::Confirmed { seat_no, attempts }) => {
                self.shared
                    .counters
                    .retries
                    .fetch_add(u64::from(attempts - 1), Ordering::Relaxed);
                self.shared
                    .counters
                    .conflicts
                    .fetch_add(u64::from(attempts - 1), Ordering::Relaxed);
                self.record(Step::Ack(Record::Booked {
                    concert,
                    seat_no,
                    buyer,
                }));
            }
            Ok(Booking::SoldOut { .. }) => {
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
            Err(BookingError::GaveUp { attempts }) => {
                self.shared
                    .counters
                    .conflicts
                    .fetch_add(u64::from(attempts), Ordering::Relaxed);
                bump(&self.shared.counters.exhausted);
            }
            Err(BookingError::UnknownConcert(_)) => {}
            Err(_) => self.failed(),
        }
    }
}

/// What the saboteurs share.
#[derive(Default)]
struct Rounds {
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

/// `--sabotage`: one of two writers that read the same row, wait for each other, then
/// both write it back without the token in the predicate. The later write always
/// starts from a token the earlier one has just replaced, so every round in which both
/// land is a lost update; the barrier makes that certain, not a matter of timing.
fn saboteur(shared: &Shared<'_>, barrier: &Barrier, rounds: &Rounds, seed: u64) -> Vec<Record> {
    use diesel_occ_examples::schema::inventory::dsl;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut conn: Option<AnyConnection> = None;
    let mut log = Vec::new();
    loop {
        // Every wait is reached by both threads whatever happened in between: a
        // saboteur that skipped one would leave the other waiting forever.
        if barrier.wait().is_leader() {
            let played = rounds.played.fetch_add(1, Ordering::SeqCst);
            let more = Instant::now() < shared.deadline
                || (rounds.landed.load(Ordering::SeqCst) < MIN_LANDED && played < MAX_LATE_ROUNDS);
            let sku = more.then(|| {
                let live = shared.live.read().unwrap_or_else(|e| e.into_inner());
                rng.choice(live.iter()).cloned()
            });
            *rounds.sku.lock().unwrap_or_else(|e| e.into_inner()) = sku;
        }
        barrier.wait();
        let sku = rounds.sku.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(sku) = sku else { break };
        if conn.is_none() {
            conn = shared.target.connect().ok();
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
        let new = UuidToken::initial();
        let available = stock.available + 1;
        let written = diesel::update(dsl::inventory.find(&sku))
            .set((dsl::available.eq(available), dsl::version.eq(new)))
            .execute(c);
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
                conn = None;
                log.push(Record::Unknown {
                    sku,
                    write: Unknown::Update {
                        old: stock.version,
                        new: Some(new),
                        available,
                    },
                });
            }
        }
    }
    log
}

/// A backend's figures and violations.
struct Report {
    backend: Backend,
    counters: Counters,
    violations: Vec<String>,
    /// Unknown-outcome writes the check needed to explain the rows.
    unknown_applied: usize,
}

fn run_backend<C: TestConnection>(args: &Args, ops: &Ops, backend: Backend) -> Option<Report> {
    let db = TestDb::<C>::create(&format!("soak_{backend}"))?;
    let url = db.url().to_owned();
    let target = Target::parse(&url);
    let counters = Counters::default();
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
    drop(setup);
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
    let stop = AtomicBool::new(false);
    let logs = Mutex::new(vec![initial]);
    let (barrier, rounds) = (Barrier::new(2), Rounds::default());
    thread::scope(|scope| {
        if !args.fault_every.is_zero() {
            let (shared, stop) = (&shared, &stop);
            scope.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(args.seed ^ 0xfa17);
                let mut admin = None;
                while !stop.load(Ordering::SeqCst) && Instant::now() < shared.deadline {
                    thread::sleep(args.fault_every);
                    if (ops.fault)(&shared.url, &mut admin, &mut rng) {
                        bump(&shared.counters.faults);
                    }
                }
            });
        }
        if args.sabotage {
            let (shared, logs) = (&shared, &logs);
            let (barrier, rounds) = (&barrier, &rounds);
            for n in 0..2 {
                scope.spawn(move || {
                    let log = saboteur(shared, barrier, rounds, args.seed ^ (0x5ab0 + n));
                    logs.lock().unwrap().push(log);
                });
            }
        }
        let workers: Vec<_> = (0..args.workers)
            .map(|n| {
                let (shared, logs) = (&shared, &logs);
                scope.spawn(move || {
                    let worker = Worker {
                        n,
                        shared,
                        ops,
                        rng: fastrand::Rng::with_seed(args.seed.wrapping_add(n as u64 * 7919)),
                        conn: None,
                        log: Vec::new(),
                        views: HashMap::new(),
                        seq: 0,
                    };
                    let log = worker.run();
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
    let log: Vec<Record> = logs.into_inner().unwrap().into_iter().flatten().collect();
    let mut conn = shared.target.connect().expect("connect for the check");
    let (violations, unknown_applied) = verify(&mut conn, &log);
    Some(Report {
        backend,
        counters,
        violations,
        unknown_applied,
    })
}

/// Checks the database against the log; returns the violations and how many
/// unknown-outcome writes the explanation of the rows needed.
fn verify(conn: &mut AnyConnection, log: &[Record]) -> (Vec<String>, usize) {
    let mut violations = Vec::new();
    let applied = verify_inventory(conn, log, &mut violations);
    verify_claims(conn, log, &mut violations);
    verify_seats(conn, log, &mut violations);
    for record in log {
        if let Record::Unexpected { what } = record {
            violations.push(what.clone());
        }
    }
    (violations, applied)
}

/// Returns how many unknown-outcome writes the explanation of the rows needed.
fn verify_inventory(
    conn: &mut AnyConnection,
    log: &[Record],
    violations: &mut Vec<String>,
) -> usize {
    let rows: BTreeMap<String, (i32, UuidToken)> = inventory_table::table
        .select(Stock::as_select())
        .load(conn)
        .expect("inventory rows")
        .into_iter()
        .map(|s| (s.sku, (s.available, s.version)))
        .collect();
    let (found, applied) = check::inventory(&rows, log);
    violations.extend(found);
    applied
}

fn verify_claims(conn: &mut AnyConnection, log: &[Record], violations: &mut Vec<String>) {
    let items: BTreeMap<i32, WorkItem> = work_items::table
        .select(WorkItem::as_select())
        .load(conn)
        .expect("work items")
        .into_iter()
        .map(|item| (item.id, item))
        .collect();
    let effects: BTreeMap<i32, (String, i64)> = work_effects::table
        .select((
            work_effects::item_id,
            work_effects::worker,
            work_effects::fence,
        ))
        .load::<(i32, String, i64)>(conn)
        .expect("work effects")
        .into_iter()
        .map(|(item, worker, fence)| (item, (worker, fence)))
        .collect();
    for (id, item) in &items {
        match (item.status, effects.get(id)) {
            (Status::Done, None) => violations.push(format!("item {id}: done without its effect")),
            (Status::Done, Some((_, fence))) if *fence != item.fence => violations.push(format!(
                "item {id}: effect recorded at fence {fence}, item at fence {}",
                item.fence
            )),
            (status, Some(_)) if status != Status::Done => {
                violations.push(format!("item {id}: effect recorded but item not done"))
            }
            _ => {}
        }
    }
    let mut completed: HashMap<i32, usize> = HashMap::new();
    for record in log {
        if let Record::Completed {
            item,
            worker,
            fence,
        } = record
        {
            *completed.entry(*item).or_default() += 1;
            if effects.get(item) != Some(&(worker.clone(), *fence)) {
                violations.push(format!(
                    "item {item}: acknowledged completion by {worker} at fence {fence} \
                     is not the recorded effect"
                ));
            }
        }
    }
    for (item, times) in completed {
        if times > 1 {
            violations.push(format!("item {item}: processed {times} times"));
        }
    }
}

fn verify_seats(conn: &mut AnyConnection, log: &[Record], violations: &mut Vec<String>) {
    let concerts: Vec<(i32, i32, i32)> = concerts::table
        .select((concerts::id, concerts::capacity, concerts::available))
        .load(conn)
        .expect("concerts");
    let seats: HashMap<(i32, i32), String> = seat_assignments::table
        .select((
            seat_assignments::concert_id,
            seat_assignments::seat_no,
            seat_assignments::buyer,
        ))
        .load::<(i32, i32, String)>(conn)
        .expect("seat assignments")
        .into_iter()
        .map(|(concert, seat, buyer)| ((concert, seat), buyer))
        .collect();
    for (id, capacity, available) in concerts {
        let sold = seats.keys().filter(|(c, _)| *c == id).count() as i32;
        if available < 0 || available + sold != capacity {
            violations.push(format!(
                "concert {id}: {sold} seats sold and {available} left of {capacity}"
            ));
        }
    }
    for record in log {
        if let Record::Booked {
            concert,
            seat_no,
            buyer,
        } = record
        {
            if seats.get(&(*concert, *seat_no)) != Some(buyer) {
                violations.push(format!(
                    "concert {concert}: acknowledged seat {seat_no} for {buyer} is not theirs"
                ));
            }
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("error: {message}");
            }
            eprintln!(
                "usage: soak [--backend all|postgres,mysql,sqlite] [--duration 30s] \
                 [--workers 8] [--fault-every 200ms] [--seed N] [--sabotage] \
                 [--min-acknowledged {MIN_ACKNOWLEDGED}] [--min-faults 1]"
            );
            return ExitCode::from(2);
        }
    };
    let mut failed = false;
    let mut too_little = false;
    let mut unavailable = false;
    let mut verdicts = Vec::new();
    for backend in args.backends.clone() {
        let started = Instant::now();
        let report = match backend {
            Backend::Postgres => {
                run_backend::<diesel::pg::PgConnection>(&args, &pg_ops::ops(), backend)
            }
            #[cfg(feature = "mysql")]
            Backend::Mysql => {
                run_backend::<diesel::mysql::MysqlConnection>(&args, &mysql_ops::ops(), backend)
            }
            #[cfg(not(feature = "mysql"))]
            Backend::Mysql => {
                eprintln!("mysql: not built (run with --features mysql)");
                None
            }
            Backend::Sqlite => {
                run_backend::<diesel::sqlite::SqliteConnection>(&args, &sqlite_ops::ops(), backend)
            }
        };
        let Some(report) = report else {
            unavailable = true;
            continue;
        };
        let c = &report.counters;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let fault_kind = match report.backend {
            Backend::Sqlite => "write lock held 50 ms",
            _ => "sessions killed",
        };
        println!(
            "{}: {:.1}s, {} workers: {} operations, {} acknowledged writes, {} conflicts, \
             {} retries, {} retries exhausted, {} faults injected ({fault_kind}), {} errors \
             from faults, {} writes with unknown outcome ({} of them needed to explain the \
             rows), {} hostile tokens refused, {} fenced completions, {} violations",
            report.backend,
            started.elapsed().as_secs_f64(),
            args.workers,
            get(&c.operations),
            get(&c.acknowledged),
            get(&c.conflicts),
            get(&c.retries),
            get(&c.exhausted),
            get(&c.faults),
            get(&c.errors),
            get(&c.unknown_outcome),
            report.unknown_applied,
            get(&c.hostile_refused),
            get(&c.fenced),
            report.violations.len(),
        );
        for violation in report.violations.iter().take(50) {
            println!("  VIOLATION {violation}");
        }
        let shortfalls = check::evidence(
            get(&c.acknowledged),
            args.min_acknowledged,
            get(&c.faults),
            args.min_faults,
        );
        verdicts.push(if !report.violations.is_empty() {
            failed = true;
            let lost = report
                .violations
                .iter()
                .filter(|v| v.contains("lost update:"))
                .count();
            format!(
                "soak: {}: FAILED: {} violations ({lost} lost updates)",
                report.backend,
                report.violations.len()
            )
        } else if !shortfalls.is_empty() {
            too_little = true;
            format!(
                "soak: {}: FAILED: too little evidence: {}",
                report.backend,
                shortfalls.join(", ")
            )
        } else {
            format!("soak: {}: passed", report.backend)
        });
    }
    for verdict in &verdicts {
        println!("{verdict}");
    }
    if failed {
        ExitCode::from(1)
    } else if too_little {
        ExitCode::from(3)
    } else if unavailable {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
