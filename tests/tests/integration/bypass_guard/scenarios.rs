//! The bypass-writer guard, in both flavours.

flavour_prelude!();

use chrono::NaiveDateTime;
use diesel::ExpressionMethods;
use diesel_occ::bypass_guard::{BypassGuard, GuardError};
use diesel_occ::{Error, UuidToken};

use super::entities::{Account, Stamped, Ticket, expect_conflict, guard_dialect};
use super::schema;

#[flavour]
async fn seed_account(db: &TestDb<Conn>) {
    insert_rows!(
        &mut db.conn().await,
        schema::accounts::table,
        Account::new(1, 100)
    );
}

#[flavour]
async fn account(conn: &mut Conn) -> Account {
    Account::find(conn, 1).await.expect("account row")
}

/// Reads account 1, lets a raw write change its balance, then saves the stale read.
#[flavour]
async fn bypass_then_save(db: &TestDb<Conn>) -> Result<(), Error> {
    let mut conn = db.conn().await;
    let mut mine = account(&mut conn).await;
    raw_sql(db, "UPDATE accounts SET balance = 7 WHERE id = 1").await;
    mine.balance = 90;
    mine.save_checked(&mut conn).await
}

/// Installs `guard`; the DDL's error when this backend refuses it.
#[flavour]
async fn install(conn: &mut Conn, guard: &BypassGuard) -> Result<(), GuardError> {
    let install = guard.install_sql(guard_dialect())?;
    conn.batch_execute(&install).await.expect("install guard");
    Ok(())
}

#[flavour(test)]
async fn raw_update_without_the_guard_is_a_lost_update() {
    let db = db!();
    seed_account(&db).await;
    let saved = bypass_then_save(&db).await;
    saved.expect("the stale save succeeds");
    let stored = account(&mut db.conn().await).await;
    assert_eq!(stored.balance, 90, "the raw write (balance 7) was lost");
}

#[flavour(test)]
async fn raw_update_with_the_guard_is_a_conflict() {
    let db = db!();
    seed_account(&db).await;
    let mut conn = db.conn().await;
    let guard = BypassGuard::of::<Account>();
    install(&mut conn, &guard).await.expect("guard DDL");

    let conflict = expect_conflict(bypass_then_save(&db).await);
    let current = conflict.current::<i32>();
    assert_eq!(current, Some(2), "the trigger advanced the token");
    let balance = account(&mut conn).await.balance;
    assert_eq!(balance, 7, "the raw write survives");

    // The library's own writes are not bumped twice.
    let mut fresh = account(&mut conn).await;
    fresh.balance = 8;
    fresh.save_checked(&mut conn).await.expect("checked save");
    let stored = account(&mut conn).await;
    assert_eq!(stored, fresh, "stored token = the one it assigned");

    // Uninstalled, the lost update is back.
    let uninstall = guard.uninstall_sql(guard_dialect()).expect("guard DDL");
    conn.batch_execute(&uninstall).await.expect("uninstall");
    bypass_then_save(&db).await.expect("lost update again");
}

#[flavour(test)]
async fn uuid_token_guard_advances_on_raw_updates() {
    let (db, mut conn) = db_and_conn!();
    let first = UuidToken::initial();
    let row = {
        use schema::tickets::dsl::*;
        (id.eq(1), seat.eq("A1"), version.eq(first))
    };
    insert_rows!(&mut conn, schema::tickets::table, row);
    let guard = BypassGuard::of::<Ticket>();
    install(&mut conn, &guard).await.expect("guard DDL");
    let mut mine = Ticket::find(&mut conn, 1).await.unwrap();
    raw_sql(&db, "UPDATE tickets SET seat = 'B2' WHERE id = 1").await;
    let current = Ticket::find(&mut conn, 1).await.unwrap().version;
    assert_ne!(current, first, "the trigger drew a fresh UUID");
    mine.seat = "C3".into();
    let conflict = expect_conflict(mine.save_checked(&mut conn).await);
    assert_eq!(conflict.current::<UuidToken>(), Some(current));
}

#[flavour(test)]
async fn timestamp_token_guard_advances_on_raw_updates() {
    let (db, mut conn) = db_and_conn!();
    let first = NaiveDateTime::initial();
    let row = {
        use schema::stamped::dsl::*;
        (id.eq(1), value.eq(0), updated_at.eq(first))
    };
    insert_rows!(&mut conn, schema::stamped::table, row);
    let installed = install(&mut conn, &BypassGuard::of::<Stamped>()).await;
    if guard_dialect() != diesel_occ::Dialect::Postgres {
        assert!(installed.is_err(), "timestamp guards are PostgreSQL only");
        return;
    }
    installed.expect("guard DDL");

    let mut mine = Stamped::find(&mut conn, 1).await.unwrap();
    raw_sql(&db, "UPDATE stamped SET value = 5 WHERE id = 1").await;
    let current = Stamped::find(&mut conn, 1).await.unwrap().updated_at;
    assert!(current > first, "the trigger moved the timestamp forward");
    mine.value = 9;
    let conflict = expect_conflict(mine.save_checked(&mut conn).await);
    assert_eq!(conflict.current::<NaiveDateTime>(), Some(current));
    // The library's own save is left alone by the trigger.
    let mut fresh = Stamped::find(&mut conn, 1).await.unwrap();
    fresh.value = 10;
    fresh.save_checked(&mut conn).await.unwrap();
    assert_eq!(Stamped::find(&mut conn, 1).await.unwrap(), fresh);
}
