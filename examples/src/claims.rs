//! Work items claimed by competing workers (seeds/mongodb-lost-update-race), with leases
//! and fencing tokens (seeds/protect-shared-state).
//!
//! - A claim moves an item `PENDING -> PROCESSING` with one conditional UPDATE whose
//!   predicate holds both the status and the token that were read. Of several workers
//!   that read the same item, exactly one UPDATE matches; the others get zero rows,
//!   count a conflict ([`ClaimStats`]) and move on to the next item.
//! - A claim is a lease: it expires, and another worker may then re-claim the item.
//!   Every claim takes the next fencing token (`fence + 1`). Completing an item writes
//!   with the holder's fence in the predicate, so a worker that paused past its lease
//!   and wakes up is rejected ([`ClaimError::Fenced`]) instead of overwriting the new
//!   holder's work.
//! - The handler's effect is keyed by item (`work_effects.item_id` is the primary key):
//!   delivering the same item twice cannot apply it twice.
//!
//! Time is passed in (milliseconds since the Unix epoch), so a lease expiry can be
//! shown and tested without sleeping.

use std::fmt;
use std::io::Write;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::prelude::*;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;
use diesel_occ::Error as OccError;
use diesel_occ::prelude::*;

use crate::db::{AnyConnection, Target};
use crate::schema::{work_effects, work_items};

/// A work item's state, stored as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, AsExpression, FromSqlRow)]
#[diesel(sql_type = Text)]
pub enum Status {
    /// Waiting for a worker.
    Pending,
    /// Claimed by a worker whose lease may or may not have expired.
    Processing,
    /// Handled.
    Done,
}

impl Status {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Processing => "PROCESSING",
            Status::Done => "DONE",
        }
    }
}

impl<DB> ToSql<Text, DB> for Status
where
    DB: Backend,
    str: ToSql<Text, DB>,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
        self.as_str().to_sql(out)
    }
}

impl<DB> FromSql<Text, DB> for Status
where
    DB: Backend,
    String: FromSql<Text, DB>,
{
    fn from_sql(bytes: DB::RawValue<'_>) -> deserialize::Result<Self> {
        match String::from_sql(bytes)?.as_str() {
            "PENDING" => Ok(Status::Pending),
            "PROCESSING" => Ok(Status::Processing),
            "DONE" => Ok(Status::Done),
            other => Err(format!("unknown work item status {other:?}").into()),
        }
    }
}

/// A work item. `version` is the concurrency token, `fence` the fencing token.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = work_items, treat_none_as_null = true)]
pub struct WorkItem {
    /// The key.
    pub id: i32,
    /// What to do.
    pub payload: String,
    /// Where it is in its life.
    pub status: Status,
    /// The worker holding the lease, while `PROCESSING`.
    pub lease_owner: Option<String>,
    /// When the lease ends (ms since the Unix epoch), while `PROCESSING`.
    pub lease_expires_at: Option<i64>,
    /// The fencing token of the latest claim; 0 before the first.
    pub fence: i64,
    /// The concurrency token.
    #[occ(version)]
    pub version: i64,
}

impl WorkItem {
    /// A new pending item.
    pub fn pending(id: i32, payload: &str) -> WorkItem {
        WorkItem {
            id,
            payload: payload.to_owned(),
            status: Status::Pending,
            lease_owner: None,
            lease_expires_at: None,
            fence: 0,
            version: 1,
        }
    }

    /// Pending, or processing under a lease that has expired at `now`.
    pub fn is_claimable(&self, now: i64) -> bool {
        match self.status {
            Status::Pending => true,
            Status::Processing => self.lease_expires_at.is_none_or(|end| end <= now),
            Status::Done => false,
        }
    }
}

/// A worker's claim on an item: valid until `expires_at`, and only while `fence` is
/// the item's latest fencing token.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    /// The item as this worker claimed it (holding the token its claim wrote).
    pub item: WorkItem,
    /// The worker.
    pub worker: String,
    /// This claim's fencing token.
    pub fence: i64,
    /// When the lease ends (ms since the Unix epoch).
    pub expires_at: i64,
}

/// Counters that make races visible: the seed's `claim_conflict_total`.
#[derive(Debug, Default)]
pub struct ClaimStats {
    /// Claims that lost the race: the conditional UPDATE matched no row.
    pub claim_conflicts: AtomicU64,
    /// Claims won.
    pub claims: AtomicU64,
    /// Completions refused because the worker's fencing token was stale.
    pub fenced: AtomicU64,
}

