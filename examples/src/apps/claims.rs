//! Work items claimed by competing workers, with leases and fencing tokens.
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

mod error;
mod lease;
mod pool;
mod status;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::prelude::*;
use diesel_occ::Error as OccError;
use diesel_occ::prelude::*;

pub use self::error::ClaimError;
use self::error::database;
pub use self::lease::{LeaseReport, lease_expiry, walkthrough};
pub use self::pool::{PoolReport, Schedule, run_pool};
pub use self::status::Status;
use super::{Conn, Pool};
use crate::repository::Repository;
use crate::schema::{work_effects, work_items};

/// Every read by key and checked write of a work item goes through this repository.
const ITEMS: Repository<WorkItem> = Repository::new();

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

/// A new item as a producer enqueues it: pending, never fenced, no lease, and no token,
/// which the repository's create adds.
#[derive(Debug, Insertable)]
#[diesel(table_name = work_items)]
struct NewWorkItem {
    id: i32,
    payload: String,
    status: Status,
    fence: i64,
}

impl NewWorkItem {
    fn pending(id: i32, payload: String) -> NewWorkItem {
        NewWorkItem {
            id,
            payload,
            status: Status::Pending,
            fence: 0,
        }
    }
}

impl WorkItem {
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

/// Counters that make races visible: a `claim_conflict_total`.
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

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Inserts pending items `1..=count`.
pub fn enqueue(conn: &mut Conn, count: i32) -> Result<(), ClaimError> {
    for id in 1..=count {
        enqueue_item(conn, id, &format!("send invoice #{id}"))?;
    }
    Ok(())
}

/// Inserts one pending item, with its initial token, through the repository.
pub fn enqueue_item(conn: &mut Conn, id: i32, payload: &str) -> Result<(), ClaimError> {
    let item = NewWorkItem::pending(id, payload.to_owned());
    ITEMS.create_from(conn, item).map(drop).map_err(database)
}

/// Reads one item.
pub fn load(conn: &mut Conn, id: i32) -> Result<WorkItem, ClaimError> {
    ITEMS.get(conn, id).map_err(|error| match error {
        OccError::NotFound(_) => ClaimError::UnknownItem(id),
        other => database(other),
    })
}

/// The oldest item a worker may claim at `now`: pending, or processing under an
/// expired lease. A query over the queue, not a read by key, so it is Diesel's own;
/// the claim that follows goes through the repository.
pub fn next_claimable(conn: &mut Conn, now: i64) -> Result<Option<WorkItem>, ClaimError> {
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
/// on. The save is `save_checked_where` with the status that was read as its predicate,
/// beside the key and the token, as in MongoDB's
/// `findOneAndUpdate({ _id, status: "PENDING", version })`.
pub fn claim(
    conn: &mut Conn,
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

    match ITEMS.save_where(conn, &mut claimed, work_items::status.eq(item.status)) {
        Ok(()) => {}
        Err(error) if error.is_conflict() => {
            ClaimStats::bump(&stats.claim_conflicts);
            tracing::debug!(item = item.id, worker, "claim lost to another worker");
            return Ok(None);
        }
        Err(error) => return Err(database(error)),
    }
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
    conn: &mut Conn,
    item_id: i32,
    worker: &str,
    fence: i64,
) -> Result<Effect, ClaimError> {
    // A savepoint, so a refused insert does not abort an enclosing transaction.
    let inserted = conn.transaction(|conn| {
        // Plain insert on purpose: work_effects is an append-only effects log, not Versioned.
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
/// and, through `save_checked_where`, its fencing token in the predicate, then applies
/// the handler's effect.
///
/// A worker whose lease expired and whose item was claimed again gets
/// [`ClaimError::Fenced`]; a completion replayed after success gets
/// [`ClaimError::AlreadyCompleted`]. Either way nothing is written.
pub fn complete(conn: &mut Conn, lease: &Lease, stats: &ClaimStats) -> Result<Effect, ClaimError> {
    let mut done = lease.item.clone();
    done.status = Status::Done;
    done.lease_owner = None;
    done.lease_expires_at = None;
    let result = conn.transaction::<_, ClaimError, _>(|conn| {
        match ITEMS.save_where(conn, &mut done, work_items::fence.eq(lease.fence)) {
            Ok(()) => {}
            Err(error) if error.is_conflict() => {
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
            Err(error) => return Err(database(error)),
        }
        apply_effect(conn, lease.item.id, &lease.worker, lease.fence)
    });
    if matches!(result, Err(ClaimError::Fenced { .. })) {
        ClaimStats::bump(&stats.fenced);
    }
    result
}

/// Empties the work tables (the apps start from a known state).
pub fn reset(conn: &mut Conn) -> QueryResult<()> {
    diesel::delete(work_effects::table).execute(conn)?;
    diesel::delete(work_items::table).execute(conn).map(drop)
}
