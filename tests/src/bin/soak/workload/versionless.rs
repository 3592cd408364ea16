//! `versionless`: tracked saves of an entity without a version column, guarded by its
//! check column (`#[occ(check)] value`): `UPDATE counters SET value = ? WHERE id = ? AND
//! value IS NOT DISTINCT FROM <value as read>`. `value` only ever grows, so the value a
//! write read is its token. The twin writes the same value with the key alone.

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{Error, Tracked, TrackedDsl};

use super::Conn;
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;
use crate::check::counters::Write;

/// A `counters` row without its version column: `value` is checked.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = counters)]
pub(super) struct Versionless {
    pub(super) id: i32,
    #[occ(check)]
    pub(super) value: i32,
    pub(super) label: Option<String>,
}

/// The write a save of `row` makes: +1 from the value read.
pub(super) fn change(row: &Tracked<Versionless>) -> Write {
    Write {
        row: row.id,
        from: Some(row.original().value),
        increment: 1,
        tag: None,
        deletes: false,
    }
}

/// `Tracked::save_checked` of `value + 1` on a versionless entity.
pub(super) struct Save;

impl Path for Save {
    type Conn = Conn;
    type Read = Tracked<Versionless>;

    fn read(&self, conn: &mut Conn, row: i32, _: u32) -> Result<Tracked<Versionless>, Error> {
        Versionless::find(conn, row).map(Tracked::new)
    }

    fn write(&self, conn: &mut Conn, mut read: Tracked<Versionless>, ctx: &Ctx<'_>) -> Outcome {
        read.edit().value += 1;
        let change = change(&read);
        let saved = if ctx.sabotage {
            // The same UPDATE without the check column in its `WHERE`.
            diesel::update(counters::table.find(read.id))
                .set(counters::value.eq(read.value))
                .execute(conn)
                .map(drop)
                .map_err(Error::from)
        } else {
            TrackedDsl::save_checked(&mut read, conn)
        };
        Outcome::of(saved, vec![change])
    }
}
