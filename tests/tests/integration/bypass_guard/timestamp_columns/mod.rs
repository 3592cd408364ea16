//! The guard on PostgreSQL timestamp token columns of every precision, `timestamp(p)`
//! and `timestamptz(p)`, written by a session whose `TimeZone` is not UTC: a write that
//! bypasses diesel-occ moves the token forward by at least one unit the column keeps
//! (a whole second on `timestamp(0)`), to the clock in UTC when that is later, and a
//! write that moves the token back onto an older value (a writer setting it to its
//! "now" while the token runs ahead of the clock) is moved forward too. Either way a
//! checked save from a stale read conflicts.
//!
//! Tokens are seeded an hour ahead of the clock (a busy row whose tokens outran it) or an
//! hour behind, so no scenario depends on timing.

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};

/// The `TimeZone` of the session that bypasses diesel-occ: nine hours east of UTC.
const SESSION_TIME_ZONE: &str = "Asia/Tokyo";

/// The token tables: the same SQL name, one per Diesel type of the token.
mod tables {
    pub(super) mod naive {
        diesel::table! {
            stamps (id) {
                id -> Integer,
                value -> Integer,
                updated_at -> Timestamp,
            }
        }
    }
    pub(super) mod utc {
        diesel::table! {
            stamps (id) {
                id -> Integer,
                value -> Integer,
                updated_at -> Timestamptz,
            }
        }
    }
}

/// A timestamp token as the UTC clock time it denotes.
trait AsUtc: Copy + std::fmt::Debug + PartialEq {
    /// The token denoting the UTC clock time `t`.
    fn from_utc(t: NaiveDateTime) -> Self;
    /// The UTC clock time the token denotes.
    fn utc(self) -> NaiveDateTime;
}

impl AsUtc for NaiveDateTime {
    fn from_utc(t: NaiveDateTime) -> Self {
        t
    }
    fn utc(self) -> NaiveDateTime {
        self
    }
}

impl AsUtc for DateTime<Utc> {
    fn from_utc(t: NaiveDateTime) -> Self {
        t.and_utc()
    }
    fn utc(self) -> NaiveDateTime {
        self.naive_utc()
    }
}

/// Whole seconds, `hours` from now.
fn seed(hours: i64) -> NaiveDateTime {
    use chrono::SubsecRound;
    (Utc::now() + TimeDelta::hours(hours))
        .naive_utc()
        .trunc_subsecs(0)
}

/// One unit of a column keeping `digits` fractional digits.
fn unit(digits: u8) -> TimeDelta {
    TimeDelta::microseconds(10_i64.pow(6 - u32::from(digits)))
}

/// Compiles the scenario files once per token column: `Stamp`, its entity declaring the
/// column's precision, `COLUMN` (the SQL type) and `DIGITS`.
macro_rules! token_columns {
    ($($name:ident: $table:ident, $token:ty, $column:literal, $digits:literal;)+) => {$(
        // The files sit beside this mod.rs, not in a directory per column.
        #[path = "."]
        mod $name {
            use diesel::{Insertable, Queryable, Selectable};
            use diesel_occ::Versioned;

            #[allow(unused_imports)]
            use super::{AsUtc, SESSION_TIME_ZONE, seed, tables::$table::stamps, unit};

            /// The SQL type of the token column.
            const COLUMN: &str = $column;
            /// The fractional digits the column stores.
            const DIGITS: u8 = $digits;

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = stamps)]
            struct Stamp {
                id: i32,
                value: i32,
                #[occ(version, precision = $digits)]
                updated_at: $token,
            }

            #[allow(unused_imports)]
            use {diesel::pg::PgConnection as Conn, diesel_async::AsyncPgConnection as AsyncConn};

            on_every_backend!(@file scenarios);
        }
    )+};
}

token_columns! {
    timestamp0: naive, chrono::NaiveDateTime, "TIMESTAMP(0)", 0;
    timestamp3: naive, chrono::NaiveDateTime, "TIMESTAMP(3)", 3;
    timestamp6: naive, chrono::NaiveDateTime, "TIMESTAMP(6)", 6;
    timestamptz0: utc, chrono::DateTime<chrono::Utc>, "TIMESTAMPTZ(0)", 0;
    timestamptz6: utc, chrono::DateTime<chrono::Utc>, "TIMESTAMPTZ(6)", 6;
}
