//! The guard on a timestamp token column, in both flavours.

flavour_prelude!();

use chrono::Utc;
use diesel_occ::Dialect;
use diesel_occ::Error;
use diesel_occ::bypass_guard::BypassGuard;

use super::{AsUtc, COLUMN, DIGITS, SESSION_TIME_ZONE, Stamp, seed, stamps, unit};

/// The token table with one row holding `token`, and the guard on it.
#[flavour]
async fn guarded_row(db: &TestDb<Conn>, token: <Stamp as Versioned>::Token) {
    let mut conn = db.conn().await;
    conn.batch_execute(&format!(
        "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
         updated_at {COLUMN} NOT NULL)"
    ))
    .await
    .expect("token table");
    diesel::insert_into(stamps::table)
        .values(Stamp {
            id: 1,
            value: 0,
            updated_at: token,
        })
        .execute(&mut conn)
        .await
        .expect("seed row");
    let install = BypassGuard::of::<Stamp>()
        .install_sql(Dialect::Postgres)
        .expect("guard DDL");
    conn.batch_execute(&install).await.expect("install guard");
}

/// Runs `sql` as a writer that bypasses diesel-occ, in a session east of UTC.
#[flavour]
async fn bypass(db: &TestDb<Conn>, sql: &str) {
    let mut conn = db.conn().await;
    conn.batch_execute(&format!("SET TIME ZONE '{SESSION_TIME_ZONE}'"))
        .await
        .expect("session time zone");
    conn.batch_execute(sql).await.expect("bypass write");
}

/// Saves `stale` and demands a conflict reporting the row's token.
#[flavour]
async fn assert_stale_save_conflicts(conn: &mut Conn, mut stale: Stamp) -> Stamp {
    let current = Stamp::find(conn, 1).await.expect("the row");
    stale.value = 9;
    match stale.save_checked(conn).await {
        Err(Error::Conflict(conflict)) => {
            assert_eq!(
                conflict.current::<<Stamp as Versioned>::Token>(),
                Some(current.updated_at)
            );
        }
        other => panic!(
            "{COLUMN}: a save from before the bypass write must conflict, got {other:?} \
             (the row held {:?})",
            current.updated_at
        ),
    }
    current
}

#[flavour]
#[tokio::test]
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

#[flavour]
#[tokio::test]
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

#[flavour]
#[tokio::test]
async fn a_bypass_write_that_moves_the_token_back_is_moved_forward() {
    let db = db!();
    let seeded = seed(1);
    guarded_row(&db, AsUtc::from_utc(seeded)).await;
    let mut conn = db.conn().await;
    let stale = Stamp::find(&mut conn, 1).await.unwrap();
    let mut writer = stale.clone();
    writer.value = 1;
    writer
        .save_checked(&mut conn)
        .await
        .expect("a checked save");
    assert_eq!(writer.updated_at.utc(), seeded + unit(DIGITS));

    // A writer that sets the token to its "now", which lags the token by one unit: the
    // token the stale entity holds.
    let step = unit(DIGITS).num_microseconds().unwrap();
    bypass(
        &db,
        &format!(
            "UPDATE stamps SET value = 5, updated_at = updated_at - INTERVAL '{step} microseconds' \
             WHERE id = 1"
        ),
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