impl ClaimStats {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// `(claims, claim conflicts, fenced completions)` read now.
    pub fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.claims.load(Ordering::Relaxed),
            self.claim_conflicts.load(Ordering::Relaxed),
            self.fenced.load(Ordering::Relaxed),
        )
    }
}

/// What a completion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The handler's effect was recorded now.
    Applied,
    /// The effect was already recorded (a duplicate delivery): nothing happened twice.
    AlreadyApplied,
}

/// Why a claim or a completion failed. Nothing was written.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClaimError {
    /// No such item.
    UnknownItem(i32),
    /// The item is done, or leased to someone else until its lease expires.
    NotClaimable {
        /// The item's status.
        status: Status,
    },
    /// The worker's fencing token is stale: its lease expired and the item was claimed
    /// again (or completed) since.
    Fenced {
        /// The worker's fence.
        mine: i64,
        /// The item's fence now.
        current: i64,
        /// Who holds the item now, if anyone.
        holder: Option<String>,
    },
    /// The item was already completed under this lease (a replayed completion).
    AlreadyCompleted,
    /// The item changed under the lease without a new claim: a writer that bypassed
    /// the protocol.
    Changed,
    /// The database failed; the text names only the kind of failure.
    Database(String),
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::UnknownItem(id) => write!(f, "unknown work item {id}"),
            ClaimError::NotClaimable {
                status: Status::Processing,
            } => f.write_str("another worker's lease on the item has not expired"),
            ClaimError::NotClaimable { status } => {
                write!(f, "the item is {} and not claimable", status.as_str())
            }
            ClaimError::Fenced {
                mine,
                current,
                holder,
            } => {
                write!(
                    f,
                    "stale fencing token {mine}: the item is now at fence {current}"
                )?;
                match holder {
                    Some(holder) => write!(f, ", held by {holder}"),
                    None => Ok(()),
                }
            }
            ClaimError::AlreadyCompleted => f.write_str("the item was already completed"),
            ClaimError::Changed => f.write_str("the item changed under the lease"),
            ClaimError::Database(kind) => write!(f, "database error: {kind}"),
        }
    }
}

impl std::error::Error for ClaimError {}

impl From<diesel::result::Error> for ClaimError {
    fn from(error: diesel::result::Error) -> Self {
        database(error)
    }
}

