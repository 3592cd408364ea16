//! The scenarios, in both flavours.

flavour_prelude!();

use chrono::{NaiveDateTime, TimeDelta};
use diesel::{ExpressionMethods, Queryable, Selectable};
use diesel_occ::schema_check::SchemaCheck;
use diesel_occ_tests::{Backend, expect_conflict};

use super::{
    COLUMN, DIGITS, Declared, Stamp, ahead_of_clock, assert_micros_checked, assert_out_of_range,
    create_table, stamps,
};

/// The same row, claiming microseconds.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = stamps)]
struct Micros {
    id: i32,
    value: i32,
    #[occ(version, precision = 6)]
    updated_at: NaiveDateTime,
}

/// Creates the token table holding row 1 at a token ahead of the clock; returns two
/// connections and that token.
#[flavour]
async fn setup(db: &TestDb<Conn>) -> (Conn, Conn, NaiveDateTime) {
    let (mut a, b) = (db.conn().await, db.conn().await);
    run_sql(&mut a, &create_table("stamps", COLUMN)).await;
    let seed = ahead_of_clock();
    insert_rows!(&mut a, stamps::table, Stamp::new(1, 0, seed));
    (a, b, seed)
}

/// One step of the declared precision.
fn declared_step() -> TimeDelta {
    TimeDelta::microseconds(10_i64.pow(6 - u32::from(DIGITS)))
}

/// The token row `id` stores.
#[flavour]
async fn stored(conn: &mut Conn, id: i32) -> NaiveDateTime {
    Stamp::find(conn, id).await.expect("the row").updated_at
}

