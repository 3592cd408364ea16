//! The `time` crate's tokens, `PrimitiveDateTime` and `OffsetDateTime`, on a blocking
//! connection: the stale writer never wins at the column's precision, a bulk update
//! moves the token past every token the row held, and the start-up check reads the
//! column as it does for chrono's tokens.

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::schema_check::SchemaCheck;
use diesel_occ_tests::expect_conflict;
use time::{Duration, OffsetDateTime, PrimitiveDateTime, UtcOffset};

use super::super::{assert_micros_checked, assert_out_of_range, create_table};
use super::{COLUMN, Conn, DIGITS, Declared, INSTANT_COLUMN, time_instants, time_stamps};
use crate::flavours::blocking::{insert_rows, run_sql};

/// A whole-second token, an hour ahead of the clock: every fresh token lands one step
/// after it, whatever the time of the run.
fn ahead_of_clock() -> PrimitiveDateTime {
    let ahead = OffsetDateTime::now_utc() + Duration::hours(1);
    PrimitiveDateTime::new(ahead.date(), ahead.time())
        .replace_nanosecond(0)
        .unwrap()
}

/// One step of the declared precision.
fn declared_step() -> Duration {
    Duration::microseconds(10_i64.pow(6 - u32::from(DIGITS)))
}

/// A whole-second token.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = time_stamps)]
struct Stamp {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: PrimitiveDateTime,
}

impl Stamp {
    /// Row `id` holding `value` at the token `updated_at`.
    fn new(id: i32, value: i32, updated_at: PrimitiveDateTime) -> Self {
        Self {
            id,
            value,
            updated_at,
        }
    }
}

/// The same row, claiming microseconds.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = time_stamps)]
struct Micros {
    id: i32,
    value: i32,
    #[occ(version, precision = 6)]
    updated_at: PrimitiveDateTime,
}

/// An instant token.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = time_instants)]
struct Instant {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: OffsetDateTime,
}

/// Both token tables, row 1 of each at a token ahead of the clock (the instant written
/// two hours east of UTC); two connections and that token.
fn setup(db: &diesel_occ_tests::TestDb<Conn>) -> (Conn, Conn, PrimitiveDateTime) {
    let (mut a, b) = (db.conn(), db.conn());
    run_sql(&mut a, &create_table("time_stamps", COLUMN));
    run_sql(&mut a, &create_table("time_instants", INSTANT_COLUMN));
    let seed = ahead_of_clock();
    insert_rows!(&mut a, time_stamps::table, Stamp::new(1, 0, seed));
    let east = UtcOffset::from_hms(2, 0, 0).unwrap();
    let instant = {
        use time_instants::{id, updated_at, value};
        (
            id.eq(1),
            value.eq(0),
            updated_at.eq(seed.assume_utc().to_offset(east)),
        )
    };
    insert_rows!(&mut a, time_instants::table, instant);
    (a, b, seed)
}

/// The default precision (whole seconds): a checked insert and an upsert of a `time`
/// token return, and leave in the entity, the token the row stores.
#[test]
fn checked_inserts_and_upserts_issue_the_token_the_column_stores() {
    let db = test_db!();
    let (mut a, _, _) = setup(&db);
    let stored = |conn: &mut Conn, id| Stamp::find(conn, id).expect("the row").updated_at;

    let mut inserted = Stamp::new(2, 0, PrimitiveDateTime::MIN);
    let token = inserted.insert_checked(&mut a).expect("insert");
    let row = stored(&mut a, 2);
    assert_eq!((token, inserted.updated_at), (row, row));
    inserted.value = 1;
    let saved = inserted.save_checked(&mut a);
    saved.expect("the first token matches the row");

    let mut upserted = Stamp::new(3, 0, PrimitiveDateTime::MIN);
    let outcome = upserted.upsert_checked(&mut a, None);
    let outcome = outcome.expect("upsert into a free key");
    assert_eq!(outcome, diesel_occ::Upserted::Inserted(stored(&mut a, 3)));
}

