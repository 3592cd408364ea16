//! Batch saves on a blocking connection.

use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_tests::statements::{StatementCounter, sql_only, updates};
use diesel_occ_tests::{Backend, TestConnection, TestDb};

use super::entities::Account;
use super::{Conn, schema};

/// Accounts 1..=n, balance 100, version 1.
fn seed_accounts(db: &TestDb<Conn>, n: i32) {
    let mut conn = db.conn();
    let rows: Vec<Account> = (1..=n)
        .map(|id| Account {
            id,
            balance: 100,
            deleted: false,
            version: 1,
        })
        .collect();
    for chunk in rows.chunks(500) {
        diesel::insert_into(schema::accounts::table)
            .values(chunk)
            .execute(&mut conn)
            .expect("insert accounts");
    }
}

/// Accounts 1..=n as read, ordered by id.
fn accounts(conn: &mut Conn, n: i32) -> Vec<Account> {
    schema::accounts::table
        .filter(schema::accounts::id.le(n))
        .order(schema::accounts::id)
        .select(Account::as_select())
        .load(conn)
        .expect("accounts")
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
    assert_batch_statements(&statements, 3);
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

/// What a successful batch of `n` entities sends: on PostgreSQL `BEGIN`, ONE statement
/// per 64 entities holding their guarded UPDATEs, and `COMMIT`; on MySQL and
/// SQLite `BEGIN`, one UPDATE per entity and `COMMIT`.
fn assert_batch_statements(statements: &[String], n: usize) {
    let (first, last) = (statements.first(), statements.last());
    assert_eq!(first.map(String::as_str), Some("BEGIN"), "{statements:?}");
    assert_eq!(last.map(String::as_str), Some("COMMIT"), "{statements:?}");
    let body = &statements[1..statements.len() - 1];
    if Conn::BACKEND == Backend::Postgres {
        assert_eq!(body.len(), n.div_ceil(64), "one statement per 64 entities");
        for (chunk, statement) in body.iter().enumerate() {
            let updates = statement.matches("UPDATE \"accounts\" SET").count();
            assert_eq!(updates, (n - chunk * 64).min(64), "{}", sql_only(statement));
            assert!(statement.starts_with("WITH \"occ_0\" AS (UPDATE"), "{statement}");
        }
    } else {
        assert_eq!(updates(body).len(), n, "one UPDATE per entity");
        assert_eq!(body.len(), n, "{statements:?}");
    }
}

#[test]
fn a_batch_of_100_sends_two_statements_on_postgres_where_single_saves_send_100() {
    let db = test_db!();
    seed_accounts(&db, 100);
    let mut conn = db.conn();
    let log = StatementCounter::install(&mut conn);

    let mut singles = accounts(&mut conn, 100);
    log.take();
    for a in &mut singles {
        a.balance -= 1;
        a.save_checked(&mut conn).expect("single save");
    }
    assert_eq!(log.take(), 100, "one statement per single save");

    let mut batch = accounts(&mut conn, 100);
    log.take_sql();
    for a in &mut batch {
        a.balance -= 1;
    }
    batch.save_all_checked(&mut conn).expect("batch save");
    let statements = log.take_sql();
    assert_batch_statements(&statements, 100);
    // PostgreSQL: BEGIN, 64 UPDATEs in one statement, 36 in another, COMMIT.
    let expected = if Conn::BACKEND == Backend::Postgres { 4 } else { 102 };
    assert_eq!(statements.len(), expected, "statements for 100 entities");
    assert_eq!(accounts(&mut conn, 100), batch, "every row written, every token fresh");
    assert!(batch.iter().all(|a| a.version == 3 && a.balance == 98));
}

#[test]
fn a_batch_larger_than_one_statement_names_conflicts_in_every_part() {
    let db = test_db!();
    seed_accounts(&db, 1001);
    let mut conn = db.conn();
    let mut batch = accounts(&mut conn, 1001);
    // Stale: the first entity, the last of the first statement (64 entities), one in
    // the middle and the last (alone in the last statement); deleted: the first of the
    // second statement.
    let mut other = db.conn();
    for id in [1, 64, 500, 1001] {
        let mut a = account(&mut other, id);
        a.balance = 7;
        a.save_checked(&mut other).expect("other save");
    }
    account(&mut other, 65)
        .delete_checked(&mut other)
        .expect("other delete");

    for a in &mut batch {
        a.balance = 0;
    }
    let before = batch.clone();
    let error = batch.save_all_checked(&mut conn).unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.total(), 1001);
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [0, 63, 64, 499, 1000]);
    assert!(conflict.conflict_at(64).unwrap().is_deleted());
    for index in [0, 63, 499, 1000] {
        assert_eq!(conflict.conflict_at(index).unwrap().current::<i32>(), Some(2));
    }
    assert_eq!(batch, before, "no token advanced");
    let rows = accounts(&mut conn, 1001);
    assert_eq!(rows.len(), 1000);
    assert!(
        rows.iter().all(|a| a.balance != 0),
        "nothing of the batch was written"
    );

    // Read again, the same batch commits in full.
    let mut batch = accounts(&mut conn, 1001);
    for a in &mut batch {
        a.balance = 0;
    }
    let log = StatementCounter::install(&mut conn);
    batch.save_all_checked(&mut conn).expect("batch save");
    assert_batch_statements(&log.take_sql(), 1000);
    assert_eq!(accounts(&mut conn, 1001), batch);
}

#[test]
fn several_stale_and_a_deleted_entity_among_100_are_all_named_and_nothing_is_written() {
    let db = test_db!();
    seed_accounts(&db, 100);
    let mut conn = db.conn();
    let mut batch = accounts(&mut conn, 100);
    let mut other = db.conn();
    for id in [8, 43, 100] {
        let mut a = account(&mut other, id);
        a.balance = 50;
        a.save_checked(&mut other).expect("other save");
    }
    account(&mut other, 64)
        .delete_checked(&mut other)
        .expect("other delete");

    for a in &mut batch {
        a.balance = 0;
    }
    let before = batch.clone();
    let log = StatementCounter::install(&mut conn);
    let error = batch.save_all_checked(&mut conn).unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [7, 42, 63, 99]);
    assert!(conflict.conflict_at(63).unwrap().is_deleted());
    for index in [7, 42, 99] {
        let stale = conflict.conflict_at(index).unwrap();
        assert!(!stale.is_deleted());
        assert_eq!(stale.current::<i32>(), Some(2));
    }
    assert!(error.is_retryable());
    let statements = log.take_sql();
    assert_eq!(
        statements.last().map(String::as_str),
        Some("ROLLBACK"),
        "{statements:?}"
    );
    assert_eq!(batch, before, "no token advanced");
    let rows = accounts(&mut conn, 100);
    assert_eq!(rows.len(), 99);
    assert!(rows.iter().all(|a| a.balance != 0), "nothing was written");
    assert!(rows.iter().filter(|a| a.version == 1).all(|a| a.balance == 100));
}

#[test]
fn a_batch_holding_a_row_twice_writes_it_once_and_names_the_second() {
    let db = test_db!();
    seed_accounts(&db, 3);
    let mut conn = db.conn();
    let mut batch = accounts(&mut conn, 3);
    batch.push(batch[1].clone());
    for a in &mut batch {
        a.balance = 0;
    }
    let error = batch.save_all_checked(&mut conn).unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [3]);
    // Stale against the token the batch's own first write of the row assigned.
    assert_eq!(conflict.conflict_at(3).unwrap().current::<i32>(), Some(2));
    assert!(accounts(&mut conn, 3).iter().all(|a| a.balance == 100 && a.version == 1));
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
