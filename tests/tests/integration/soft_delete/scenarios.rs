//! Checked soft delete, in both flavours.

flavour_prelude!();

use diesel::prelude::*;
use diesel_occ::Operation;

use super::entities::{Account, expect_conflict};
use super::schema;

#[flavour(test)]
async fn soft_delete_is_checked_and_advances_the_token() {
    let (_db, mut conn) = db_and_conn!();
    insert_rows!(&mut conn, schema::accounts::table, Account::new(1, 100));
    let mut first = Account::find(&mut conn, 1).await.expect("account row");
    let mut second = first.clone();

    first.balance = 1; // not written by the soft delete
    let tombstone = schema::accounts::deleted.eq(true);
    let deleted = first.soft_delete_checked(&mut conn, tombstone).await;
    deleted.expect("soft delete");
    assert_eq!(first.version, 2);
    let stored = Account::find(&mut conn, 1).await.expect("account row");
    let columns = (stored.deleted, stored.balance, stored.version);
    assert_eq!(columns, (true, 100, 2));

    // A writer still holding the live row cannot resurrect or edit it...
    second.balance = 5;
    let mut third = second.clone();
    let conflict = expect_conflict(second.save_checked(&mut conn).await);
    assert_eq!(conflict.current::<i32>(), Some(2));
    // ...nor soft-delete it again from a stale token.
    let again = third.soft_delete_checked(&mut conn, tombstone).await;
    assert_eq!(expect_conflict(again).operation(), Operation::SoftDelete);
    let now = Account::find(&mut conn, 1).await.expect("account row");
    assert_eq!(now, stored);
}
