//! Batch saves on a blocking connection.

use std::fmt::Debug;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ::Error;
use diesel_occ::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_tests::statements::StatementCounter;
use diesel_occ_tests::wait;
use diesel_occ_tests::{Backend, TestConnection, TestDb, wait_until};

use super::entities::{Account, Counter, Note, OrderLine, Stamp, Ticket, WorkItem, work_items};
use super::setup::{Kind, assert_batch_statements, bump_second, other_writer, seed, seed_accounts};
use super::{Conn, schema};

/// Accounts 1..=n, balance 100, version 1.
fn seed_accounts_in(db: &TestDb<Conn>, n: i32) {
    let mut conn = db.conn();
    for sql in seed_accounts(n) {
        conn.batch_execute(&sql).expect("insert accounts");
    }
}

/// Runs the other writer's SQL on a connection of its own.
fn other_writes(db: &TestDb<Conn>, sql: &str) {
    db.conn().batch_execute(sql).expect("the other writer");
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

fn assert_statements(statements: &[String], n: usize) {
    assert_batch_statements(Conn::BACKEND, "accounts", statements, n);
}

#[test]
fn batch_saves_all_with_one_update_each() {
    let db = test_db!();
    seed_accounts_in(&db, 3);
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
    assert_statements(&statements, 3);
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
fn a_batch_of_100_sends_one_statement_on_postgres_where_single_saves_send_100() {
    let db = test_db!();
    seed_accounts_in(&db, 100);
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
    assert_statements(&statements, 100);
    // PostgreSQL: BEGIN, one UPDATE over 100 VALUES rows, COMMIT.
    let expected = if Conn::BACKEND == Backend::Postgres {
        3
    } else {
        102
    };
    assert_eq!(statements.len(), expected, "statements for 100 entities");
    assert_eq!(
        accounts(&mut conn, 100),
        batch,
        "every row written, every token fresh"
    );
    assert!(batch.iter().all(|a| a.version == 3 && a.balance == 98));
}

#[test]
fn a_batch_of_1001_names_every_conflict_and_a_batch_of_1000_is_one_statement() {
    let db = test_db!();
    seed_accounts_in(&db, 1001);
    let mut conn = db.conn();
    let mut batch = accounts(&mut conn, 1001);
    // Stale: the first entity, the 64th, one in the middle and the last; deleted: the
    // 65th.
    other_writes(&db, &other_writer(&[1, 64, 500, 1001], 7, &[65]));

    for a in &mut batch {
        a.balance = 0;
    }
    let before = batch.clone();
    let error = batch.save_all_checked(&mut conn).unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.total(), 1001);
    assert_eq!(
        conflict.indices().collect::<Vec<_>>(),
        [0, 63, 64, 499, 1000]
    );
    assert!(conflict.conflict_at(64).unwrap().is_deleted());
    for index in [0, 63, 499, 1000] {
        assert_eq!(
            conflict.conflict_at(index).unwrap().current::<i32>(),
            Some(2)
        );
    }
    assert_eq!(batch, before, "no token advanced");
    let rows = accounts(&mut conn, 1001);
    assert_eq!(rows.len(), 1000);
    assert!(
        rows.iter().all(|a| a.balance != 0),
        "nothing of the batch was written"
    );

    // Read again, the same batch commits in full: BEGIN, one statement, COMMIT.
    let mut batch = accounts(&mut conn, 1001);
    for a in &mut batch {
        a.balance = 0;
    }
    let log = StatementCounter::install(&mut conn);
    batch.save_all_checked(&mut conn).expect("batch save");
    assert_statements(&log.take_sql(), 1000);
    assert_eq!(accounts(&mut conn, 1001), batch);
}

#[test]
fn several_stale_and_a_deleted_entity_among_100_are_all_named_and_nothing_is_written() {
    let db = test_db!();
    seed_accounts_in(&db, 100);
    let mut conn = db.conn();
    let mut batch = accounts(&mut conn, 100);
    other_writes(&db, &other_writer(&[8, 43, 100], 50, &[64]));

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
    assert!(
        rows.iter()
            .filter(|a| a.version == 1)
            .all(|a| a.balance == 100)
    );
}

#[test]
fn a_batch_holding_a_row_twice_writes_it_once_and_names_the_second() {
    let db = test_db!();
    seed_accounts_in(&db, 3);
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
    assert!(
        accounts(&mut conn, 3)
            .iter()
            .all(|a| a.balance == 100 && a.version == 1)
    );
}

#[test]
fn batch_conflict_reports_every_stale_and_deleted_entity_and_writes_nothing() {
    let db = test_db!();
    seed_accounts_in(&db, 4);
    let mut conn = db.conn();
    let mut batch = vec![
        account(&mut conn, 1),
        account(&mut conn, 2),
        account(&mut conn, 3),
        account(&mut conn, 4),
    ];
    // Another connection: account 2 is stale, account 4 is deleted.
    other_writes(&db, &other_writer(&[2], 50, &[4]));

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
    seed_accounts_in(&db, 3);
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
    seed_accounts_in(&db, 2);
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

/// PostgreSQL, READ COMMITTED: the batch's one statement waits for a row another writer
/// has written but not committed; that writer commits a new token; PostgreSQL checks
/// the join again against the committed row (EvalPlanQual), so that entity is a
/// conflict, never a silent overwrite, and the batch writes nothing. The interleaving
/// is forced: the other writer commits only once the batch waits for its lock.
#[test]
fn a_row_committed_while_the_batch_waits_for_its_lock_is_a_conflict_not_an_overwrite() {
    if Conn::BACKEND != Backend::Postgres {
        return;
    }
    let db = test_db!();
    seed_accounts_in(&db, 3);
    let mut conn = db.conn();
    let mut batch = accounts(&mut conn, 3);
    for a in &mut batch {
        a.balance = 0;
    }
    let before = batch.clone();
    let pid: i32 = diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>(
        "pg_backend_pid()",
    ))
    .get_result(&mut conn)
    .expect("pid");

    // The other writer saves account 2 with the library, inside a transaction it
    // keeps open: the row is locked, the new token not committed yet.
    let mut other = db.conn();
    other.batch_execute("BEGIN").expect("begin");
    let mut two = account(&mut other, 2);
    two.balance = 42;
    two.save_checked(&mut other).expect("other save");

    let saver = std::thread::spawn(move || {
        let outcome = batch.save_all_checked(&mut conn);
        (batch, outcome)
    });
    let mut watcher = db.conn();
    wait_for_lock(&mut watcher, pid);
    other.batch_execute("COMMIT").expect("commit");
    let (batch, outcome) = saver.join().expect("the batch thread");

    let error = outcome.expect_err("the batch must not overwrite the committed write");
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [1]);
    assert_eq!(conflict.conflict_at(1).unwrap().current::<i32>(), Some(2));
    assert_eq!(batch, before, "no token advanced");
    let rows = accounts(&mut watcher, 3);
    assert_eq!(
        rows.iter()
            .map(|a| (a.balance, a.version))
            .collect::<Vec<_>>(),
        [(100, 1), (42, 2), (100, 1)],
        "the other writer's commit stands, the batch wrote nothing"
    );
}

