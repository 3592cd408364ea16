//! `force_increment`: an aggregate root guards a child row that carries no check of
//! its own. In one transaction the root's token is advanced (checked), then the child
//! is written from the value read with the root; a writer whose root is stale is
//! refused before it touches the child. The twin moves the root's token without the
//! check.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;

use super::Conn;
use super::counter::{self, Counter, child};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;
use crate::check::counters::Write;

pub(super) struct ForceIncrement;

impl Path for ForceIncrement {
    type Conn = Conn;
    /// The root, and the child's value as read with it.
    type Read = (Counter, i32);

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Self::Read, Error> {
        let root = Counter::find(conn, row)?;
        let value = counters::table
            .find(child(row))
            .select(counters::value)
            .first(conn)?;
        Ok((root, value))
    }

    fn write(&self, conn: &mut Conn, (mut root, value): Self::Read, ctx: &Ctx<'_>) -> Outcome {
        let changes = vec![
            counter::change(&root, root.version, 0),
            Write {
                row: child(root.id),
                from: None,
                increment: 1,
                tag: None,
                deletes: false,
            },
        ];
        let written = conn.transaction(|conn| {
            if ctx.sabotage {
                diesel::update(counters::table.find(root.id))
                    .set(counters::version.eq(root.version + 1))
                    .execute(conn)?;
            } else {
                root.force_increment(conn)?;
            }
            diesel::update(counters::table.find(child(root.id)))
                .set(counters::value.eq(value + 1))
                .execute(conn)?;
            Ok::<_, Error>(())
        });
        Outcome::of(written, changes)
    }
}
