//! `async_upsert`: the twin of `upsert.rs` on a diesel-async connection, its two faults
//! included: a taken key (or a failed statement of the caller's own) caught inside
//! `asynchronous::transaction`, and a deleted row upserted from a stale token.

use std::sync::atomic::{AtomicBool, Ordering};

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::super::counter::{self, Counter, NewCounter, child};
use super::super::runner::{Ctx, Outcome};
use super::super::schema::counters;
use super::super::upsert::{
    Catch, Kind, Op, Read, carry_on, carry_on_statement, caught_outcome, deleted, made, made_row,
    next, tagged_change, taken_row,
};
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, blind_save};
use crate::counters::{Counters, bump};

pub(in super::super) struct Upsert;

impl AsyncPath for Upsert {
    type Read = Read;

    async fn read(&self, conn: &mut AsyncConn, row: i32, kind: u32) -> Result<Read, Error> {
        Ok(match Op::of(kind) {
            Op::Row(kind) => Read::Row(Counter::find(conn, row).await?, kind),
            Op::Caught(catch) => Read::Caught {
                saved: Counter::find(conn, child(row)).await?,
                taken: row,
                catch,
            },
            Op::DeletedThenStale => Read::DeletedThenStale,
        })
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        read: Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        match read {
            Read::Row(read, kind) => write_row(conn, read, kind, ctx, changes).await,
            Read::Caught {
                saved,
                taken,
                catch,
            } => caught(conn, saved, taken, catch, ctx, changes).await,
            Read::DeletedThenStale => deleted_then_stale(conn, ctx, changes).await,
        }
    }
}

async fn write_row(
    conn: &mut AsyncConn,
    read: Counter,
    kind: Kind,
    ctx: &Ctx<'_>,
    changes: &mut Changes,
) -> Outcome {
    changes.add(counter::change(&read, read.version, 1));
    let mut row = next(&read);
    let written = if ctx.sabotage {
        blind_save(conn, &mut row).await
    } else {
        match kind {
            Kind::Update => row
                .upsert_checked(conn, Some(&read.version))
                .await
                .map(drop),
            Kind::Create => row.upsert_checked(conn, None).await.map(drop),
            Kind::Insert => row.insert_checked(conn).await.map(drop),
            Kind::InsertFrom => Counter::insert_checked_from(conn, NewCounter::of(&row))
                .await
                .map(drop),
        }
    };
    changes.outcome(written)
}

/// A taken key caught inside a transaction (`upsert.rs`).
async fn caught(
    conn: &mut AsyncConn,
    mut saved: Counter,
    taken: i32,
    catch: Catch,
    ctx: &Ctx<'_>,
    changes: &mut Changes,
) -> Outcome {
    let change = tagged_change(&mut saved);
    changes.add(change);
    let counters = ctx.counters;
    let finished = AtomicBool::new(false);
    let taken = taken_row(taken);
    let result = if ctx.sabotage {
        conn.transaction(async |conn| {
            saved.save_checked(conn).await?;
            insert_plainly(conn, &taken, counters).await?;
            finished.store(true, Ordering::SeqCst);
            Ok::<_, Error>(())
        })
        .await
    } else {
        diesel_occ::asynchronous::transaction(&mut *conn, &mut saved, async |conn, saved| {
            saved.save_checked(conn).await?;
            match catch {
                Catch::Insert => carry_on(taken.clone().insert_checked(conn).await, counters)?,
                Catch::InsertFrom => carry_on(
                    Counter::insert_checked_from(conn, NewCounter::of(&taken)).await,
                    counters,
                )?,
                Catch::Upsert => {
                    carry_on(taken.clone().upsert_checked(conn, None).await, counters)?
                }
                Catch::Statement => insert_plainly(conn, &taken, counters).await?,
            }
            finished.store(true, Ordering::SeqCst);
            Ok(())
        })
        .await
    };
    // Asked here, as the outcome needs it: after an error once the closure finished.
    let alive =
        result.is_err() && AtomicBool::load(&finished, Ordering::SeqCst) && answers(conn).await;
    changes.take();
    caught_outcome(result, &finished, || alive, change, counters)
}

/// The caller's own statement that fails: a plain `INSERT` of the taken key, caught.
async fn insert_plainly(
    conn: &mut AsyncConn,
    taken: &Counter,
    counters: &Counters,
) -> Result<(), Error> {
    let inserted = diesel::insert_into(counters::table)
        .values(taken)
        .execute(conn)
        .await;
    carry_on_statement(inserted, counters)
}

/// Whether the connection still answers a query.
async fn answers(conn: &mut AsyncConn) -> bool {
    diesel::sql_query("SELECT 1").execute(conn).await.is_ok()
}

/// A deleted row upserted from a stale token (`upsert.rs`).
async fn deleted_then_stale(conn: &mut AsyncConn, ctx: &Ctx<'_>, changes: &mut Changes) -> Outcome {
    let mut row = made_row();
    changes.add(made(&row));
    if let Err(error) = row.insert_checked(conn).await {
        return changes.outcome(Err(error));
    }
    // From here every error leaves the row made: its writes are kept (unknown).
    let Ok(stale) = Counter::find(conn, row.id).await else {
        return Outcome::Unknown(changes.take());
    };
    changes.add(deleted(&stale));
    let delete = match Counter::find(conn, row.id).await {
        Ok(theirs) => theirs.delete_checked(conn).await,
        Err(error) => Err(error),
    };
    if delete.is_err() {
        return Outcome::Unknown(changes.take());
    }
    bump(&ctx.counters.stale_upserts);
    let mut again = next(&stale);
    let upserted = if ctx.sabotage {
        upsert_by_hand(conn, &mut again, stale.version).await
    } else {
        again
            .upsert_checked(conn, Some(&stale.version))
            .await
            .map(drop)
    };
    // Refused (a `Deleted` conflict) as it must be, or an error: either way the row
    // must stay gone. Told `Ok`, the writer believes its `+1` is in the row.
    if upserted.is_ok() {
        changes.add(counter::change(&stale, stale.version, 1));
    }
    Outcome::Acked(changes.take())
}

/// The twin's upsert by hand, as in `upsert.rs`.
async fn upsert_by_hand(
    conn: &mut AsyncConn,
    row: &mut Counter,
    expected: i32,
) -> Result<(), Error> {
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
    .execute(conn)
    .await?;
    if updated == 0 {
        diesel::insert_into(counters::table)
            .values(&*row)
            .execute(conn)
            .await?;
    }
    Ok(())
}
