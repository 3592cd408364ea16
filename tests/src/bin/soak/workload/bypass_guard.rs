//! A bypass writer under the bypass guard: `UPDATE counters SET value = value + 1`
//! written by hand (a migration, a report job, another service), beside checked saves
//! of `value + 1` read earlier. The guard's trigger advances the token on every write
//! that does not, so a save read before the bypass write is refused. The twin runs
//! without the guard.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ::Dialect;
use diesel_occ::Error;
use diesel_occ::bypass_guard::BypassGuard;
use diesel_occ::prelude::*;
use diesel_occ_tests::{Backend, TestConnection};

use super::Conn;
use super::counter::{self, Counter};
use super::runner::{Ctx, Outcome, Path};
use super::schema::counters;
use crate::check::counters::Write;

pub(super) struct Bypass;

/// What the bypass writer reads: nothing but the row; a save reads the row.
pub(super) enum Read {
    Bypass(i32),
    Save(Counter),
}

impl Path for Bypass {
    type Conn = Conn;
    type Read = Read;

    /// The guard, unless sabotaged.
    fn prepare(&self, conn: &mut Conn, sabotage: bool) {
        if sabotage {
            return;
        }
        let backend = match Conn::BACKEND {
            Backend::Postgres => Dialect::Postgres,
            Backend::Mysql => Dialect::Mysql,
            Backend::Sqlite => Dialect::Sqlite,
        };
        let install = BypassGuard::of::<Counter>()
            .install_sql(backend)
            .expect("the guard's DDL");
        conn.batch_execute(&install).expect("install the guard");
    }

    /// Kind 0 (racer 0 writes first): the bypass write; kind 1: the save.
    fn read(&self, conn: &mut Conn, row: i32, kind: u32) -> Result<Read, Error> {
        match kind % 2 {
            0 => Ok(Read::Bypass(row)),
            _ => Counter::find(conn, row).map(Read::Save),
        }
    }

    fn write(&self, conn: &mut Conn, read: Read, _: &Ctx<'_>) -> Outcome {
        match read {
            Read::Bypass(row) => {
                let written = diesel::update(counters::table.find(row))
                    .set(counters::value.eq(counters::value + 1))
                    .execute(conn);
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
                let change = counter::change(&row, row.version, 1);
                row.value += 1;
                Outcome::of(row.save_checked(conn), vec![change])
            }
        }
    }
}
