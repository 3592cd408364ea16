//! Tracked saves: `Tracked::save_checked` (+1 to `value`), and `save_merging` of
//! `label` beside tracked saves of `value + 1`: a merge over another writer's change
//! of `value` must keep it. (Two merges of `value + 1` from one read would agree on
//! the value and merge: a merge compares values, it does not add increments.)

use diesel_occ::prelude::*;
use diesel_occ::{Error, SaveOutcome, Tracked, TrackedDsl};

use super::Conn;
use super::counter::{self, Counter, blind_save};
use super::runner::{Ctx, Outcome, Path};
use crate::check::counters::Write;

/// `Tracked::save_checked` of `value + 1`.
pub(super) struct Save;

/// Kind 0: `Tracked::save_checked` of `value + 1`; kind 1: `save_merging` of a new
/// `label`.
pub(super) struct Merging;

impl Path for Save {
    type Conn = Conn;
    type Read = Tracked<Counter>;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Tracked<Counter>, Error> {
        Counter::find(conn, row).map(Tracked::new)
    }

    fn write(&self, conn: &mut Conn, mut read: Tracked<Counter>, ctx: &Ctx<'_>) -> Outcome {
        let from = read.original().version;
        read.edit().value += 1;
        let change = counter::change(read.current(), from, 1);
        let saved = if ctx.sabotage {
            blind_save(conn, &mut read.into_inner())
        } else {
            TrackedDsl::save_checked(&mut read, conn)
        };
        Outcome::of(saved, vec![change])
    }
}

impl Path for Merging {
    type Conn = Conn;
    type Read = (Tracked<Counter>, u32);

    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<Self::Read, Error> {
        Counter::find(conn, row).map(|row| (Tracked::new(row), kind % 2))
    }

    fn write(&self, conn: &mut Conn, (mut read, kind): Self::Read, ctx: &Ctx<'_>) -> Outcome {
        let from = read.original().version;
        let increment = if kind == 0 {
            read.edit().value += 1;
            1
        } else {
            read.edit().label = Some(format!("v{from}"));
            0
        };
        if ctx.sabotage {
            // The whole row written back without its token, as Diesel's own
            // `save_changes` would.
            let change = counter::change(read.current(), from, increment);
            return Outcome::of(blind_save(conn, &mut read.into_inner()), vec![change]);
        }
        if kind == 0 {
            let change = counter::change(read.current(), from, increment);
            return Outcome::of(TrackedDsl::save_checked(&mut read, conn), vec![change]);
        }
        match read.save_merging(conn) {
            Ok(SaveOutcome::Saved) => {
                Outcome::Acked(vec![counter::change(read.current(), from, increment)])
            }
            // Saved on top of another writer's token: not the token read.
            Ok(SaveOutcome::Merged { .. }) => Outcome::Acked(vec![Write {
                from: None,
                ..counter::change(read.current(), from, increment)
            }]),
            Ok(SaveOutcome::Overlap(_)) => Outcome::Refused,
            Err(error) => Outcome::of(
                Err(error),
                vec![counter::change(read.current(), from, increment)],
            ),
        }
    }
}
