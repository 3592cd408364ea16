//! A pool of workers claiming items, in lockstep or free-running.

use std::fmt;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use diesel::prelude::*;

use super::{ClaimStats, Pool, Status, claim, complete, enqueue, next_claimable, now_ms, reset};
use crate::schema::{work_effects, work_items};

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
    pool: &Pool,
    workers: usize,
    items: i32,
    schedule: Schedule,
) -> crate::AppResult<PoolReport> {
    let mut conn = pool.get()?;
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
                    let mut conn = pool.get().map_err(|e| e.to_string());
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
