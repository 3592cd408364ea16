//! The `time` crate's tokens, `PrimitiveDateTime` and `OffsetDateTime`, on a blocking
//! connection: the stale writer never wins at the column's precision, a bulk update
//! moves the token past every token the row held, and the start-up check reads the
//! column as it does for chrono's tokens.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;
use diesel_occ::schema_check::SchemaCheck;
use time::{Duration, OffsetDateTime, PrimitiveDateTime, UtcOffset};

use super::{COLUMN, Conn, DIGITS, Declared, INSTANT_COLUMN, time_instants, time_stamps};

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

/// Both token tables, row 1 of each at `seed` (the instant written two hours east of
/// UTC); two connections.
fn setup(db: &diesel_occ_tests::TestDb<Conn>, seed: PrimitiveDateTime) -> (Conn, Conn) {
    let mut a = db.conn();
    let b = db.conn();
    for (table, column) in [("time_stamps", COLUMN), ("time_instants", INSTANT_COLUMN)] {
        diesel::sql_query(format!(
            "CREATE TABLE {table} (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
             updated_at {column} NOT NULL)"
        ))
        .execute(&mut a)
        .expect("token table");
    }
    diesel::insert_into(time_stamps::table)
        .values(Stamp {
            id: 1,
            value: 0,
            updated_at: seed,
        })
        .execute(&mut a)
        .expect("seed row");
    let east = seed
        .assume_utc()
        .to_offset(UtcOffset::from_hms(2, 0, 0).unwrap());
    diesel::insert_into(time_instants::table)
        .values(Instant {
            id: 1,
            value: 0,
            updated_at: east,
        })
        .execute(&mut a)
        .expect("seed row");
    (a, b)
}

/// The default precision (whole seconds): a checked insert and an upsert of a `time`
/// token return, and leave in the entity, the token the row stores.
#[test]
fn checked_inserts_and_upserts_issue_the_token_the_column_stores() {
    let db = test_db!();
    let (mut a, _) = setup(&db, ahead_of_clock());
    let stored = |conn: &mut Conn, id| Stamp::find(conn, id).expect("the row").updated_at;

    let mut inserted = Stamp {
        id: 2,
        value: 0,
        updated_at: PrimitiveDateTime::MIN,
    };
    let token = inserted.insert_checked(&mut a).expect("insert");
    assert_eq!(
        (token, inserted.updated_at),
        (stored(&mut a, 2), stored(&mut a, 2))
    );
    inserted.value = 1;
    inserted
        .save_checked(&mut a)
        .expect("the first token matches the row");

    let mut upserted = Stamp {
        id: 3,
        value: 0,
        updated_at: PrimitiveDateTime::MIN,
    };
    let outcome = upserted
        .upsert_checked(&mut a, None)
        .expect("upsert into a free key");
    assert_eq!(outcome, diesel_occ::Upserted::Inserted(stored(&mut a, 3)));
}

#[test]
fn a_stale_writer_in_the_same_second_gets_a_conflict() {
    let db = test_db!();
    let seed = ahead_of_clock();
    let (mut a, mut b) = setup(&db, seed);
    let mut first = Stamp::find(&mut a, 1).unwrap();
    let mut second = Stamp::find(&mut b, 1).unwrap();
    first.value = 1;
    first.save_checked(&mut a).expect("the first writer saves");
    assert_eq!(first.updated_at, seed + Duration::seconds(1));
    second.value = 2;
    match second.save_checked(&mut b) {
        Err(Error::Conflict(conflict)) => {
            assert_eq!(conflict.expected::<PrimitiveDateTime>(), Some(seed));
            assert_eq!(
                conflict.current::<PrimitiveDateTime>(),
                Some(first.updated_at)
            );
        }
        other => panic!("the stale writer must not win, got {other:?}"),
    }
    assert_eq!(Stamp::find(&mut b, 1).unwrap(), first);

    // The instant: the same, and the fresh token is at UTC.
    let mut first = Instant::find(&mut a, 1).unwrap();
    let mut second = Instant::find(&mut b, 1).unwrap();
    assert_eq!(first.updated_at, seed.assume_utc());
    first.value = 1;
    first.save_checked(&mut a).expect("the first writer saves");
    assert_eq!(first.updated_at, seed.assume_utc() + Duration::seconds(1));
    second.value = 2;
    match second.save_checked(&mut b) {
        Err(Error::Conflict(conflict)) => {
            assert_eq!(conflict.current::<OffsetDateTime>(), Some(first.updated_at))
        }
        other => panic!("the stale writer must not win, got {other:?}"),
    }
    first.value = 3;
    first.save_checked(&mut a).expect("the winner saves again");
    assert_eq!(Instant::find(&mut b, 1).unwrap(), first);
}