/// The default precision (whole seconds) on every column: a checked insert and an
/// upsert return, and leave in the entity, the token the row stores.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn checked_inserts_and_upserts_issue_the_token_the_column_stores() {
    let db = db!();
    let (mut a, _, _) = setup(&db).await;
    let mut inserted = Stamp::new(2, 0, NaiveDateTime::MIN);
    let token = inserted.insert_checked(&mut a).await.expect("insert");
    assert_eq!(token, stored(&mut a, 2).await);
    assert_eq!(inserted.updated_at, token);
    inserted.value = 1;
    let saved = inserted.save_checked(&mut a).await;
    saved.expect("the first token matches the row");

    let mut upserted = Stamp::new(3, 0, NaiveDateTime::MIN);
    let outcome = upserted.upsert_checked(&mut a, None).await;
    let outcome = outcome.expect("upsert into a free key");
    let inserted = diesel_occ::Upserted::Inserted(stored(&mut a, 3).await);
    assert_eq!(outcome, inserted);
    let outcome = upserted.upsert_checked(&mut a, Some(outcome.token())).await;
    let updated = diesel_occ::Upserted::Updated(stored(&mut a, 3).await);
    assert_eq!(outcome.expect("upsert"), updated);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_stale_writer_in_the_same_second_gets_a_conflict() {
    let db = db!();
    let (mut a, mut b, _) = setup(&db).await;
    let mut first = Stamp::find(&mut a, 1).await.unwrap();
    let mut second = Stamp::find(&mut b, 1).await.unwrap();

    first.value = 1;
    first.save_checked(&mut a).await.expect("first save");
    second.value = 2;
    // The stale writer must not win; the conflict reports the winner's token.
    let conflict = expect_conflict(second.save_checked(&mut b).await);
    assert_eq!(conflict.current::<NaiveDateTime>(), Some(first.updated_at));
    // The row holds the winner's values and exactly its in-memory token.
    assert_eq!(Stamp::find(&mut a, 1).await.unwrap(), first);
    // The winner's entity still matches its row.
    first.value = 3;
    first.save_checked(&mut a).await.expect("saves again");
    assert_eq!(Stamp::find(&mut b, 1).await.unwrap(), first);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_declared_precision_advances_the_token_in_its_own_steps() {
    let db = db!();
    let (mut a, mut b, seed) = setup(&db).await;
    let mut first = Declared::find(&mut a, 1).await.unwrap();
    let mut second = Declared::find(&mut b, 1).await.unwrap();

    first.value = 1;
    first.save_checked(&mut a).await.expect("first save");
    // The clock is behind the token: one step of the declared precision.
    assert_eq!(first.updated_at, seed + declared_step());
    second.value = 2;
    expect_conflict(second.save_checked(&mut b).await);
    assert_eq!(Declared::find(&mut b, 1).await.unwrap(), first);
    first.value = 3;
    first.save_checked(&mut a).await.expect("saves again");
    assert_eq!(first.updated_at, seed + declared_step() + declared_step());
}

/// The row's tokens run ahead of the clock: a bulk update must still move the token
/// past every token the row held (a value taken from the clock would go back to one of
/// them), and every entity read before it conflicts.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_bulk_update_moves_the_token_past_every_token_the_row_held() {
    let db = db!();
    let (mut a, mut b, seed) = setup(&db).await;
    let mut in_flight = Stamp::find(&mut a, 1).await.unwrap();
    let mut writer = Stamp::find(&mut b, 1).await.unwrap();
    writer.value = 1;
    writer.save_checked(&mut b).await.expect("a checked save");
    assert_eq!(writer.updated_at, seed + TimeDelta::seconds(1));

    let bulk = Stamp::bulk_update(stamps::table, stamps::value.eq(7));
    assert_eq!(bulk.execute(&mut a).await.expect("the bulk update"), 1);
    let mut bulk = Stamp::find(&mut a, 1).await.unwrap();
    // One whole second after the token the row held.
    assert_eq!(bulk.updated_at, seed + TimeDelta::seconds(2));

    // An entity read before the bulk update conflicts.
    for (stale, token) in [
        (&mut in_flight, seed),
        (&mut writer, seed + TimeDelta::seconds(1)),
    ] {
        stale.value = 9;
        let conflict = expect_conflict(stale.save_checked(&mut b).await);
        assert_eq!(conflict.expected::<NaiveDateTime>(), Some(token));
        assert_eq!(conflict.current::<NaiveDateTime>(), Some(bulk.updated_at));
    }
    bulk.value = 8;
    let saved = bulk.save_checked(&mut a).await;
    saved.expect("the row saves after the bulk update");
    assert_eq!(Stamp::find(&mut b, 1).await.unwrap(), bulk);

    // A declared precision steps in its own unit (SQLite's date functions in
    // milliseconds at least).
    let before = Declared::find(&mut a, 1).await.unwrap();
    let bulk = Declared::bulk_update(stamps::table, stamps::value.eq(10));
    bulk.execute(&mut a).await.expect("the bulk update");
    let after = Declared::find(&mut a, 1).await.unwrap();
    let step = match Conn::BACKEND {
        Backend::Sqlite => declared_step().max(TimeDelta::milliseconds(1)),
        _ => declared_step(),
    };
    assert_eq!(after.updated_at, before.updated_at + step);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_token_no_fresh_one_can_follow_is_refused_before_any_write() {
    let db = db!();
    let (mut a, _, seed) = setup(&db).await;
    // An entity built from a client's token in the last second of chrono's range: a
    // write would have no later token to store.
    let end = NaiveDateTime::MAX;
    let mut stamp = Stamp::new(1, 7, end);
    let before = stamp.clone();
    assert_out_of_range(stamp.save_checked(&mut a).await);
    assert_out_of_range(stamp.force_increment(&mut a).await);
    let batch = std::slice::from_mut(&mut stamp);
    assert_out_of_range(batch.save_all_checked(&mut a).await);
    assert_out_of_range(Stamp::find_checked(&mut a, 1, &end).await.map(|_| ()));
    assert_eq!(stamp, before, "the entity is untouched");
    let row = Stamp::find(&mut a, 1).await.unwrap();
    assert_eq!(row, Stamp::new(1, 0, seed), "nothing was written");
}

#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn the_start_up_check_reports_a_column_coarser_than_declared() {
    let db = db!();
    let (mut a, _, _) = setup(&db).await;
    let check = SchemaCheck::new().entity::<Stamp>().entity::<Declared>();
    let fits = check.run_in_flavour(&mut a).await;
    fits.expect("whole seconds and the real precision fit");
    let micros = SchemaCheck::new().entity::<Micros>();
    let result = micros.run_in_flavour(&mut a).await;
    assert_micros_checked(result, "stamps", DIGITS);
}
