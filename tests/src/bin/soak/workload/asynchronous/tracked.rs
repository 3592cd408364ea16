//! `async_tracked` and `async_save_merging`: tracked saves of `value + 1`, and
//! `save_merging` of `label` beside them, as `tracked.rs`.

use diesel_occ::asynchronous::TrackedDsl;
use diesel_occ::{Error, SaveOutcome, Tracked};

use super::super::counter::{self, Counter};
use super::super::runner::{Ctx, Outcome};
use super::adaptor::{AsyncPath, Changes};
use super::{AsyncConn, blind_save};
use crate::check::counters::Write;

/// `Tracked::save_checked` of `value + 1`.
pub(in super::super) struct Save;

/// Kind 0: `Tracked::save_checked` of `value + 1`; kind 1: `save_merging` of a new
/// `label`.
pub(in super::super) struct Merging;

async fn find(conn: &mut AsyncConn, row: i32) -> Result<Tracked<Counter>, Error> {
    use diesel_occ::asynchronous::EntityDsl;
    Counter::find(conn, row).await.map(Tracked::new)
}

impl AsyncPath for Save {
    type Read = Tracked<Counter>;

    async fn read(&self, conn: &mut AsyncConn, row: i32, _: u32) -> Result<Self::Read, Error> {
        find(conn, row).await
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        mut read: Tracked<Counter>,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        let from = read.original().version;
        read.edit().value += 1;
        changes.add(counter::change(read.current(), from, 1));
        let saved = if ctx.sabotage {
            blind_save(conn, &mut read.into_inner()).await
        } else {
            TrackedDsl::save_checked(&mut read, conn).await
        };
        changes.outcome(saved)
    }
}

impl AsyncPath for Merging {
    type Read = (Tracked<Counter>, u32);

    async fn read(&self, conn: &mut AsyncConn, row: i32, kind: u32) -> Result<Self::Read, Error> {
        Ok((find(conn, row).await?, kind % 2))
    }

    async fn write(
        &self,
        conn: &mut AsyncConn,
        (mut read, kind): Self::Read,
        ctx: &Ctx<'_>,
        changes: &mut Changes,
    ) -> Outcome {
        let from = read.original().version;
        let increment = if kind == 0 {
            read.edit().value += 1;
            1
        } else {
            read.edit().label = Some(format!("v{from}"));
            0
        };
        let change = counter::change(read.current(), from, increment);
        changes.add(change);
        if ctx.sabotage {
            // The whole row written back without its token, as Diesel's own
            // `save_changes` would.
            return changes.outcome(blind_save(conn, &mut read.into_inner()).await);
        }
        if kind == 0 {
            return changes.outcome(TrackedDsl::save_checked(&mut read, conn).await);
        }
        match read.save_merging(conn).await {
            Ok(SaveOutcome::Saved) => Outcome::Acked(vec![change]),
            // Saved on top of another writer's token: not the token read.
            Ok(SaveOutcome::Merged { .. }) => Outcome::Acked(vec![Write {
                from: None,
                ..change
            }]),
            Ok(SaveOutcome::Overlap(_)) => Outcome::Refused,
            Err(error) => changes.outcome(Err(error)),
        }
    }
}
