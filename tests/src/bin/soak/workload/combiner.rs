//! `blocking::Combiner`: concurrent `+1`s to one row applied as groups, each group read
//! and saved once with its token check, a new connection per attempt. A group whose
//! save or COMMIT may have reached the server before its connection died must not be
//! run again: the check finds a row that took a change twice.
//!
//! The twin re-introduces that defect: a caller applies its change, then applies it
//! again as if it had not heard the answer, and counts it once.

use std::time::Duration;

use diesel_occ::Error;
use diesel_occ::blocking::Combiner as RowCombiner;
use diesel_occ::retry::RetryPolicy;

use super::counter;
use super::runner::{Ctx, Outcome, Path};
use super::{Conn, connect};
use crate::check::counters::Write;

#[derive(Default)]
pub(super) struct Combiner {
    rows: RowCombiner<super::counter::Counter>,
}

/// The retry policy of the paths whose helpers take their own connections: a few
/// quick attempts, bounded in time.
pub(super) fn policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(8)
        .backoff(Duration::from_millis(1), Duration::from_millis(20))
        .deadline(Duration::from_secs(3))
}

/// What a failed `apply` says about its change.
pub(super) fn settle(result: Result<(), Error>, change: Write) -> Outcome {
    match result {
        Ok(()) => Outcome::Acked(vec![change]),
        // Every attempt met a conflict: nothing was written.
        Err(Error::RetriesExhausted(exhausted)) if exhausted.last_error().is_conflict() => {
            Outcome::Refused
        }
        Err(error) => Outcome::of(Err(error), vec![change]),
    }
}

impl Path for Combiner {
    type Conn = Conn;
    /// The row: the combiner reads it in each attempt of the group.
    type Read = i32;

    fn read(&self, _: &mut Conn, row: i32, _: u32) -> Result<i32, Error> {
        Ok(row)
    }

    fn write(&self, _: &mut Conn, row: i32, ctx: &Ctx<'_>) -> Outcome {
        let source = || connect(ctx.url);
        let tag = counter::next_tag();
        let change = Write {
            row,
            from: None,
            increment: 1,
            tag: Some(tag),
            deletes: false,
        };
        let apply = || {
            self.rows.apply(&source, &policy(), row, move |c| {
                counter::tagged_plus_one(c, tag)
            })
        };
        let mut applied = apply();
        if ctx.sabotage && applied.is_ok() {
            applied = apply();
        }
        settle(applied, change)
    }
}
