//! `DateTime<Utc>` tokens under a bulk update: the database advances the token past
//! every token the row held, in a form the token type reads back, so the row stays
//! saveable.

use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ_tests::expect_conflict;

use super::{COLUMN, Conn, ahead_of_clock, stamps_utc};
use crate::flavours::blocking::{insert_rows, run_sql};
use crate::timestamp_precision::create_table;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = stamps_utc)]
struct StampUtc {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: DateTime<Utc>,
}

#[test]
fn a_bulk_update_moves_a_utc_token_past_every_token_the_row_held() {
    let db = test_db!();
    let (mut a, mut b) = (db.conn(), db.conn());
    run_sql(&mut a, &create_table("stamps_utc", COLUMN));
    let seed = ahead_of_clock().and_utc();
    let row = {
        use stamps_utc::{id, updated_at, value};
        (id.eq(1), value.eq(0), updated_at.eq(seed))
    };
    insert_rows!(&mut a, stamps_utc::table, row);

    let mut in_flight = StampUtc::find(&mut a, 1).unwrap();
    let mut writer = StampUtc::find(&mut b, 1).unwrap();
    writer.value = 1;
    writer.save_checked(&mut b).expect("a checked save");
    assert_eq!(writer.updated_at, seed + TimeDelta::seconds(1));

    let bulk = StampUtc::bulk_update(stamps_utc::table, stamps_utc::value.eq(7));
    bulk.execute(&mut a).expect("the bulk update");
    let mut bulk = StampUtc::find(&mut a, 1).unwrap();
    assert_eq!(bulk.updated_at, seed + TimeDelta::seconds(2));

    // An entity read before the bulk update conflicts.
    for stale in [&mut in_flight, &mut writer] {
        stale.value = 9;
        let conflict = expect_conflict(stale.save_checked(&mut b));
        assert_eq!(conflict.current::<DateTime<Utc>>(), Some(bulk.updated_at));
    }
    bulk.value = 8;
    let saved = bulk.save_checked(&mut a);
    saved.expect("saves after the bulk update");
    assert_eq!(StampUtc::find(&mut b, 1).unwrap(), bulk);
}
