//! Force increment, in both flavours.

flavour_prelude!();

use diesel::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ::{Error, Operation};
use diesel_occ_tests::statements::{StatementCounter, sql_only};

use super::entities::{Order, OrderItem};
use super::schema;

/// Order 1 with items 1 and 2, every token at 1.
#[flavour]
async fn seed_order(db: &TestDb<Conn>) {
    let mut conn = db.conn().await;
    let order = Order {
        id: 1,
        note: "order".into(),
        version: 1,
    };
    insert_rows!(&mut conn, schema::purchase_orders::table, order);
    for line_no in 1..=2 {
        let item = OrderItem {
            order_id: 1,
            line_no,
            quantity: 1,
            version: 1,
        };
        insert_rows!(&mut conn, schema::purchase_order_items::table, item);
    }
}

/// Two writers edit different items of one order, each in a transaction; with
/// `force`, each also force-increments the order.
#[flavour]
async fn race_items(db: &TestDb<Conn>, force: bool) -> Vec<Result<(), Error>> {
    let report = Race::new(2)
        .run_in_flavour(
            async |writer| {
                let mut conn = db.conn().await;
                let order = Order::find(&mut conn, 1).await.expect("order");
                let item = OrderItem::find(&mut conn, (1, writer as i32 + 1)).await;
                let item = item.expect("item");
                (conn, order, item)
            },
            async |_, (mut conn, mut order, mut item): (Conn, Order, OrderItem)| {
                conn.transaction(async |conn| {
                    item.quantity += 5;
                    item.save_checked(conn).await?;
                    if force {
                        order.force_increment(conn).await?;
                    }
                    Ok(())
                })
                .await
            },
        )
        .await;
    report.into_values().unwrap()
}

#[flavour(test)]
async fn force_increment_makes_writers_of_different_children_conflict_on_the_root() {
    let db = db!();
    seed_order(&db).await;
    let outcomes = race_items(&db, true).await;
    let saved = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(saved, 1, "{outcomes:?}");
    let loser = outcomes.into_iter().find_map(Result::err).unwrap();
    let Error::Conflict(conflict) = loser else {
        panic!("expected a concurrency conflict, got {loser:?}");
    };
    assert_eq!(conflict.table(), "purchase_orders");
    assert_eq!(conflict.operation(), Operation::ForceIncrement);
    assert_eq!(conflict.current::<i32>(), Some(2));

    let mut conn = db.conn().await;
    assert_eq!(Order::find(&mut conn, 1).await.unwrap().version, 2);
    use schema::purchase_order_items::{line_no, quantity, table};
    let query = table.order(line_no).select(quantity);
    let quantities: Vec<i32> = query.load(&mut conn).await.unwrap();
    let written = quantities.iter().filter(|&&q| q == 6).count();
    assert_eq!(written, 1, "the loser's rolled back: {quantities:?}");
}

#[flavour(test)]
async fn control_without_force_increment_both_children_writes_commit() {
    let db = db!();
    seed_order(&db).await;
    let outcomes = race_items(&db, false).await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let root = Order::find(&mut db.conn().await, 1).await.unwrap();
    assert_eq!(root.version, 1, "the root never moved");
}

#[flavour(test)]
async fn force_increment_writes_only_the_token() {
    let db = db!();
    seed_order(&db).await;
    let mut conn = db.conn().await;
    let mut order = Order::find(&mut conn, 1).await.unwrap();
    order.note = "in memory only".into();
    let log = StatementCounter::install_in_flavour(&mut conn);
    let forced = order.force_increment(&mut conn).await;
    forced.expect("force increment");
    let statements = log.take_sql();
    assert_eq!(statements.len(), 1);
    assert!(!sql_only(&statements[0]).contains("note"), "{statements:?}");
    let stored = Order::find(&mut conn, 1).await.unwrap();
    assert_eq!((stored.note.as_str(), stored.version), ("order", 2));
    assert_eq!(order.version, 2);
}