/// Waits until the backend `pid` waits for a lock: the state is polled, the test never
/// relies on how long anything takes.
fn wait_for_lock(watcher: &mut Conn, pid: i32) {
    let what = format!("backend {pid} to wait for a lock");
    wait_until(&what, wait::TIMEOUT, || {
        let waiting: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(&format!(
            "(SELECT count(*) FROM pg_stat_activity \
                 WHERE pid = {pid} AND wait_event_type = 'Lock')"
        )))
        .get_result(watcher)
        .expect("pg_stat_activity");
        waiting == 1
    });
}

/// Three rows of `kind` saved as one batch (on PostgreSQL one `VALUES` statement) read
/// back exactly as saved; then, with the second row changed by another writer, the
/// same batch names that entity and writes nothing.
fn saves_a_batch_and_names_a_stale_entity<T>(
    db: &TestDb<Conn>,
    kind: Kind,
    table: &str,
    load: fn(&mut Conn) -> Vec<T>,
    edit: fn(&mut T),
) where
    T: Versioned + Clone + PartialEq + Debug,
    [T]: BatchDsl<Conn>,
{
    let mut conn = db.conn();
    conn.batch_execute(&seed(kind, Conn::BACKEND))
        .expect("seed");
    let mut batch = load(&mut conn);
    assert_eq!(batch.len(), 3);
    batch.iter_mut().for_each(edit);
    let log = StatementCounter::install(&mut conn);
    batch.save_all_checked(&mut conn).expect("batch save");
    assert_batch_statements(Conn::BACKEND, table, &log.take_sql(), 3);
    let saved = load(&mut conn);
    assert_eq!(saved, batch, "every row written, every token fresh");

    let mut stale = saved.clone();
    stale.iter_mut().for_each(edit);
    other_writes(db, &bump_second(kind, Conn::BACKEND));
    let before = stale.clone();
    let error = stale.save_all_checked(&mut conn).unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [1], "{conflict:?}");
    assert!(!conflict.conflict_at(1).unwrap().is_deleted());
    assert_eq!(stale, before, "no token advanced");
    let rows = load(&mut conn);
    assert_eq!(
        (&rows[0], &rows[2]),
        (&saved[0], &saved[2]),
        "nothing was written"
    );
    assert_ne!(rows[1], saved[1], "the other writer's row stands");
}

