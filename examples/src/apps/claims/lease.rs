//! A worker that pauses past its lease, and the walkthrough of the whole scenario.

use std::io::Write;

use diesel::prelude::*;

use super::{
    ClaimError, ClaimStats, Conn, Effect, Lease, Pool, Schedule, WorkItem, apply_effect, claim,
    complete, database, enqueue, load, now_ms, reset, run_pool,
};
use crate::schema::work_effects;

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
pub fn lease_expiry(conn: &mut Conn, start: i64) -> Result<LeaseReport, ClaimError> {
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
    pool: &Pool,
    workers: usize,
    items: i32,
    out: &mut dyn Write,
) -> crate::AppResult {
    let mut conn = pool.get()?;

    let report = run_pool(pool, workers, items, Schedule::Lockstep)?;
    writeln!(out, "  lockstep (every claim a forced race): {report}")?;
    let report = run_pool(pool, workers, items, Schedule::Free)?;
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