fn database(error: impl Into<OccError>) -> ClaimError {
    match error.into() {
        OccError::Database(error) => ClaimError::Database(error.kind().to_owned()),
        OccError::NotFound(_) => ClaimError::Database("row not found".into()),
        other => ClaimError::Database(other.to_string()),
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Inserts pending items `1..=count`.
pub fn enqueue(conn: &mut AnyConnection, count: i32) -> Result<(), ClaimError> {
    let items: Vec<_> = (1..=count)
        .map(|id| WorkItem::pending(id, &format!("send invoice #{id}")))
        .collect();
    // One row per statement: SQLite's multi-row insert differs per backend in Diesel.
    for item in items {
        diesel::insert_into(work_items::table)
            .values(item)
            .execute(conn)
            .map_err(database)?;
    }
    Ok(())
}

/// Reads one item.
pub fn load(conn: &mut AnyConnection, id: i32) -> Result<WorkItem, ClaimError> {
    WorkItem::find(conn, id).map_err(|error| match error {
        OccError::NotFound(_) => ClaimError::UnknownItem(id),
        other => database(other),
    })
}

/// The oldest item a worker may claim at `now`: pending, or processing under an
/// expired lease.
pub fn next_claimable(conn: &mut AnyConnection, now: i64) -> Result<Option<WorkItem>, ClaimError> {
    use crate::schema::work_items::dsl::*;
    let expired = status
        .eq(Status::Processing)
        .and(lease_expires_at.le(now).or(lease_expires_at.is_null()));
    work_items
        .filter(status.eq(Status::Pending).or(expired))
        .order(id)
        .select(WorkItem::as_select())
        .first(conn)
        .optional()
        .map_err(database)
}

/// Claims `item` (as this worker read it) for `lease_ms` milliseconds.
///
/// `Ok(None)`: another worker's claim won; the conflict is counted and the caller moves
/// on. The UPDATE is the one `save_checked` would run (key and token in the predicate,
/// a fresh token written), with the status that was read added to the predicate, as in
/// the seed's `findOneAndUpdate({ _id, status: "PENDING", version })`.
pub fn claim(
    conn: &mut AnyConnection,
    item: &WorkItem,
    worker: &str,
    now: i64,
    lease_ms: i64,
    stats: &ClaimStats,
) -> Result<Option<Lease>, ClaimError> {
    if !item.is_claimable(now) {
        return Err(ClaimError::NotClaimable {
            status: item.status,
        });
    }
    let mut claimed = item.clone();
    claimed.status = Status::Processing;
    claimed.lease_owner = Some(worker.to_owned());
    claimed.lease_expires_at = Some(now + lease_ms);
    claimed.fence = item.fence + 1;

    let fresh = claimed.fresh_token().map_err(database)?;
    let updated = claimed
        .update_statement(&fresh)
        .filter(work_items::status.eq(item.status))
        .execute(conn)
        .map_err(database)?;
    if updated == 0 {
        ClaimStats::bump(&stats.claim_conflicts);
        tracing::debug!(item = item.id, worker, "claim lost to another worker");
        return Ok(None);
    }
    claimed.set_token(fresh);
    ClaimStats::bump(&stats.claims);
    Ok(Some(Lease {
        fence: claimed.fence,
        expires_at: now + lease_ms,
        worker: worker.to_owned(),
        item: claimed,
    }))
}

/// The handler: records the item's effect once. A second delivery of the same item
/// finds the effect recorded (the primary key refuses a second row) and does nothing.
pub fn apply_effect(
    conn: &mut AnyConnection,
    item_id: i32,
    worker: &str,
    fence: i64,
) -> Result<Effect, ClaimError> {
    // A savepoint, so a refused insert does not abort an enclosing transaction.
    let inserted = conn.transaction(|conn| {
        diesel::insert_into(work_effects::table)
            .values((
                work_effects::item_id.eq(item_id),
                work_effects::worker.eq(worker),
                work_effects::fence.eq(fence),
            ))
            .execute(conn)
    });
    match inserted {
        Ok(_) => Ok(Effect::Applied),
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) => Ok(Effect::AlreadyApplied),
        Err(error) => Err(database(error)),
    }
}

/// Completes a leased item: in one transaction, marks it `DONE` with the lease's token
/// and fencing token in the predicate, then applies the handler's effect.
///
/// A worker whose lease expired and whose item was claimed again gets
/// [`ClaimError::Fenced`]; a completion replayed after success gets
/// [`ClaimError::AlreadyCompleted`]. Either way nothing is written.
pub fn complete(
    conn: &mut AnyConnection,
    lease: &Lease,
    stats: &ClaimStats,
) -> Result<Effect, ClaimError> {
    let mut done = lease.item.clone();
    done.status = Status::Done;
    done.lease_owner = None;
    done.lease_expires_at = None;
    let fresh = done.fresh_token().map_err(database)?;
    let result = conn.transaction::<_, ClaimError, _>(|conn| {
        let updated = done
            .update_statement(&fresh)
            .filter(work_items::fence.eq(lease.fence))
            .execute(conn)
            .map_err(database)?;
        if updated == 0 {
            let now = load(conn, lease.item.id)?;
            return Err(if now.fence != lease.fence {
                ClaimError::Fenced {
                    mine: lease.fence,
                    current: now.fence,
                    holder: now.lease_owner,
                }
            } else if now.status == Status::Done {
                ClaimError::AlreadyCompleted
            } else {
                ClaimError::Changed
            });
        }
        apply_effect(conn, lease.item.id, &lease.worker, lease.fence)
    });
    if matches!(result, Err(ClaimError::Fenced { .. })) {
        ClaimStats::bump(&stats.fenced);
    }
    result
}

/// Empties the work tables (the apps start from a known state).
pub fn reset(conn: &mut AnyConnection) -> QueryResult<()> {
    diesel::delete(work_effects::table).execute(conn)?;
    diesel::delete(work_items::table).execute(conn).map(drop)
}

/// How the workers take turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// In rounds: every worker reads the next item, they meet at a barrier, then all
    /// claim it. Every round is a forced race: exactly one winner, `workers - 1`
    /// conflicts.
    Lockstep,
    /// Each worker loops on its own; how often they collide depends on timing.
    Free,
}

