//! Batch saves on an async connection (diesel-async).

use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_tests::statements::{StatementCounter, sql_only, updates};
use diesel_occ_tests::{AsyncTestConnection, AsyncTestDb, Backend};

use super::entities::Account;
use super::{AsyncConn as Conn, schema};

/// Accounts 1..=n, balance 100, version 1 (diesel-async has no multi-row insert on
/// SQLite: plain SQL, 500 rows per statement).
async fn seed_accounts(db: &AsyncTestDb<Conn>, n: i32) {
    let mut conn = db.conn().await;
    let ids: Vec<i32> = (1..=n).collect();
    for chunk in ids.chunks(500) {
        let rows: Vec<String> = chunk
            .iter()
            .map(|id| format!("({id}, 100, FALSE, 1)"))
            .collect();
        conn.batch_execute(&format!(
            "INSERT INTO accounts (id, balance, deleted, version) VALUES {}",
            rows.join(", ")
        ))
        .await
        .expect("insert accounts");
    }
}

/// Accounts 1..=n as read, ordered by id.
async fn accounts(conn: &mut Conn, n: i32) -> Vec<Account> {
    use diesel::prelude::{ExpressionMethods, QueryDsl, SelectableHelper};
    schema::accounts::table
        .filter(schema::accounts::id.le(n))
        .order(schema::accounts::id)
        .select(Account::as_select())
        .load(conn)
        .await
        .expect("accounts")
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
    assert_batch_statements(&statements, 3);
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

#[tokio::test]
async fn a_batch_of_100_sends_two_statements_on_postgres_where_single_saves_send_100() {
    let db = async_test_db!();
    seed_accounts(&db, 100).await;
    let mut conn = db.conn().await;
    let log = StatementCounter::install_async(&mut conn);

    let mut singles = accounts(&mut conn, 100).await;
    log.take();
    for a in &mut singles {
        a.balance -= 1;
        a.save_checked(&mut conn).await.expect("single save");
    }
    assert_eq!(log.take(), 100, "one statement per single save");

    let mut batch = accounts(&mut conn, 100).await;
    log.take_sql();
    for a in &mut batch {
        a.balance -= 1;
    }
    batch.save_all_checked(&mut conn).await.expect("batch save");
    let statements = log.take_sql();
    assert_batch_statements(&statements, 100);
    // PostgreSQL: BEGIN, 64 UPDATEs in one statement, 36 in another, COMMIT.
    let expected = if Conn::BACKEND == Backend::Postgres { 4 } else { 102 };
    assert_eq!(statements.len(), expected, "statements for 100 entities");
    assert_eq!(accounts(&mut conn, 100).await, batch, "every row written, every token fresh");
    assert!(batch.iter().all(|a| a.version == 3 && a.balance == 98));
}

#[tokio::test]
async fn a_batch_larger_than_one_statement_names_conflicts_in_every_part() {
    let db = async_test_db!();
    seed_accounts(&db, 1001).await;
    let mut conn = db.conn().await;
    let mut batch = accounts(&mut conn, 1001).await;
    // Stale: the first entity, the last of the first statement (64 entities), one in
    // the middle and the last (alone in the last statement); deleted: the first of the
    // second statement.
    let mut other = db.conn().await;
    for id in [1, 64, 500, 1001] {
        let mut a = account(&mut other, id).await;
        a.balance = 7;
        a.save_checked(&mut other).await.expect("other save");
    }
    account(&mut other, 65)
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
    assert_eq!(conflict.total(), 1001);
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [0, 63, 64, 499, 1000]);
    assert!(conflict.conflict_at(64).unwrap().is_deleted());
    for index in [0, 63, 499, 1000] {
        assert_eq!(conflict.conflict_at(index).unwrap().current::<i32>(), Some(2));
    }
    assert_eq!(batch, before, "no token advanced");
    let rows = accounts(&mut conn, 1001).await;
    assert_eq!(rows.len(), 1000);
    assert!(
        rows.iter().all(|a| a.balance != 0),
        "nothing of the batch was written"
    );

    let mut batch = accounts(&mut conn, 1001).await;
    for a in &mut batch {
        a.balance = 0;
    }
    let log = StatementCounter::install_async(&mut conn);
    batch.save_all_checked(&mut conn).await.expect("batch save");
    assert_batch_statements(&log.take_sql(), 1000);
    assert_eq!(accounts(&mut conn, 1001).await, batch);
}

