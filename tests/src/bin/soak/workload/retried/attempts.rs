//! Checked updates and deletes of `inventory` rows through the retry helper (a new
//! connection per attempt from the next node of the run's `MultiHost` source,
//! escalation after 3 conflicts).

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::Duration;

use diesel::prelude::*;
use diesel_occ::blocking;
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error as OccError, UuidToken, VersionToken};

use super::examples::inventory::Stock;
use super::{Conn, Shared};
use crate::counters::bump;
use crate::record::{Record, Unknown};

/// What one retried operation ended with.
pub(crate) enum Step {
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

/// The step for an update that returned `Some((old, new, available))`, or `None`
/// (not enough stock, or a sabotaged write that matched no row).
fn updated(sku: &str, saved: Option<(UuidToken, UuidToken, i32)>) -> Step {
    match saved {
        None => Step::Nothing,
        Some((old, new, available)) => Step::Ack(Record::Updated {
            sku: sku.to_owned(),
            old,
            new,
            available,
        }),
    }
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

/// `--sabotage`: the plain read-modify-write the library exists to prevent,
/// with no token in the predicate. The check must catch it.
fn blind_write(conn: &mut Conn, sku: &str, stock: &mut Stock) -> QueryResult<usize> {
    use diesel_occ_examples::schema::inventory::dsl;
    stock.version = UuidToken::initial();
    diesel::update(dsl::inventory.find(sku))
        .set((
            dsl::available.eq(stock.available),
            dsl::version.eq(stock.version),
        ))
        .execute(conn)
}

pub(super) fn update(shared: &Shared<'_>, sku: &str, delta: i32) -> Step {
    let attempts = Cell::new(0);
    // The write this attempt may have made, until its outcome is known.
    let pending = Cell::new(None::<Unknown>);
    let result = blocking::retry(&*shared.nodes, &policy(), |conn, attempt| {
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
            let written = blind_write(conn, sku, &mut stock)?;
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
    settle(shared, attempts.get(), result, pending, |saved| {
        updated(sku, saved)
    })
}

pub(super) fn delete(shared: &Shared<'_>, sku: &str) -> Step {
    let attempts = Cell::new(0);
    let pending = Cell::new(None::<UuidToken>);
    let result = blocking::retry(&*shared.nodes, &policy(), |conn, attempt| {
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
