//! The retry helpers on the `counters` table, each attempt a new connection:
//!
//! - `retry_escalated`: `blocking::retry` whose attempts are escalated (a locking
//!   transaction, reads `SELECT ... FOR UPDATE`) from the first for half the
//!   operations and after one conflict for the others.
//! - `retry_with_standby`: `blocking::retry_with_standby`, reads from the standby until an
//!   attempt conflicts, saves on the primary. On `--backend pg-replicas` the standby is
//!   the pair's streaming standby, whose reads lag; elsewhere a second source on the
//!   same database.
//!
//! An operation's first attempt saves what the caller read before (the racers' stale
//! read), later ones re-read. The twins save without the token check.

use std::cell::Cell;

use diesel_occ::Error;
use diesel_occ::blocking;
use diesel_occ::prelude::*;

use super::combiner::{policy, settle};
use super::counter::{self, Counter, blind_save};
use super::runner::{Ctx, Outcome, Path};
use super::{Conn, connect};
use crate::check::counters::Write;
use crate::counters::bump;

/// The save of one attempt: `row` + 1, recorded in `last` before it is sent (the
/// change an unknown outcome may have made).
fn save(
    conn: &mut Conn,
    mut row: Counter,
    last: &Cell<Option<Write>>,
    sabotage: bool,
) -> Result<(), Error> {
    last.set(Some(counter::change(&row, row.version, 1)));
    row.value += 1;
    if sabotage {
        blind_save(conn, &mut row)
    } else {
        row.save_checked(conn)
    }
}

/// What the operation's caller was told, from its last attempt's change (as the
/// combiners settle theirs); no change when no attempt got as far as a save.
fn outcome(result: Result<(), Error>, last: Option<Write>) -> Outcome {
    match last {
        Some(change) => settle(result, change),
        None => Outcome::of(result, Vec::new()),
    }
}

/// `blocking::retry`, escalated.
pub(super) struct Escalated;

impl Path for Escalated {
    type Conn = Conn;
    /// The row as read before the operation, and after how many conflicts it escalates.
    type Read = (Counter, u32);

    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<Self::Read, Error> {
        Ok((Counter::find(conn, row)?, kind % 2))
    }

    fn write(&self, _: &mut Conn, (read, after): Self::Read, ctx: &Ctx<'_>) -> Outcome {
        let source = || connect(ctx.url);
        let last = Cell::new(None);
        let policy = policy().escalate_after(after);
        let result = blocking::retry(&source, &policy, |conn, attempt| {
            let row = if attempt.is_first() {
                read.clone()
            } else {
                bump(&ctx.counters.retries);
                attempt.find(conn, read.id)?
            };
            save(conn, row, &last, ctx.sabotage)
        });
        outcome(result, last.take())
    }
}

/// `blocking::retry_with_standby`.
pub(super) struct WithStandby;

impl Path for WithStandby {
    type Conn = Conn;
    /// The row as read from the standby before the operation.
    type Read = Counter;

    /// The threads' connections, which make the operations' first reads, go to the
    /// standby.
    fn connects_to<'a>(&self, ctx: &Ctx<'a>) -> &'a str {
        ctx.standby_url
    }

    fn read(&self, standby: &mut Conn, row: i32, _: u32) -> Result<Counter, Error> {
        Counter::find(standby, row)
    }

    fn write(&self, _: &mut Conn, read: Counter, ctx: &Ctx<'_>) -> Outcome {
        let primary = || connect(ctx.url);
        let standby = || connect(ctx.standby_url);
        let last = Cell::new(None);
        let result =
            blocking::retry_with_standby(&primary, &standby, &policy(), |conns, attempt| {
                let row = if attempt.is_first() {
                    read.clone()
                } else {
                    bump(&ctx.counters.retries);
                    attempt.find(conns.read()?, read.id)?
                };
                save(conns.write()?, row, &last, ctx.sabotage)
            });
        outcome(result, last.take())
    }
}