#[tokio::test]
async fn several_stale_and_a_deleted_entity_among_100_are_all_named_and_nothing_is_written() {
    let db = async_test_db!();
    seed_accounts(&db, 100).await;
    let mut conn = db.conn().await;
    let mut batch = accounts(&mut conn, 100).await;
    let mut other = db.conn().await;
    for id in [8, 43, 100] {
        let mut a = account(&mut other, id).await;
        a.balance = 50;
        a.save_checked(&mut other).await.expect("other save");
    }
    account(&mut other, 64)
        .await
        .delete_checked(&mut other)
        .await
        .expect("other delete");

    for a in &mut batch {
        a.balance = 0;
    }
    let before = batch.clone();
    let log = StatementCounter::install_async(&mut conn);
    let error = batch.save_all_checked(&mut conn).await.unwrap_err();
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
    let rows = accounts(&mut conn, 100).await;
    assert_eq!(rows.len(), 99);
    assert!(rows.iter().all(|a| a.balance != 0), "nothing was written");
    assert!(rows.iter().filter(|a| a.version == 1).all(|a| a.balance == 100));
}

#[tokio::test]
async fn a_batch_holding_a_row_twice_writes_it_once_and_names_the_second() {
    let db = async_test_db!();
    seed_accounts(&db, 3).await;
    let mut conn = db.conn().await;
    let mut batch = accounts(&mut conn, 3).await;
    batch.push(batch[1].clone());
    for a in &mut batch {
        a.balance = 0;
    }
    let error = batch.save_all_checked(&mut conn).await.unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [3]);
    assert_eq!(conflict.conflict_at(3).unwrap().current::<i32>(), Some(2));
    let rows = accounts(&mut conn, 3).await;
    assert!(rows.iter().all(|a| a.balance == 100 && a.version == 1));
}

/// PostgreSQL: a batch of 100 is one statement, which has written rows 1 to 49 when it
/// waits for row 50's lock. Dropped there, it leaves nothing written once its
/// connection is closed, and the connection refuses further checked writes meanwhile.
#[tokio::test]
async fn a_batch_of_100_dropped_mid_statement_leaves_nothing_written() {
    if Conn::BACKEND != Backend::Postgres {
        return;
    }
    let db = async_test_db!();
    seed_accounts(&db, 100).await;
    let mut conn = db.conn().await;
    let mut batch = accounts(&mut conn, 100).await;
    for a in &mut batch {
        a.balance = 0;
    }
    let pid: i32 = diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>(
        "pg_backend_pid()",
    ))
    .get_result(&mut conn)
    .await
    .expect("pid");
    let mut locker = db.conn().await;
    locker
        .batch_execute("BEGIN; SELECT * FROM accounts WHERE id = 50 FOR UPDATE")
        .await
        .expect("lock row 50");
    let mut watcher = db.conn().await;
    {
        let save = batch.save_all_checked(&mut conn);
        tokio::pin!(save);
        let waiting = async {
            loop {
                let waiting: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
                    &format!(
                        "(SELECT count(*) FROM pg_stat_activity \
                         WHERE pid = {pid} AND wait_event_type = 'Lock')"
                    ),
                ))
                .get_result(&mut watcher)
                .await
                .expect("pg_stat_activity");
                if waiting == 1 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        tokio::select! {
            biased;
            outcome = &mut save => panic!("the batch finished: {outcome:?}"),
            () = waiting => {}
        }
    }
    let mut one = batch[0].clone();
    one.balance = 1;
    assert!(one.save_checked(&mut conn).await.is_err(), "the connection is broken");
    assert!(batch.iter().all(|a| a.version == 1), "no token advanced");
    drop(conn);
    locker.batch_execute("COMMIT").await.expect("unlock");

    let rows = accounts(&mut watcher, 100).await;
    assert_eq!(rows.len(), 100);
    assert!(
        rows.iter().all(|a| a.balance == 100 && a.version == 1),
        "nothing of the batch was written"
    );
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
