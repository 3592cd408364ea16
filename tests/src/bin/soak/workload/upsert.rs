//! `upsert`: `upsert_checked` of a row that exists, with the token read earlier (an
//! update: `+1`), and the writes that must never touch an existing row: an upsert that
//! expects no row and `insert_checked` / `insert_checked_from` of a taken key, each
//! refused (`insert_checked_from` writes through `InsertableForm::insert_with_token`). The twin writes all four as an unconditional upsert does to an existing
//! row: it overwrites it with the value read `+1` and the next token.
//!
//! Beside them, two faults where the library meets the caller's own code:
//!
//! - **A taken key caught inside a transaction.** `diesel_occ::transaction` saves the
//!   row's child `+1` (only these transactions write the child rows, so a loss there
//!   is theirs), then inserts the row's key again (`insert_checked`,
//!   `insert_checked_from`, `upsert_checked(None)`), matches the taken key
//!   (`Error::UniqueViolation`, or the upsert's conflict) and returns `Ok`: the
//!   library's own outcome must leave the transaction usable, so the save commits.
//!   In as many transactions the caught error is the caller's own: a plain `INSERT` of
//!   the taken key. On PostgreSQL that aborts the transaction, and the helper must say
//!   so (`Err`, the save not in the row); elsewhere only the statement is undone and
//!   the save commits. An `Ok` is an acknowledged `+1`; an error after the closure
//!   returned `Ok`, on a connection that still answers, is a transaction that did not
//!   commit. Each save also appends a tag of its own to the child's label, so the check
//!   sees exactly whether it is there: an acknowledged one must be, one whose
//!   transaction was reported not committed must not (`Outcome::RolledBack`). The
//!   twin runs both through Diesel's own `conn.transaction` with the plain `INSERT`
//!   (the taken key without a savepoint): on PostgreSQL Diesel reports `Ok` for the
//!   transaction the database rolled back, a lost update of the child row. MySQL,
//!   MariaDB and SQLite undo only the failed statement, so this twin loses nothing
//!   there.
//! - **A deleted row upserted from a stale token.** On a row made for it (an id of its
//!   own, `MADE` up), a writer reads the row (token `t`), another deletes it with
//!   `delete_checked` (acknowledged), and the first then calls
//!   `upsert_checked(Some(&t))`: a `Deleted` conflict, never the row again. Whatever
//!   the upsert says, the row must be gone at the end (`check/counters.rs`:
//!   resurrected). In sequence within one worker, so every such operation meets the
//!   fault. The twin upserts by hand: the `UPDATE ... WHERE token = t`, and when it
//!   matched nothing an `INSERT`.

use std::sync::atomic::{AtomicBool, Ordering};

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter, NewCounter, child};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;
use crate::check::counters::Write;
use crate::counters::{Counters, bump};

pub(super) struct Upsert;

/// What a write does with the row it read.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// `upsert_checked(Some(token read))`: updates.
    Update,
    /// `upsert_checked(None)`: the row exists, so it is refused.
    Create,
    /// `insert_checked`: the key is taken, so it is refused.
    Insert,
    /// `insert_checked_from` an `Insertable` struct: the key is taken, so it is refused.
    InsertFrom,
}

/// What a transaction that saves a row's child then writes with the row's taken key,
/// and catches.
#[derive(Clone, Copy)]
pub(super) enum Catch {
    /// `insert_checked`: `Error::UniqueViolation`.
    Insert,
    /// `insert_checked_from`: `Error::UniqueViolation`.
    InsertFrom,
    /// `upsert_checked(None)`: a conflict (the row exists), or a taken key.
    Upsert,
    /// A plain Diesel `INSERT`: the caller's own failed statement.
    Statement,
}

/// One operation of the path, picked by the runner's `kind`.
#[derive(Clone, Copy)]
pub(super) enum Op {
    /// A write of the row read (`Kind`); the racers' kinds 0 and 1 are updates.
    Row(Kind),
    /// A transaction that saves the row's child and catches an error (`Catch`).
    Caught(Catch),
    /// The deleted-row-then-stale-upsert sequence on a row made for it.
    DeletedThenStale,
}

impl Op {
    pub(super) fn of(kind: u32) -> Op {
        match kind % 8 {
            0 | 1 => Op::Row(Kind::Update),
            2 => Op::Row(Kind::Create),
            3 => Op::Row(Kind::Insert),
            4 => Op::Row(Kind::InsertFrom),
            5 => Op::Caught(match kind / 8 % 3 {
                0 => Catch::Insert,
                1 => Catch::InsertFrom,
                _ => Catch::Upsert,
            }),
            6 => Op::Caught(Catch::Statement),
            _ => Op::DeletedThenStale,
        }
    }
}

