//! A writer that sets a timestamp token to "now" (an `ON UPDATE CURRENT_TIMESTAMP`
//! column, a trigger or another app writing `now()`), beside checked saves of
//! `value + 1` read earlier, on the `stamped` test table (a microsecond timestamp
//! token). The rule ("Nothing but diesel-occ may set a timestamp token to now", in
//! `diesel_occ::guide::checked_writes`) is followed as a user can: on PostgreSQL the
//! bypass guard is installed, which moves a write that does not advance the token
//! forward; everywhere the token keeps microseconds (`precision = 6`), so it does not
//! run ahead of the clock. Its twin writes the token it read back, without the guard
//! (a token wound back onto a value a stale holder has), which the check must catch.

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::Timestamp;
use diesel_occ::Dialect;
use diesel_occ::Error;
use diesel_occ::bypass_guard::BypassGuard;
use diesel_occ::prelude::*;
use diesel_occ_tests::{Backend, TestConnection};

use super::Conn;
use super::runner::{Ctx, Outcome, Path, Values};
use super::schema::stamped;
use crate::check::counters::Write;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = stamped)]
pub(super) struct Stamped {
    id: i32,
    value: i32,
    #[occ(version, precision = 6)]
    updated_at: NaiveDateTime,
}

pub(super) struct TimestampNow;

/// The "now" writer reads the token (its twin writes it back); a save reads the row.
pub(super) enum Read {
    Now(i32, NaiveDateTime),
    Save(Stamped),
}

/// The database's clock, in the column's type.
fn now() -> &'static str {
    match Conn::BACKEND {
        Backend::Postgres => "LOCALTIMESTAMP",
        Backend::Mysql => "NOW(6)",
        Backend::Sqlite => "strftime('%Y-%m-%d %H:%M:%f', 'now')",
    }
}

impl Path for TimestampNow {
    type Conn = Conn;
    type Read = Read;

    /// The same rows as on `counters`, at 0, with a token from the database's clock;
    /// on PostgreSQL the bypass guard, unless sabotaged.
    fn prepare(&self, conn: &mut Conn, sabotage: bool) {
        if Conn::BACKEND == Backend::Postgres && !sabotage {
            let install = BypassGuard::of::<Stamped>()
                .install_sql(Dialect::Postgres)
                .expect("the guard's DDL");
            conn.batch_execute(&install).expect("install the guard");
        }
        let ids: Vec<i32> = super::schema::counters::table
            .select(super::schema::counters::id)
            .load(conn)
            .expect("the seeded ids");
        for id in ids {
            diesel::insert_into(stamped::table)
                .values((
                    stamped::id.eq(id),
                    stamped::value.eq(0),
                    stamped::updated_at.eq(sql::<Timestamp>(now())),
                ))
                .execute(conn)
                .expect("seed stamped");
        }
    }

    fn values(&self, conn: &mut Conn) -> QueryResult<Values> {
        let rows: Vec<(i32, i32)> = stamped::table
            .select((stamped::id, stamped::value))
            .load(conn)?;
        Ok(rows.into_iter().collect())
    }

    /// Kind 0 (racer 0 writes first): the "now" writer; kind 1: the save.
    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<Read, Error> {
        let read = Stamped::find(conn, row)?;
        Ok(match kind % 2 {
            0 => Read::Now(row, read.updated_at),
            _ => Read::Save(read),
        })
    }

    fn write(&self, conn: &mut Conn, read: Read, ctx: &Ctx<'_>) -> Outcome {
        match read {
            Read::Now(row, token) => {
                let target = stamped::table.find(row);
                let plus_one = stamped::value.eq(stamped::value + 1);
                let written = if ctx.sabotage {
                    diesel::update(target)
                        .set((plus_one, stamped::updated_at.eq(token)))
                        .execute(conn)
                } else if Conn::BACKEND == Backend::Sqlite {
                    // SQLite's clock has milliseconds: an application's "now" has more.
                    let now = chrono::Utc::now().naive_utc();
                    diesel::update(target)
                        .set((plus_one, stamped::updated_at.eq(now)))
                        .execute(conn)
                } else {
                    diesel::update(target)
                        .set((plus_one, stamped::updated_at.eq(sql::<Timestamp>(now()))))
                        .execute(conn)
                };
                let change = Write {
                    row,
                    from: None,
                    increment: 1,
                    tag: None,
                    deletes: false,
                };
                Outcome::of(written.map(drop).map_err(Error::from), vec![change])
            }
            Read::Save(mut row) => {
                let change = Write {
                    row: row.id,
                    from: None,
                    increment: 1,
                    tag: None,
                    deletes: false,
                };
                row.value += 1;
                Outcome::of(row.save_checked(conn), vec![change])
            }
        }
    }
}