/// What a pool of workers did.
#[derive(Debug)]
pub struct PoolReport {
    /// Items enqueued.
    pub items: usize,
    /// Items each worker completed, in worker order.
    pub completed_by: Vec<usize>,
    /// Effects recorded (one per item when every item was processed exactly once).
    pub effects: usize,
    /// Items left not `DONE`.
    pub unfinished: usize,
    /// Claims that lost a race.
    pub claim_conflicts: u64,
    /// Errors met by workers (the text names only the kind of failure).
    pub errors: Vec<String>,
}

/// `4 workers, 6 items: 6 processed exactly once, 18 claim conflicts`.
impl fmt::Display for PoolReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: usize = self.completed_by.iter().sum();
        write!(
            f,
            "{} workers, {} items: {} processed",
            self.completed_by.len(),
            self.items,
            total
        )?;
        if total == self.items && self.effects == self.items && self.unfinished == 0 {
            f.write_str(" exactly once")?;
        } else {
            write!(
                f,
                " ({} effects, {} unfinished)",
                self.effects, self.unfinished
            )?;
        }
        write!(f, ", {} claim conflicts", self.claim_conflicts)?;
        if !self.errors.is_empty() {
            write!(f, ", {} errors", self.errors.len())?;
        }
        Ok(())
    }
}