/// What an operation starts from.
pub(super) enum Read {
    /// The row, and the write to make of it.
    Row(Counter, Kind),
    /// The child row the transaction saves, the taken key it then writes, and how.
    Caught {
        saved: Counter,
        taken: i32,
        catch: Catch,
    },
    /// Nothing yet: the row is made by the write.
    DeletedThenStale,
}

/// The row a write stores: the one it read, `+1`.
pub(super) fn next(read: &Counter) -> Counter {
    Counter {
        value: read.value + 1,
        ..read.clone()
    }
}

/// A row with the key `id`, which is taken: rows `1..=ROWS` are never deleted here.
pub(super) fn taken_row(id: i32) -> Counter {
    Counter {
        id,
        value: 0,
        label: None,
        version: 1,
    }
}

/// The ids of the rows made to be deleted start above every seeded row.
const MADE: i32 = 10_000;

/// A new row for the deleted-row fault, with an id no other row of the run has.
pub(super) fn made_row() -> Counter {
    Counter {
        id: MADE + counter::next_tag() as i32,
        value: 0,
        label: None,
        version: 0,
    }
}

/// The write that made `row` (no counter: the check wants it gone, or named).
pub(super) fn made(row: &Counter) -> Write {
    Write {
        row: row.id,
        from: None,
        increment: 0,
        tag: None,
        deletes: false,
    }
}

/// The checked delete of `read`, for good: acknowledged, the row must stay gone.
pub(super) fn deleted(read: &Counter) -> Write {
    Write {
        deletes: true,
        ..counter::change(read, read.version, 0)
    }
}

/// The transaction's save of `saved`: `+1` and a tag of its own in the label, so that
/// the check sees exactly whether it is in the row.
pub(super) fn tagged_change(saved: &mut Counter) -> Write {
    let tag = counter::next_tag();
    let change = Write {
        tag: Some(tag),
        ..counter::change(saved, saved.version, 1)
    };
    counter::tagged_plus_one(saved, tag);
    change
}

/// What the caller of a transaction that caught an error was told. `Ok`: the save
/// acknowledged. An error after the closure reached its end (`finished`) on a connection
/// that still answers (`answers`, asked only then): the helper reporting a transaction
/// that did not commit, so the save must not be in the row. Any other error as
/// [`Outcome::of`] (a conflict of the save refused, a fault unknown).
pub(super) fn caught_outcome(
    result: Result<(), Error>,
    finished: &AtomicBool,
    answers: impl FnOnce() -> bool,
    change: Write,
    counters: &Counters,
) -> Outcome {
    match result {
        Err(_) if AtomicBool::load(finished, Ordering::SeqCst) && answers() => {
            bump(&counters.rollbacks);
            Outcome::RolledBack(vec![change])
        }
        result => Outcome::of(result, vec![change]),
    }
}

/// The library's answer to a taken key, matched and carried on from: a taken key, or
/// the conflict of an upsert that expected no row, is `Ok`.
pub(super) fn carry_on<T>(result: Result<T, Error>, counters: &Counters) -> Result<(), Error> {
    match result {
        Err(Error::UniqueViolation(_)) => {
            bump(&counters.caught);
            Ok(())
        }
        Err(error) if error.is_conflict() => {
            bump(&counters.caught);
            Ok(())
        }
        result => result.map(drop),
    }
}

/// A plain Diesel statement's answer to a taken key, matched and carried on from.
pub(super) fn carry_on_statement(
    result: Result<usize, DieselError>,
    counters: &Counters,
) -> Result<(), Error> {
    match result {
        Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
            bump(&counters.caught);
            Ok(())
        }
        result => result.map(drop).map_err(Error::from),
    }
}

impl Path for Upsert {
    type Conn = Conn;
    type Read = Read;

    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<Read, Error> {
        Ok(match Op::of(kind) {
            Op::Row(kind) => Read::Row(Counter::find(conn, row)?, kind),
            Op::Caught(catch) => Read::Caught {
                saved: Counter::find(conn, child(row))?,
                taken: row,
                catch,
            },
            Op::DeletedThenStale => Read::DeletedThenStale,
        })
    }

    fn write(&self, conn: &mut Conn, read: Read, ctx: &Ctx<'_>) -> Outcome {
        match read {
            Read::Row(read, kind) => write_row(conn, read, kind, ctx),
            Read::Caught {
                saved,
                taken,
                catch,
            } => caught(conn, saved, taken, catch, ctx),
            Read::DeletedThenStale => deleted_then_stale(conn, ctx),
        }
    }
}

