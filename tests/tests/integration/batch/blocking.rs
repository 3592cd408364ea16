//! Batch saves on a blocking connection.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_tests::TestDb;
use diesel_occ_tests::statements::{StatementCounter, updates};

use super::entities::Account;
use super::{Conn, schema};

/// Accounts 1..=n, balance 100, version 1.
fn seed_accounts(db: &TestDb<Conn>, n: i32) {
    let mut conn = db.conn();
    for id in 1..=n {
        diesel::insert_into(schema::accounts::table)
            .values(Account {
                id,
                balance: 100,
                deleted: false,
                version: 1,
            })
            .execute(&mut conn)
            .expect("insert account");
    }
}

fn account(conn: &mut Conn, id: i32) -> Account {
    Account::find(conn, id).expect("account row")
}

#[test]
fn batch_saves_all_with_one_update_each() {
    let db = test_db!();
    seed_accounts(&db, 3);
    let mut conn = db.conn();
    let mut batch = vec![
        account(&mut conn, 1),
        account(&mut conn, 2),
        account(&mut conn, 3),
    ];
    for a in &mut batch {
        a.balance -= 10;
    }
    let log = StatementCounter::install(&mut conn);
    batch.save_all_checked(&mut conn).expect("batch save");
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
        assert_eq!(&account(&mut conn, a.id), a);
    }
}

#[test]
fn batch_conflict_reports_every_stale_and_deleted_entity_and_writes_nothing() {
    let db = test_db!();
    seed_accounts(&db, 4);
    let mut conn = db.conn();
    let mut batch = vec![
        account(&mut conn, 1),
        account(&mut conn, 2),
        account(&mut conn, 3),
        account(&mut conn, 4),
    ];
    // Another connection: account 2 is stale, account 4 is deleted.
    let mut other = db.conn();
    let mut two = account(&mut other, 2);
    two.balance = 50;
    two.save_checked(&mut other).expect("other save");
    account(&mut other, 4)
        .delete_checked(&mut other)
        .expect("other delete");

    for a in &mut batch {
        a.balance = 0;
    }
    let before = batch.clone();
    let error = batch.save_all_checked(&mut conn).unwrap_err();
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
    assert_eq!(account(&mut conn, 1).balance, 100, "rolled back");
    assert_eq!(account(&mut conn, 3).balance, 100, "rolled back");
    assert_eq!(account(&mut conn, 2).balance, 50);
}

#[test]
fn a_failed_batch_inside_a_transaction_rolls_back_to_its_savepoint_only() {
    let db = test_db!();
    seed_accounts(&db, 3);
    let mut conn = db.conn();
    let mut batch = [account(&mut conn, 1), account(&mut conn, 2)];
    let mut other = account(&mut conn, 2);
    other.balance = 42;
    other.save_checked(&mut conn).expect("other save");

    let mut three = account(&mut conn, 3);
    let batch_error = conn
        .transaction::<_, Error, _>(|conn| {
            three.balance = 3;
            three.save_checked(conn)?;
            batch[0].balance = 0;
            let error = batch.save_all_checked(conn).unwrap_err();
            Ok(error)
        })
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
        account(&mut conn, 3).balance,
        3,
        "the outer write committed"
    );
    assert_eq!(account(&mut conn, 1).balance, 100, "the batch rolled back");
    assert_eq!(batch[0].version, 1);
}

#[test]
fn racing_batch_and_single_save_leave_one_consistent_outcome() {
    let db = test_db!();
    seed_accounts(&db, 2);
    let report = Race::new(2).run(
        |_| {
            let mut conn = db.conn();
            let batch = vec![account(&mut conn, 1), account(&mut conn, 2)];
            (conn, batch)
        },
        |writer, (mut conn, mut batch)| {
            if writer == 0 {
                for a in &mut batch {
                    a.balance = 0;
                }
                batch
                    .save_all_checked(&mut conn)
                    .map_err(|e| e.is_retryable())
            } else {
                batch[1].balance = 1;
                batch[1]
                    .save_checked(&mut conn)
                    .map_err(|e| e.is_conflict())
            }
        },
    );
    let outcomes = report.into_values().unwrap();
    let mut conn = db.conn();
    let (one, two) = (account(&mut conn, 1), account(&mut conn, 2));
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
