//! The guard on a timestamp token column, in both flavours.

flavour_prelude!();

use chrono::Utc;
use diesel::ExpressionMethods;
use diesel_occ::Dialect;
use diesel_occ::Error;
use diesel_occ::bypass_guard::BypassGuard;

use crate::timestamp_precision::create_table;

use super::{AsUtc, COLUMN, DIGITS, SESSION_TIME_ZONE, Stamp, seed, stamps, unit};

/// The token table with one row holding `token`, and the guard on it.
#[flavour]
async fn guarded_row(db: &TestDb<Conn>, token: <Stamp as Versioned>::Token) {
    let mut conn = db.conn().await;
    run_sql(&mut conn, &create_table("stamps", COLUMN)).await;
    let row = {
        use stamps::{id, updated_at, value};
        (id.eq(1), value.eq(0), updated_at.eq(token))
    };
    insert_rows!(&mut conn, stamps::table, row);
    let install = BypassGuard::of::<Stamp>().install_sql(Dialect::Postgres);
    run_sql(&mut conn, &install.expect("guard DDL")).await;
}

/// Runs `sql` as a writer that bypasses diesel-occ, in a session east of UTC.
#[flavour]
async fn bypass(db: &TestDb<Conn>, sql: &str) {
    let mut conn = db.conn().await;
    run_sql(&mut conn, &format!("SET TIME ZONE '{SESSION_TIME_ZONE}'")).await;
    run_sql(&mut conn, sql).await;
}

/// Saves `stale` and demands a conflict reporting the row's token.
#[flavour]
async fn assert_stale_save_conflicts(conn: &mut Conn, mut stale: Stamp) -> Stamp {
    let current = Stamp::find(conn, 1).await.expect("the row");
    stale.value = 9;
    match stale.save_checked(conn).await {
        Err(Error::Conflict(conflict)) => {
            let token = conflict.current::<<Stamp as Versioned>::Token>();
            assert_eq!(token, Some(current.updated_at));
        }
        other => panic!(
            "{COLUMN}: a save from before the bypass write must conflict, got {other:?} \
             (the row held {:?})",
            current.updated_at
        ),
    }
    current
}

#[flavour(test)]
async fn a_bypass_write_ahead_of_the_clock_advances_the_token_one_unit() {
    let db = db!();
    let seeded = seed(1);
    guarded_row(&db, AsUtc::from_utc(seeded)).await;
    let mut conn = db.conn().await;
    let stale = Stamp::find(&mut conn, 1).await.unwrap();

    bypass(&db, "UPDATE stamps SET value = 5 WHERE id = 1").await;
    let current = assert_stale_save_conflicts(&mut conn, stale).await;
    assert_eq!(current.value, 5, "the bypass write survives");
    assert_eq!(
        current.updated_at.utc(),
        seeded + unit(DIGITS),
        "{COLUMN}: one unit of the column after the old token"
    );
}

#[flavour(test)]
async fn a_bypass_write_behind_the_clock_takes_the_clock_in_utc() {
    let db = db!();
    guarded_row(&db, AsUtc::from_utc(seed(-1))).await;
    let mut conn = db.conn().await;
    let stale = Stamp::find(&mut conn, 1).await.unwrap();

    let before = Utc::now().naive_utc();
    bypass(&db, "UPDATE stamps SET value = 5 WHERE id = 1").await;
    let after = Utc::now().naive_utc();
    let current = assert_stale_save_conflicts(&mut conn, stale).await;
    let token = current.updated_at.utc();
    // The column rounds to its unit: half a unit either way of the clock.
    assert!(
        before - unit(DIGITS) <= token && token <= after + unit(DIGITS),
        "{COLUMN}: the token {token} is the clock in UTC, between {before} and {after}"
    );
}

#[flavour(test)]
async fn a_bypass_write_that_moves_the_token_back_is_moved_forward() {
    let db = db!();
    let seeded = seed(1);
    guarded_row(&db, AsUtc::from_utc(seeded)).await;
    let mut conn = db.conn().await;
    let stale = Stamp::find(&mut conn, 1).await.unwrap();
    let mut writer = stale.clone();
    writer.value = 1;
    let saved = writer.save_checked(&mut conn).await;
    saved.expect("a checked save");
    assert_eq!(writer.updated_at.utc(), seeded + unit(DIGITS));

    // A writer that sets the token to its "now", which lags the token by one unit: the
    // token the stale entity holds.
    let step = unit(DIGITS).num_microseconds().unwrap();
    let back = format!("updated_at = updated_at - INTERVAL '{step} microseconds'");
    bypass(
        &db,
        &format!("UPDATE stamps SET value = 5, {back} WHERE id = 1"),
    )
    .await;
    let current = assert_stale_save_conflicts(&mut conn, stale).await;
    assert_eq!(current.value, 5, "the bypass write survives");
    assert!(
        current.updated_at.utc() > writer.updated_at.utc(),
        "{COLUMN}: the token only moves forward, got {:?} after {:?}",
        current.updated_at,
        writer.updated_at
    );
    // The library's own save is left alone by the trigger.
    let mut fresh = current;
    fresh.value = 10;
    fresh.save_checked(&mut conn).await.expect("a fresh save");
    assert_eq!(Stamp::find(&mut conn, 1).await.unwrap(), fresh);
}