fn write_row(conn: &mut Conn, read: Counter, kind: Kind, ctx: &Ctx<'_>) -> Outcome {
    let change = counter::change(&read, read.version, 1);
    let mut row = next(&read);
    let written = if ctx.sabotage {
        counter::blind_save(conn, &mut row)
    } else {
        match kind {
            Kind::Update => row.upsert_checked(conn, Some(&read.version)).map(drop),
            Kind::Create => row.upsert_checked(conn, None).map(drop),
            Kind::Insert => row.insert_checked(conn).map(drop),
            Kind::InsertFrom => Counter::insert_checked_from(conn, NewCounter::of(&row)).map(drop),
        }
    };
    Outcome::of(written, vec![change])
}

/// A taken key caught inside a transaction (the module's doc).
fn caught(conn: &mut Conn, mut saved: Counter, taken: i32, catch: Catch, ctx: &Ctx<'_>) -> Outcome {
    let change = tagged_change(&mut saved);
    let counters = ctx.counters;
    let finished = AtomicBool::new(false);
    let taken = taken_row(taken);
    let result = if ctx.sabotage {
        conn.transaction::<_, Error, _>(|conn| {
            saved.save_checked(conn)?;
            insert_plainly(conn, &taken, counters)?;
            finished.store(true, Ordering::SeqCst);
            Ok(())
        })
    } else {
        diesel_occ::transaction(conn, &mut saved, |conn, saved| {
            saved.save_checked(conn)?;
            match catch {
                Catch::Insert => carry_on(taken.clone().insert_checked(conn), counters)?,
                Catch::InsertFrom => carry_on(
                    Counter::insert_checked_from(conn, NewCounter::of(&taken)),
                    counters,
                )?,
                Catch::Upsert => carry_on(taken.clone().upsert_checked(conn, None), counters)?,
                Catch::Statement => insert_plainly(conn, &taken, counters)?,
            }
            finished.store(true, Ordering::SeqCst);
            Ok(())
        })
    };
    caught_outcome(result, &finished, || answers(conn), change, counters)
}

/// The caller's own statement that fails: a plain `INSERT` of the taken key, caught.
fn insert_plainly(conn: &mut Conn, taken: &Counter, counters: &Counters) -> Result<(), Error> {
    let inserted = diesel::insert_into(counters::table)
        .values(taken)
        .execute(conn);
    carry_on_statement(inserted, counters)
}

/// Whether the connection still answers a query.
fn answers(conn: &mut Conn) -> bool {
    diesel::sql_query("SELECT 1").execute(conn).is_ok()
}

/// A deleted row upserted from a stale token (the module's doc).
fn deleted_then_stale(conn: &mut Conn, ctx: &Ctx<'_>) -> Outcome {
    let mut row = made_row();
    let mut writes = vec![made(&row)];
    if let Err(error) = row.insert_checked(conn) {
        return Outcome::of(Err(error), writes);
    }
    // From here every error leaves the row made: its writes are kept (unknown).
    let Ok(stale) = Counter::find(conn, row.id) else {
        return Outcome::Unknown(writes);
    };
    writes.push(deleted(&stale));
    let delete = Counter::find(conn, row.id).and_then(|theirs| theirs.delete_checked(conn));
    if delete.is_err() {
        return Outcome::Unknown(writes);
    }
    bump(&ctx.counters.stale_upserts);
    let mut again = next(&stale);
    let upserted = if ctx.sabotage {
        upsert_by_hand(conn, &mut again, stale.version)
    } else {
        again.upsert_checked(conn, Some(&stale.version)).map(drop)
    };
    // Refused (a `Deleted` conflict) as it must be, or an error: either way the row
    // must stay gone. Told `Ok`, the writer believes its `+1` is in the row.
    if upserted.is_ok() {
        writes.push(counter::change(&stale, stale.version, 1));
    }
    Outcome::Acked(writes)
}

/// The twin's upsert by hand: the keyed `UPDATE` with the token read and, when it
/// matched nothing, an `INSERT`, which brings back a row deleted since it was read.
fn upsert_by_hand(conn: &mut Conn, row: &mut Counter, expected: i32) -> Result<(), Error> {
    row.version = expected + 1;
    let updated = diesel::update(
        counters::table
            .find(row.id)
            .filter(counters::version.eq(expected)),
    )
    .set((
        counters::value.eq(row.value),
        counters::label.eq(&row.label),
        counters::version.eq(row.version),
    ))
    .execute(conn)?;
    if updated == 0 {
        diesel::insert_into(counters::table)
            .values(&*row)
            .execute(conn)?;
    }
    Ok(())
}