#[test]
fn a_declared_precision_advances_the_token_in_its_own_steps() {
    let db = test_db!();
    let seed = ahead_of_clock();
    let (mut a, mut b) = setup(&db, seed);
    let mut first = Declared::find(&mut a, 1).unwrap();
    let mut second = Declared::find(&mut b, 1).unwrap();
    first.value = 1;
    first.save_checked(&mut a).expect("the first writer saves");
    assert_eq!(first.updated_at, seed + declared_step());
    second.value = 2;
    assert!(
        matches!(second.save_checked(&mut b), Err(Error::Conflict(_))),
        "the stale writer must not win"
    );
    assert_eq!(Declared::find(&mut b, 1).unwrap(), first);
}

#[test]
fn a_bulk_update_moves_the_token_past_every_token_the_row_held() {
    let db = test_db!();
    let seed = ahead_of_clock();
    let (mut a, mut b) = setup(&db, seed);
    let mut in_flight = Stamp::find(&mut a, 1).unwrap();
    let mut writer = Stamp::find(&mut b, 1).unwrap();
    writer.value = 1;
    writer.save_checked(&mut b).expect("a checked save");
    let touched = Stamp::bulk_update(time_stamps::table, time_stamps::value.eq(7))
        .execute(&mut a)
        .expect("the bulk update");
    assert_eq!(touched, 1);
    let mut bulk = Stamp::find(&mut a, 1).unwrap();
    assert_eq!(bulk.updated_at, seed + Duration::seconds(2));
    for stale in [&mut in_flight, &mut writer] {
        stale.value = 9;
        match stale.save_checked(&mut b) {
            Err(Error::Conflict(conflict)) => assert_eq!(
                conflict.current::<PrimitiveDateTime>(),
                Some(bulk.updated_at)
            ),
            other => panic!("an entity read before the bulk update must conflict, got {other:?}"),
        }
    }
    bulk.value = 8;
    bulk.save_checked(&mut a)
        .expect("the row saves after the bulk update");

    let mut stale = Instant::find(&mut a, 1).unwrap();
    Instant::bulk_update(time_instants::table, time_instants::value.eq(7))
        .execute(&mut a)
        .expect("the bulk update");
    let mut bulk = Instant::find(&mut a, 1).unwrap();
    assert_eq!(bulk.updated_at, seed.assume_utc() + Duration::seconds(1));
    stale.value = 9;
    assert!(
        matches!(stale.save_checked(&mut b), Err(Error::Conflict(_))),
        "an instant read before the bulk update must conflict"
    );
    bulk.value = 8;
    bulk.save_checked(&mut a)
        .expect("the row saves after the bulk update");
    assert_eq!(Instant::find(&mut b, 1).unwrap(), bulk);
}

#[test]
fn a_token_no_fresh_one_can_follow_is_refused_before_any_write() {
    let db = test_db!();
    let seed = ahead_of_clock();
    let (mut a, _) = setup(&db, seed);
    let end = PrimitiveDateTime::MAX;
    let mut stamp = Stamp {
        id: 1,
        value: 7,
        updated_at: end,
    };
    match stamp.save_checked(&mut a) {
        Err(Error::InvalidToken(invalid))
            if invalid.reason == diesel_occ::InvalidTokenReason::OutOfRange => {}
        other => panic!("expected an out-of-range token, got {other:?}"),
    }
    assert_eq!(stamp.updated_at, end, "the entity is untouched");
    assert_eq!(
        Stamp::find(&mut a, 1).unwrap().updated_at,
        seed,
        "nothing was written"
    );
}

#[test]
fn the_start_up_check_reads_the_columns() {
    let db = test_db!();
    let (mut a, _) = setup(&db, ahead_of_clock());
    SchemaCheck::new()
        .entity::<Stamp>()
        .entity::<Instant>()
        .entity::<Declared>()
        .run(&mut a)
        .expect("timestamp columns hold timestamp tokens at their real precision");
    let result = SchemaCheck::new().entity::<Micros>().run(&mut a);
    super::super::assert_micros_checked(result, "time_stamps", DIGITS);
}
