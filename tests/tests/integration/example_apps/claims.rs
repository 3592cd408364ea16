//! Work claims by competing workers, leases and fencing tokens.

use diesel::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_examples::schema::{work_effects, work_items};

use super::super::assert_told;
use super::app_backend::Pool;
use super::app_backend::claims::{self, ClaimError, ClaimStats, Effect, Lease, Schedule, Status};
use super::{Conn, app_backend};

fn enqueue(pool: &Pool, items: i32) {
    claims::enqueue(&mut pool.get().unwrap(), items).unwrap();
}

type Claimed = Result<Option<Lease>, ClaimError>;

/// `item` claimed by `worker` now, for a minute.
fn claim(conn: &mut Conn, item: &claims::WorkItem, worker: &str, stats: &ClaimStats) -> Claimed {
    claims::claim(conn, item, worker, claims::now_ms(), 60_000, stats)
}

#[test]
fn one_item_many_workers_exactly_one_claim() {
    let (_db, pool) = app_db!();
    enqueue(&pool, 1);
    let stats = ClaimStats::default();
    let report = Race::new(4).run(
        |_| {
            let mut conn = pool.get().unwrap();
            let item = claims::load(&mut conn, 1).unwrap();
            (conn, item)
        },
        |n, (mut conn, item)| claim(&mut conn, &item, &format!("worker-{n}"), &stats).unwrap(),
    );
    let leases = report.into_values().unwrap();
    let won: Vec<_> = leases.iter().flatten().collect();
    assert_eq!(won.len(), 1, "exactly one claim: {leases:?}");
    let counts = stats.snapshot();
    assert_eq!(counts, (1, 3, 0), "(claims, claim conflicts, fenced)");

    let item = claims::load(&mut pool.get().unwrap(), 1).unwrap();
    assert_eq!(item.status, Status::Processing);
    assert_eq!(item.lease_owner.as_deref(), Some(won[0].worker.as_str()));
    assert_eq!((item.fence, item.version), (1, won[0].item.version));
}

#[test]
fn status_is_in_the_claim_predicate() {
    // A writer that changes the status without advancing the token (bypassing
    // the protocol) still cannot be overwritten by a claim read before it.
    let (_db, pool) = app_db!();
    enqueue(&pool, 1);
    let mut conn = pool.get().unwrap();
    let read = claims::load(&mut conn, 1).unwrap();
    let row = work_items::table.find(1);
    let done = work_items::status.eq(Status::Done);
    diesel::update(row).set(done).execute(&mut conn).unwrap();
    let stats = ClaimStats::default();
    let lease = claim(&mut conn, &read, "worker-1", &stats).unwrap();
    assert!(lease.is_none(), "the predicate's status refused it");
    assert_eq!(stats.snapshot().1, 1, "counted as a claim conflict");
    assert_eq!(claims::load(&mut conn, 1).unwrap().status, Status::Done);
}

#[test]
fn lockstep_workers_process_every_item_exactly_once() {
    let (_db, pool) = app_db!();
    let report = claims::run_pool(&pool, 4, 6, Schedule::Lockstep).unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.completed_by.iter().sum::<usize>(), 6);
    assert_eq!((report.effects, report.unfinished), (6, 0));
    // Every round is a forced race of 4 workers over one item.
    assert_eq!(report.claim_conflicts, 18);
    assert_eq!(
        report.to_string(),
        "4 workers, 6 items: 6 processed exactly once, 18 claim conflicts"
    );
    let mut conn = pool.get().unwrap();
    let effects: Vec<i32> = work_effects::table
        .select(work_effects::item_id)
        .order(work_effects::item_id)
        .load(&mut conn)
        .unwrap();
    assert_eq!(effects, (1..=6).collect::<Vec<_>>());
}

#[test]
fn free_running_workers_process_every_item_exactly_once() {
    let (_db, pool) = app_db!();
    let report = claims::run_pool(&pool, 4, 12, Schedule::Free).unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.completed_by.iter().sum::<usize>(), 12, "{report}");
    assert_eq!((report.effects, report.unfinished), (12, 0), "{report}");
}

#[test]
fn handler_is_idempotent() {
    let (_db, pool) = app_db!();
    enqueue(&pool, 1);
    let mut conn = pool.get().unwrap();
    let first = claims::apply_effect(&mut conn, 1, "worker-1", 1).unwrap();
    assert_eq!(first, Effect::Applied);
    let second = claims::apply_effect(&mut conn, 1, "worker-2", 1).unwrap();
    assert_eq!(second, Effect::AlreadyApplied);
    let rows: Vec<(String, i64)> = work_effects::table
        .select((work_effects::worker, work_effects::fence))
        .load(&mut conn)
        .unwrap();
    assert_eq!(rows, vec![("worker-1".to_owned(), 1)]);
}

#[test]
fn replayed_completion_does_nothing_twice() {
    let (_db, pool) = app_db!();
    enqueue(&pool, 1);
    let mut conn = pool.get().unwrap();
    let stats = ClaimStats::default();
    let read = claims::load(&mut conn, 1).unwrap();
    let lease = claim(&mut conn, &read, "worker-1", &stats).unwrap();
    let lease = lease.expect("a lease");
    let completed = claims::complete(&mut conn, &lease, &stats).unwrap();
    assert_eq!(completed, Effect::Applied);
    let again = claims::complete(&mut conn, &lease, &stats);
    assert_matches!(again, Err(ClaimError::AlreadyCompleted));
    let effects: i64 = work_effects::table.count().get_result(&mut conn).unwrap();
    assert_eq!(effects, 1);
}

#[test]
fn expired_lease_is_fenced_when_its_worker_wakes() {
    let (_db, pool) = app_db!();
    let mut conn = pool.get().unwrap();
    let report = claims::lease_expiry(&mut conn, 1_000_000).unwrap();
    assert_eq!(report.first.fence, 1);
    assert_matches!(
        report.early_claim,
        Err(ClaimError::NotClaimable { status }) if *status == Status::Processing,
        "a valid lease keeps others out"
    );
    assert_eq!(report.second.fence, 2);
    assert_matches!(
        report.late_write,
        Err(ClaimError::Fenced { mine: 1, current: 2, holder }) if holder.as_deref() == Some("worker-b"),
        "the stale owner is fenced"
    );
    assert_eq!(report.second_write.as_ref().unwrap(), &Effect::Applied);
    assert_eq!(report.item.status, Status::Done);
    let holders = Some(("worker-b".to_owned(), 2));
    assert_eq!(report.effect, holders, "only the holder's effect");
}

#[test]
fn walkthrough_tells_the_whole_story() {
    let (_db, pool) = app_db!();
    let mut out = Vec::new();
    claims::walkthrough(&pool, 3, 4, &mut out).unwrap();
    let told = [
        "3 workers, 4 items: 4 processed exactly once, 8 claim conflicts",
        "effect already recorded, nothing done twice",
        "rejected: stale fencing token 1: the item is now at fence 2, held by worker-b",
        "worker-b completes: accepted; item DONE by worker-b (fence 2)",
    ];
    assert_told(out, &told);
}
