//! `diesel_occ::transaction`: two rows + 1, saved inside the transaction. Some
//! transactions roll back (the closure returns an error after reordering its
//! entities) or panic (caught here, the connection kept) after saving, and are then
//! run again with the same entities on the same connection: the restored tokens must
//! be the ones read, and the connection must be out of the failed transaction.

use std::panic::{self, AssertUnwindSafe};

use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter, blind_save, partner};
use super::runner::{Ctx, Outcome, Path};
use crate::counters::bump;
use crate::run::INJECTED_PANIC;

pub(super) struct Transaction;

/// How the first run of the transaction ends.
#[derive(Clone, Copy)]
pub(super) enum End {
    Commit,
    Rollback,
    Panic,
}

impl End {
    /// One in two commits at once (the racers' kinds 0 and 1 among them), one in four
    /// rolls back, one in four panics.
    pub(super) fn of(kind: u32) -> End {
        match kind % 4 {
            0 | 1 => End::Commit,
            2 => End::Rollback,
            _ => End::Panic,
        }
    }
}

impl Path for Transaction {
    type Conn = Conn;
    type Read = (Vec<Counter>, End);

    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<Self::Read, Error> {
        let (a, b) = (row.min(partner(row)), row.max(partner(row)));
        let rows = vec![Counter::find(conn, a)?, Counter::find(conn, b)?];
        Ok((rows, End::of(kind)))
    }

    fn write(&self, conn: &mut Conn, (mut rows, end): Self::Read, ctx: &Ctx<'_>) -> Outcome {
        let changes: Vec<_> = rows
            .iter_mut()
            .map(|row| {
                row.value += 1;
                counter::change(row, row.version, 1)
            })
            .collect();
        let counters = ctx.counters;
        let first = panic::catch_unwind(AssertUnwindSafe(|| {
            diesel_occ::transaction(conn, &mut rows, |conn, rows| {
                save_all(conn, rows, ctx.sabotage)?;
                match end {
                    End::Commit => Ok(()),
                    End::Rollback => {
                        bump(&counters.rollbacks);
                        rows.reverse();
                        Err(Error::from(diesel::result::Error::RollbackTransaction))
                    }
                    End::Panic => {
                        bump(&counters.panics);
                        panic!("{INJECTED_PANIC}")
                    }
                }
            })
        }));
        let saved = match (first, end) {
            (Ok(result), End::Commit) => result,
            // Rolled back: the same entities again, in the order the closure left.
            (Ok(Err(_)) | Err(_), _) => {
                rows.sort_by_key(|row| row.id);
                diesel_occ::transaction(conn, &mut rows, |conn, rows| {
                    save_all(conn, rows, ctx.sabotage)
                })
            }
            (Ok(Ok(())), _) => unreachable!("the closure returned an error or panicked"),
        };
        Outcome::of(saved, changes)
    }
}

fn save_all(conn: &mut Conn, rows: &mut [Counter], sabotage: bool) -> Result<(), Error> {
    for row in rows {
        if sabotage {
            blind_save(conn, row)?;
        } else {
            row.save_checked(conn)?;
        }
    }
    Ok(())
}