#[test]
fn a_batch_of_uuid_tokens_is_saved_and_checked() {
    let db = test_db!();
    saves_a_batch_and_names_a_stale_entity::<Ticket>(
        &db,
        Kind::Tickets,
        "tickets",
        |conn| {
            use schema::tickets::dsl::*;
            tickets
                .order(id)
                .select(Ticket::as_select())
                .load(conn)
                .expect("tickets")
        },
        |t| t.seat.push('!'),
    );
}

#[test]
fn a_batch_of_microsecond_timestamp_tokens_is_saved_and_checked() {
    let db = test_db!();
    saves_a_batch_and_names_a_stale_entity::<Stamp>(
        &db,
        Kind::Stamped,
        "stamped",
        |conn| {
            use schema::stamped::dsl::*;
            stamped
                .order(id)
                .select(Stamp::as_select())
                .load(conn)
                .expect("stamped")
        },
        |s| s.value += 10,
    );
}

#[test]
fn a_batch_of_composite_keys_is_saved_and_checked() {
    let db = test_db!();
    saves_a_batch_and_names_a_stale_entity::<OrderLine>(
        &db,
        Kind::OrderLines,
        "order_lines",
        |conn| {
            use schema::order_lines::dsl::*;
            order_lines
                .order((order_id, line_no))
                .select(OrderLine::as_select())
                .load(conn)
                .expect("order lines")
        },
        |l| l.quantity += 10,
    );
}

#[test]
fn a_batch_of_renamed_columns_is_saved_and_checked() {
    let db = test_db!();
    saves_a_batch_and_names_a_stale_entity::<Note>(
        &db,
        Kind::Notes,
        "notes",
        |conn| {
            use schema::notes::dsl::*;
            notes
                .order(note_id)
                .select(Note::as_select())
                .load(conn)
                .expect("notes")
        },
        |n| n.body.push('!'),
    );
}

#[test]
fn a_batch_writing_null_to_every_row_of_a_bigint_column_is_saved_and_checked() {
    let db = test_db!();
    saves_a_batch_and_names_a_stale_entity::<WorkItem>(
        &db,
        Kind::WorkItems,
        "work_items",
        |conn| {
            work_items::table
                .order(work_items::id)
                .select(WorkItem::as_select())
                .load(conn)
                .expect("work items")
        },
        |w| {
            w.status = "PENDING".into();
            w.lease_owner = None;
            w.lease_expires_at = None;
            w.fence += 1;
        },
    );
}

/// An `Option` field without `treat_none_as_null`: `None` leaves the column alone in a
/// batch exactly as in a single save, whichever row it is in.
#[test]
fn a_batch_leaves_a_skipped_none_column_alone_as_the_single_save_does() {
    let db = test_db!();
    let mut conn = db.conn();
    conn.batch_execute(&seed(Kind::Counters, Conn::BACKEND))
        .expect("seed");
    let load = |conn: &mut Conn| {
        use schema::counters::dsl::*;
        counters
            .order(id)
            .select(Counter::as_select())
            .load(conn)
            .expect("counters")
    };
    let mut batch = load(&mut conn);
    // Row 1: `None` over 'one' (left alone); row 2: a new label; row 3: `None` over NULL.
    batch[0].label = None;
    batch[1].label = Some("second".into());
    for c in &mut batch {
        c.value += 10;
    }
    let log = StatementCounter::install(&mut conn);
    batch.save_all_checked(&mut conn).expect("batch save");
    assert_batch_statements(Conn::BACKEND, "counters", &log.take_sql(), 3);
    let rows = load(&mut conn);
    assert_eq!(
        rows.iter()
            .map(|c| (c.value, c.label.as_deref(), c.version))
            .collect::<Vec<_>>(),
        [(11, Some("one"), 2), (12, Some("second"), 2), (13, None, 2)]
    );

    // The same edits through single saves leave the same labels.
    let mut singles = load(&mut conn);
    singles[0].label = None;
    singles[1].label = Some("second".into());
    for c in &mut singles {
        c.save_checked(&mut conn).expect("single save");
    }
    let labels = |rows: &[Counter]| rows.iter().map(|c| c.label.clone()).collect::<Vec<_>>();
    assert_eq!(labels(&load(&mut conn)), labels(&rows));
}
