//! Bulk updates, in both flavours.

flavour_prelude!();

use diesel::prelude::{ExpressionMethods, QueryDsl};
use diesel_occ::UuidToken;
use diesel_occ_tests::expect_conflict;

use super::entities::{Account, Big, Medium, Small, Ticket};
use super::schema;

/// Row 1 holds `MAX`, row 2 an ordinary token (`$row(id, token)` makes a row); one bulk
/// write touches both.
/// Row 1 must wrap to `MIN` (row 2 counts on), then save with a checked save,
/// while an entity read before the bulk write conflicts.
#[flavour]
macro_rules! wrap_scenario {
    ($entity:ident, $table:ident, $int:ty, $row:expr) => {{
        let (_db, mut conn) = db_and_conn!();
        for (id, version) in [(1, <$int>::MAX), (2, 5)] {
            insert_rows!(&mut conn, schema::$table::table, $row(id, version));
        }
        let mut in_flight = $entity::find(&mut conn, 1).await.expect("row 1");

        let bulk = $entity::bulk_update(schema::$table::table, schema::$table::value.eq(7));
        let touched = bulk.execute(&mut conn).await;
        assert_eq!(touched.expect("a bulk update of a row at MAX"), 2);

        let mut wrapped = $entity::find(&mut conn, 1).await.expect("row 1");
        assert_eq!((wrapped.value, wrapped.version), (7, <$int>::MIN));
        assert_eq!($entity::find(&mut conn, 2).await.expect("row 2").version, 6);

        wrapped.value = 8;
        let saved = wrapped.save_checked(&mut conn).await;
        saved.expect("the wrapped row saves");
        assert_eq!(wrapped.version, <$int>::MIN + 1);

        in_flight.value = 9;
        let conflict = expect_conflict(in_flight.save_checked(&mut conn).await);
        assert_eq!(conflict.current::<$int>(), Some(<$int>::MIN + 1));
        assert_eq!($entity::find(&mut conn, 1).await.expect("row 1"), wrapped);
    }};
}

#[flavour(test)]
async fn bulk_update_wraps_an_i16_token_at_max() {
    let row = |id, version| Small {
        id,
        value: 0,
        version,
    };
    wrap_scenario!(Small, small_counters, i16, row);
}

#[flavour(test)]
async fn bulk_update_wraps_an_i32_token_at_max() {
    let row = |id, version| Medium {
        version,
        ..Medium::new(id, 0)
    };
    wrap_scenario!(Medium, counters, i32, row);
}

#[flavour(test)]
async fn bulk_update_wraps_an_i64_token_at_max() {
    let row = |id, version| Big {
        id,
        value: 0,
        version,
    };
    wrap_scenario!(Big, big_counters, i64, row);
}

/// Accounts 1..=n, balance 100, version 1.
#[flavour]
async fn seed_accounts(conn: &mut Conn, n: i32) {
    for id in 1..=n {
        insert_rows!(&mut *conn, schema::accounts::table, Account::new(id, 100));
    }
}

#[flavour(test)]
async fn bulk_update_advances_the_token_of_every_row_it_touches() {
    let (_db, mut conn) = db_and_conn!();
    seed_accounts(&mut conn, 3).await;
    let mut in_flight = Vec::new();
    for key in 1..=3 {
        in_flight.push(Account::find(&mut conn, key).await.expect("account row"));
    }

    use schema::accounts::{balance, id, table};
    let bulk = Account::bulk_update(table.filter(id.le(2)), balance.eq(0));
    assert_eq!(bulk.execute(&mut conn).await.expect("bulk update"), 2);

    for mut a in in_flight {
        a.balance += 1;
        let result = a.save_checked(&mut conn).await;
        if a.id <= 2 {
            assert_eq!(expect_conflict(result).current::<i32>(), Some(2));
            let stored = Account::find(&mut conn, a.id).await.expect("account row");
            assert_eq!(stored.balance, 0, "the bulk write survives");
        } else {
            result.expect("an untouched row saves");
        }
    }
}

#[flavour(test)]
async fn control_plain_bulk_update_is_silently_overwritten() {
    let (_db, mut conn) = db_and_conn!();
    seed_accounts(&mut conn, 1).await;
    let mut in_flight = Account::find(&mut conn, 1).await.expect("account row");
    let plain = diesel::update(schema::accounts::table).set(schema::accounts::balance.eq(0));
    plain.execute(&mut conn).await.unwrap();
    in_flight.balance += 1;
    let saved = in_flight.save_checked(&mut conn).await;
    saved.expect("the stale save wins");
    let stored = Account::find(&mut conn, 1).await.expect("account row");
    assert_eq!(stored.balance, 101, "the bulk write was lost");
}

#[flavour(test)]
async fn bulk_update_draws_a_fresh_uuid() {
    let (_db, mut conn) = db_and_conn!();
    let (seat, version) = ("A1".into(), UuidToken::initial());
    let seeded = Ticket {
        id: 1,
        seat,
        version,
    };
    insert_rows!(&mut conn, schema::tickets::table, seeded.clone());
    let bulk = Ticket::bulk_update(schema::tickets::table, schema::tickets::seat.eq("Z9"));
    bulk.execute(&mut conn).await.unwrap();
    let stored = Ticket::find(&mut conn, 1).await.unwrap();
    assert_ne!(stored.version, seeded.version);
    let mut stale = seeded;
    stale.seat = "A2".into();
    expect_conflict(stale.save_checked(&mut conn).await);
}