/// Enqueues `items` items and lets `workers` workers (one connection each) process
/// them under `schedule`.
pub fn run_pool(
    target: &Target,
    workers: usize,
    items: i32,
    schedule: Schedule,
) -> crate::AppResult<PoolReport> {
    let mut conn = target.connect()?;
    reset(&mut conn)?;
    enqueue(&mut conn, items)?;

    let stats = ClaimStats::default();
    let barrier = Barrier::new(workers);
    let failed = AtomicBool::new(false);
    const LEASE_MS: i64 = 60_000;

    let results: Vec<Result<usize, String>> = thread::scope(|scope| {
        let handles: Vec<_> = (1..=workers)
            .map(|n| {
                let (stats, barrier, failed) = (&stats, &barrier, &failed);
                scope.spawn(move || {
                    let worker = format!("worker-{n}");
                    let mut conn = target.connect().map_err(|e| e.to_string());
                    let mut completed = 0;
                    let mut error = None;
                    loop {
                        if schedule == Schedule::Lockstep {
                            barrier.wait();
                            // Everyone sees a failure after the same barrier, so no
                            // worker is left waiting for the others.
                            if failed.load(Ordering::SeqCst) {
                                break;
                            }
                        }
                        let step = conn.as_mut().map_err(|e| e.clone()).and_then(|conn| {
                            next_claimable(conn, now_ms()).map_err(|e| e.to_string())
                        });
                        if schedule == Schedule::Lockstep {
                            barrier.wait();
                        }
                        let item = match step {
                            Ok(Some(item)) => item,
                            Ok(None) => break,
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                error = Some(e);
                                if schedule == Schedule::Lockstep {
                                    continue;
                                }
                                break;
                            }
                        };
                        let Ok(conn) = conn.as_mut() else { continue };
                        let worked = claim(conn, &item, &worker, now_ms(), LEASE_MS, stats)
                            .and_then(|lease| match lease {
                                Some(lease) => complete(conn, &lease, stats).map(Some),
                                None => Ok(None),
                            });
                        match worked {
                            Ok(Some(_)) => completed += 1,
                            Ok(None) => {}
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                error = Some(e.to_string());
                                if schedule == Schedule::Free {
                                    break;
                                }
                            }
                        }
                    }
                    match error {
                        Some(e) => Err(format!("{worker}: {e}")),
                        None => Ok(completed),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker thread panicked"))
            .collect()
    });

    let effects = work_effects::table.count().get_result::<i64>(&mut conn)? as usize;
    let unfinished = work_items::table
        .filter(work_items::status.ne(Status::Done))
        .count()
        .get_result::<i64>(&mut conn)? as usize;
    Ok(PoolReport {
        items: items as usize,
        completed_by: results.iter().map(|r| *r.as_ref().unwrap_or(&0)).collect(),
        effects,
        unfinished,
        claim_conflicts: stats.snapshot().1,
        errors: results.into_iter().filter_map(Result::err).collect(),
    })
}

/// What happened to a worker that paused past its lease.
#[derive(Debug)]
pub struct LeaseReport {
    /// The first worker's lease.
    pub first: Lease,
    /// A claim attempted while the first lease was still valid.
    pub early_claim: Result<Option<Lease>, ClaimError>,
    /// The second worker's lease, taken after the first expired.
    pub second: Lease,
    /// The first worker's completion when it woke up.
    pub late_write: Result<Effect, ClaimError>,
    /// The second worker's completion.
    pub second_write: Result<Effect, ClaimError>,
    /// The item afterwards.
    pub item: WorkItem,
    /// `(worker, fence)` of the recorded effect.
    pub effect: Option<(String, i64)>,
}

/// One item, two workers, and a pause: worker-a claims with a 1 s lease and stalls;
/// worker-c is turned away while the lease holds; at 1.5 s worker-b re-claims the
/// expired lease (fence 2); worker-a wakes at 1.6 s and tries to complete with fence 1.
pub fn lease_expiry(conn: &mut AnyConnection, start: i64) -> Result<LeaseReport, ClaimError> {
    let stats = ClaimStats::default();
    reset(conn).map_err(database)?;
    enqueue(conn, 1)?;

    let seen = load(conn, 1)?;
    let first = claim(conn, &seen, "worker-a", start, 1_000, &stats)?.ok_or(
        ClaimError::Database("worker-a lost an uncontended claim".into()),
    )?;

    let seen = load(conn, 1)?;
    let early_claim = claim(conn, &seen, "worker-c", start + 500, 1_000, &stats);

    let seen = load(conn, 1)?;
    let second = claim(conn, &seen, "worker-b", start + 1_500, 1_000, &stats)?.ok_or(
        ClaimError::Database("worker-b lost an uncontended claim".into()),
    )?;

    let late_write = complete(conn, &first, &stats);
    let second_write = complete(conn, &second, &stats);

    let item = load(conn, 1)?;
    let effect = work_effects::table
        .select((work_effects::worker, work_effects::fence))
        .first::<(String, i64)>(conn)
        .optional()
        .map_err(database)?;
    Ok(LeaseReport {
        first,
        early_claim,
        second,
        late_write,
        second_write,
        item,
        effect,
    })
}

/// The claims walkthrough: a forced race per item, a free-running pool, a duplicate
/// delivery and an expired lease.
pub fn walkthrough(
    target: &Target,
    workers: usize,
    items: i32,
    out: &mut dyn Write,
) -> crate::AppResult {
    let mut conn = target.connect_and_migrate()?;

    let report = run_pool(target, workers, items, Schedule::Lockstep)?;
    writeln!(out, "  lockstep (every claim a forced race): {report}")?;
    let report = run_pool(target, workers, items, Schedule::Free)?;
    writeln!(out, "  free-running:                         {report}")?;

    let again = apply_effect(&mut conn, 1, "worker-redelivered", 1)?;
    writeln!(
        out,
        "  item 1 delivered again to its handler: {}",
        match again {
            Effect::Applied => "applied a second time (not idempotent!)",
            Effect::AlreadyApplied => "effect already recorded, nothing done twice",
        }
    )?;

    let lease = lease_expiry(&mut conn, now_ms())?;
    writeln!(
        out,
        "  worker-a claims item 1 with a 1 s lease: fence {}",
        lease.first.fence
    )?;
    writeln!(
        out,
        "  worker-c tries at 0.5 s: {}",
        match &lease.early_claim {
            Ok(Some(_)) => "claimed (lease ignored!)".to_owned(),
            Ok(None) => "lost a race".to_owned(),
            Err(e) => format!("refused: {e}"),
        }
    )?;
    writeln!(
        out,
        "  worker-a pauses; at 1.5 s worker-b re-claims the expired lease: fence {}",
        lease.second.fence
    )?;
    writeln!(
        out,
        "  worker-a wakes and completes: {}",
        match &lease.late_write {
            Ok(_) => "accepted (stale owner wrote!)".to_owned(),
            Err(e) => format!("rejected: {e}"),
        }
    )?;
    writeln!(
        out,
        "  worker-b completes: {}; item {} by {}",
        match &lease.second_write {
            Ok(_) => "accepted".to_owned(),
            Err(e) => format!("rejected: {e}"),
        },
        lease.item.status.as_str(),
        lease
            .effect
            .as_ref()
            .map_or("nobody".to_owned(), |(w, f)| format!("{w} (fence {f})"))
    )?;
    Ok(())
}
