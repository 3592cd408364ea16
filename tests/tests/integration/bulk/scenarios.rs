//! Bulk updates, in both flavours.

flavour_prelude!();

use diesel::prelude::{ExpressionMethods, QueryDsl};
use diesel_occ::{Error, UuidToken};

use super::entities::{Account, Big, Medium, Small, Ticket};
use super::schema;

/// Row 1 holds `MAX`, row 2 an ordinary token; one bulk write touches both.
/// Row 1 must wrap to `MIN` (row 2 counts on), then save with a checked save,
/// while an entity read before the bulk write conflicts.
#[flavour]
macro_rules! wrap_scenario {
    ($entity:ident, $table:ident, $int:ty, $row:expr) => {{
        let db = db!();
        let mut conn = db.conn().await;
        let row = $row;
        for (id, version) in [(1, <$int>::MAX), (2, 5)] {
            diesel::insert_into(schema::$table::table)
                .values($entity {
                    id,
                    version,
                    ..row.clone()
                })
                .execute(&mut conn)
                .await
                .expect("insert");
        }
        let mut in_flight = $entity::find(&mut conn, 1).await.expect("row 1");

        let touched = $entity::bulk_update(schema::$table::table, schema::$table::value.eq(7))
            .execute(&mut conn)
            .await
            .expect("a bulk update of a row at MAX");
        assert_eq!(touched, 2);

        let mut wrapped = $entity::find(&mut conn, 1).await.expect("row 1");
        assert_eq!((wrapped.value, wrapped.version), (7, <$int>::MIN));
        assert_eq!($entity::find(&mut conn, 2).await.expect("row 2").version, 6);

        wrapped.value = 8;
        wrapped
            .save_checked(&mut conn)
            .await
            .expect("the wrapped row saves");
        assert_eq!(wrapped.version, <$int>::MIN + 1);

        in_flight.value = 9;
        match in_flight.save_checked(&mut conn).await {
            Err(Error::Conflict(conflict)) => {
                assert_eq!(conflict.current::<$int>(), Some(<$int>::MIN + 1))
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert_eq!($entity::find(&mut conn, 1).await.expect("row 1"), wrapped);
    }};
}

#[flavour]
#[tokio::test]
async fn bulk_update_wraps_an_i16_token_at_max() {
    wrap_scenario!(
        Small,
        small_counters,
        i16,
        Small {
            id: 0,
            value: 0,
            version: 0
        }
    );
}

#[flavour]
#[tokio::test]
async fn bulk_update_wraps_an_i32_token_at_max() {
    wrap_scenario!(
        Medium,
        counters,
        i32,
        Medium {
            id: 0,
            value: 0,
            label: None,
            version: 0
        }
    );
}

#[flavour]
#[tokio::test]
async fn bulk_update_wraps_an_i64_token_at_max() {
    wrap_scenario!(
        Big,
        big_counters,
        i64,
        Big {
            id: 0,
            value: 0,
            version: 0
        }
    );
}

/// Accounts 1..=n, balance 100, version 1.
#[flavour]
async fn seed_accounts(conn: &mut Conn, n: i32) {
    for id in 1..=n {
        diesel::insert_into(schema::accounts::table)
            .values(Account::new(id, 100))
            .execute(conn)
            .await
            .expect("insert account");
    }
}

#[flavour]
#[tokio::test]
async fn bulk_update_advances_the_token_of_every_row_it_touches() {
    let db = db!();
    let mut conn = db.conn().await;
    seed_accounts(&mut conn, 3).await;
    let mut in_flight = Vec::new();
    for id in 1..=3 {
        in_flight.push(Account::find(&mut conn, id).await.expect("account row"));
    }

    let touched = Account::bulk_update(
        schema::accounts::table.filter(schema::accounts::id.le(2)),
        schema::accounts::balance.eq(0),
    )
    .execute(&mut conn)
    .await
    .expect("bulk update");
    assert_eq!(touched, 2);

    for mut a in in_flight {
        a.balance += 1;
        let result = a.save_checked(&mut conn).await;
        if a.id <= 2 {
            match result {
                Err(Error::Conflict(conflict)) => assert_eq!(conflict.current::<i32>(), Some(2)),
                other => panic!("expected a conflict, got {other:?}"),
            }
            let stored = Account::find(&mut conn, a.id).await.expect("account row");
            assert_eq!(stored.balance, 0, "the bulk write survives");
        } else {
            result.expect("an untouched row saves");
        }
    }
}

#[flavour]
#[tokio::test]
async fn control_plain_bulk_update_is_silently_overwritten() {
    let db = db!();
    let mut conn = db.conn().await;
    seed_accounts(&mut conn, 1).await;
    let mut in_flight = Account::find(&mut conn, 1).await.expect("account row");
    diesel::update(schema::accounts::table)
        .set(schema::accounts::balance.eq(0))
        .execute(&mut conn)
        .await
        .unwrap();
    in_flight.balance += 1;
    in_flight
        .save_checked(&mut conn)
        .await
        .expect("the stale save wins");
    let stored = Account::find(&mut conn, 1).await.expect("account row");
    assert_eq!(stored.balance, 101, "the bulk write was lost");
}

#[flavour]
#[tokio::test]
async fn bulk_update_draws_a_fresh_uuid() {
    let db = db!();
    let mut conn = db.conn().await;
    let seeded = Ticket {
        id: 1,
        seat: "A1".into(),
        version: UuidToken::initial(),
    };
    diesel::insert_into(schema::tickets::table)
        .values(seeded.clone())
        .execute(&mut conn)
        .await
        .expect("insert ticket");
    Ticket::bulk_update(schema::tickets::table, schema::tickets::seat.eq("Z9"))
        .execute(&mut conn)
        .await
        .unwrap();
    let stored = Ticket::find(&mut conn, 1).await.unwrap();
    assert_ne!(stored.version, seeded.version);
    let mut stale = seeded;
    stale.seat = "A2".into();
    assert!(
        stale
            .save_checked(&mut conn)
            .await
            .unwrap_err()
            .is_conflict()
    );
}
