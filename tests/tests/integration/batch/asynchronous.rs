//! Batch saves on an async connection (diesel-async).

use diesel_async::{AsyncConnection, RunQueryDsl};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_tests::AsyncTestDb;
use diesel_occ_tests::statements::{StatementCounter, updates};

use super::entities::Account;
use super::{AsyncConn as Conn, schema};

/// Accounts 1..=n, balance 100, version 1.
async fn seed_accounts(db: &AsyncTestDb<Conn>, n: i32) {
    let mut conn = db.conn().await;
    for id in 1..=n {
        diesel::insert_into(schema::accounts::table)
            .values(Account {
                id,
                balance: 100,
                deleted: false,
                version: 1,
            })
            .execute(&mut conn)
            .await
            .expect("insert account");
    }
}

async fn account(conn: &mut Conn, id: i32) -> Account {
    Account::find(conn, id).await.expect("account row")
}

#[tokio::test]
async fn batch_saves_all_with_one_update_each() {
    let db = async_test_db!();
    seed_accounts(&db, 3).await;
    let mut conn = db.conn().await;
    let mut batch = vec![
        account(&mut conn, 1).await,
        account(&mut conn, 2).await,
        account(&mut conn, 3).await,
    ];
    for a in &mut batch {
        a.balance -= 10;
    }
    let log = StatementCounter::install_async(&mut conn);
    batch.save_all_checked(&mut conn).await.expect("batch save");
    let statements = log.take_sql();
    assert_eq!(
        updates(&statements).len(),
        3,
        "one UPDATE per entity: {statements:?}"
    );
    assert!(
        statements
            .iter()
            .all(|s| !s.trim_start().to_ascii_uppercase().starts_with("SELECT")),
        "no read on success: {statements:?}"
    );
    for a in &batch {
        assert_eq!(a.version, 2);
        assert_eq!(&account(&mut conn, a.id).await, a);
    }
}

#[tokio::test]
async fn batch_conflict_reports_every_stale_and_deleted_entity_and_writes_nothing() {
    let db = async_test_db!();
    seed_accounts(&db, 4).await;
    let mut conn = db.conn().await;
    let mut batch = vec![
        account(&mut conn, 1).await,
        account(&mut conn, 2).await,
        account(&mut conn, 3).await,
        account(&mut conn, 4).await,
    ];
    // Another connection: account 2 is stale, account 4 is deleted.
    let mut other = db.conn().await;
    let mut two = account(&mut other, 2).await;
    two.balance = 50;
    two.save_checked(&mut other).await.expect("other save");
    account(&mut other, 4)
        .await
        .delete_checked(&mut other)
        .await
        .expect("other delete");

    for a in &mut batch {
        a.balance = 0;
    }
    let before = batch.clone();
    let error = batch.save_all_checked(&mut conn).await.unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.total(), 4);
    assert_eq!(
        conflict.indices().collect::<Vec<_>>(),
        [1, 3],
        "every conflict: {conflict:?}"
    );
    assert_eq!(conflict.conflict_at(1).unwrap().current::<i32>(), Some(2));
    assert!(conflict.conflict_at(3).unwrap().is_deleted());
    assert!(error.is_retryable());
    assert_eq!(batch, before, "no token advanced");
    assert_eq!(account(&mut conn, 1).await.balance, 100, "rolled back");
    assert_eq!(account(&mut conn, 3).await.balance, 100, "rolled back");
    assert_eq!(account(&mut conn, 2).await.balance, 50);
}

#[tokio::test]
async fn a_failed_batch_inside_a_transaction_rolls_back_to_its_savepoint_only() {
    let db = async_test_db!();
    seed_accounts(&db, 3).await;
    let mut conn = db.conn().await;
    let mut batch = [account(&mut conn, 1).await, account(&mut conn, 2).await];
    let mut other = account(&mut conn, 2).await;
    other.balance = 42;
    other.save_checked(&mut conn).await.expect("other save");

    let mut three = account(&mut conn, 3).await;
    let batch_error = conn
        .transaction(async |conn| {
            three.balance = 3;
            three.save_checked(conn).await?;
            batch[0].balance = 0;
            let error = batch.save_all_checked(conn).await.unwrap_err();
            Ok::<_, Error>(error)
        })
        .await
        .expect("the outer transaction commits");
    assert_eq!(
        batch_error
            .as_batch_conflict()
            .unwrap()
            .indices()
            .collect::<Vec<_>>(),
        [1]
    );
    assert_eq!(
        account(&mut conn, 3).await.balance,
        3,
        "the outer write committed"
    );
    assert_eq!(
        account(&mut conn, 1).await.balance,
        100,
        "the batch rolled back"
    );
    assert_eq!(batch[0].version, 1);
}

#[tokio::test]
async fn racing_batch_and_single_save_leave_one_consistent_outcome() {
    let db = async_test_db!();
    seed_accounts(&db, 2).await;
    let report = Race::new(2)
        .run_asynchronous(
            async |_| {
                let mut conn = db.conn().await;
                let batch = vec![account(&mut conn, 1).await, account(&mut conn, 2).await];
                (conn, batch)
            },
            async |writer, (mut conn, mut batch): (Conn, Vec<Account>)| {
                if writer == 0 {
                    for a in &mut batch {
                        a.balance = 0;
                    }
                    batch
                        .save_all_checked(&mut conn)
                        .await
                        .map_err(|e| e.is_retryable())
                } else {
                    batch[1].balance = 1;
                    batch[1]
                        .save_checked(&mut conn)
                        .await
                        .map_err(|e| e.is_conflict())
                }
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let mut conn = db.conn().await;
    let (one, two) = (account(&mut conn, 1).await, account(&mut conn, 2).await);
    match (&outcomes[0], &outcomes[1]) {
        (Ok(()), Err(true)) => assert_eq!((one.balance, two.balance), (0, 0)),
        (Err(true), Ok(())) => {
            assert_eq!(
                (one.balance, two.balance),
                (100, 1),
                "the batch wrote nothing"
            );
        }
        other => panic!("exactly one writer wins: {other:?}"),
    }
}