#[test]
fn a_stale_writer_in_the_same_second_gets_a_conflict() {
    let db = test_db!();
    let (mut a, mut b, seed) = setup(&db);
    let mut first = Stamp::find(&mut a, 1).unwrap();
    let mut second = Stamp::find(&mut b, 1).unwrap();
    first.value = 1;
    first.save_checked(&mut a).expect("the first writer saves");
    assert_eq!(first.updated_at, seed + Duration::seconds(1));
    second.value = 2;
    let conflict = expect_conflict(second.save_checked(&mut b));
    assert_eq!(conflict.expected::<PrimitiveDateTime>(), Some(seed));
    let current = conflict.current::<PrimitiveDateTime>();
    assert_eq!(current, Some(first.updated_at));
    assert_eq!(Stamp::find(&mut b, 1).unwrap(), first);

    // The instant: the same, and the fresh token is at UTC.
    let mut first = Instant::find(&mut a, 1).unwrap();
    let mut second = Instant::find(&mut b, 1).unwrap();
    assert_eq!(first.updated_at, seed.assume_utc());
    first.value = 1;
    first.save_checked(&mut a).expect("the first writer saves");
    assert_eq!(first.updated_at, seed.assume_utc() + Duration::seconds(1));
    second.value = 2;
    let conflict = expect_conflict(second.save_checked(&mut b));
    assert_eq!(conflict.current::<OffsetDateTime>(), Some(first.updated_at));
    first.value = 3;
    first.save_checked(&mut a).expect("the winner saves again");
    assert_eq!(Instant::find(&mut b, 1).unwrap(), first);
}

#[test]
fn a_declared_precision_advances_the_token_in_its_own_steps() {
    let db = test_db!();
    let (mut a, mut b, seed) = setup(&db);
    let mut first = Declared::find(&mut a, 1).unwrap();
    let mut second = Declared::find(&mut b, 1).unwrap();
    first.value = 1;
    first.save_checked(&mut a).expect("the first writer saves");
    assert_eq!(first.updated_at, seed + declared_step());
    second.value = 2;
    expect_conflict(second.save_checked(&mut b));
    assert_eq!(Declared::find(&mut b, 1).unwrap(), first);
}

#[test]
fn a_bulk_update_moves_the_token_past_every_token_the_row_held() {
    let db = test_db!();
    let (mut a, mut b, seed) = setup(&db);
    let mut in_flight = Stamp::find(&mut a, 1).unwrap();
    let mut writer = Stamp::find(&mut b, 1).unwrap();
    writer.value = 1;
    writer.save_checked(&mut b).expect("a checked save");
    let bulk = Stamp::bulk_update(time_stamps::table, time_stamps::value.eq(7));
    assert_eq!(bulk.execute(&mut a).expect("the bulk update"), 1);
    let mut bulk = Stamp::find(&mut a, 1).unwrap();
    assert_eq!(bulk.updated_at, seed + Duration::seconds(2));
    // An entity read before the bulk update conflicts.
    for stale in [&mut in_flight, &mut writer] {
        stale.value = 9;
        let conflict = expect_conflict(stale.save_checked(&mut b));
        let current = conflict.current::<PrimitiveDateTime>();
        assert_eq!(current, Some(bulk.updated_at));
    }
    bulk.value = 8;
    let saved = bulk.save_checked(&mut a);
    saved.expect("saves after the bulk update");

    let mut stale = Instant::find(&mut a, 1).unwrap();
    let bulk = Instant::bulk_update(time_instants::table, time_instants::value.eq(7));
    bulk.execute(&mut a).expect("the bulk update");
    let mut bulk = Instant::find(&mut a, 1).unwrap();
    assert_eq!(bulk.updated_at, seed.assume_utc() + Duration::seconds(1));
    // An instant read before the bulk update conflicts.
    stale.value = 9;
    expect_conflict(stale.save_checked(&mut b));
    bulk.value = 8;
    let saved = bulk.save_checked(&mut a);
    saved.expect("saves after the bulk update");
    assert_eq!(Instant::find(&mut b, 1).unwrap(), bulk);
}

#[test]
fn a_token_no_fresh_one_can_follow_is_refused_before_any_write() {
    let db = test_db!();
    let (mut a, _, seed) = setup(&db);
    let end = PrimitiveDateTime::MAX;
    let mut stamp = Stamp::new(1, 7, end);
    assert_out_of_range(stamp.save_checked(&mut a));
    assert_eq!(stamp.updated_at, end, "the entity is untouched");
    let row = Stamp::find(&mut a, 1).unwrap();
    assert_eq!(row.updated_at, seed, "nothing was written");
}

#[test]
fn the_start_up_check_reads_the_columns() {
    let db = test_db!();
    let (mut a, _, _) = setup(&db);
    let check = SchemaCheck::new().entity::<Stamp>().entity::<Instant>();
    let fits = check.entity::<Declared>().run(&mut a);
    fits.expect("timestamp columns hold timestamp tokens at their real precision");
    let result = SchemaCheck::new().entity::<Micros>().run(&mut a);
    assert_micros_checked(result, "time_stamps", DIGITS);
}
