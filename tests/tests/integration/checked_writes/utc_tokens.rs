//! `DateTime<Utc>` tokens: PostgreSQL (`timestamptz`) and SQLite (text); Diesel does not
//! map them on MySQL.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_occ::prelude::*;

use super::{Conn, schema};

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
    diesel::insert_into(schema::stamped_utc::table)
        .values(StampedUtc {
            id: 1,
            value: 0,
            updated_at: start,
        })
        .execute(&mut conn)
        .unwrap();
    let mut row = StampedUtc::find(&mut conn, 1).unwrap();
    let stale = row.clone();
    for value in 1..=3 {
        row.value = value;
        row.save_checked(&mut conn).unwrap();
        assert_eq!(
            StampedUtc::find(&mut conn, 1).unwrap(),
            row,
            "microseconds round-trip"
        );
    }
    let conflict = stale.delete_checked(&mut conn).unwrap_err();
    assert_eq!(
        conflict.as_conflict().unwrap().current::<DateTime<Utc>>(),
        Some(row.updated_at)
    );
}
