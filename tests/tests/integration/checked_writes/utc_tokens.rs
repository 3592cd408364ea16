//! `DateTime<Utc>` tokens: PostgreSQL (`timestamptz`) and SQLite (text); Diesel does not
//! map them on MySQL.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_occ::prelude::*;

use super::{Conn, schema};
use crate::flavours::blocking::insert_rows;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stamped_utc)]
struct StampedUtc {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: DateTime<Utc>,
}

#[test]
fn utc_timestamp_token() {
    let db = test_db!();
    let mut conn = db.conn();
    let start = DateTime::<Utc>::initial();
    let row = {
        use schema::stamped_utc::dsl::*;
        (id.eq(1), value.eq(0), updated_at.eq(start))
    };
    insert_rows!(&mut conn, schema::stamped_utc::table, row);
    let mut row = StampedUtc::find(&mut conn, 1).unwrap();
    let stale = row.clone();
    for value in 1..=3 {
        row.value = value;
        row.save_checked(&mut conn).unwrap();
        let stored = StampedUtc::find(&mut conn, 1).unwrap();
        assert_eq!(stored, row, "microseconds round-trip");
    }
    let error = stale.delete_checked(&mut conn).unwrap_err();
    let current = error.as_conflict().unwrap().current::<DateTime<Utc>>();
    assert_eq!(current, Some(row.updated_at));
}
