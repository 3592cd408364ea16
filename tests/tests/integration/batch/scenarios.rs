//! Batch saves, in both flavours.

flavour_prelude!();

use std::fmt::Debug;

use diesel::prelude::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_occ::testing::Race;
use diesel_occ::{BatchConflict, Error};
use diesel_occ_tests::Backend;
use diesel_occ_tests::statements::StatementCounter;
use diesel_occ_tests::wait;

use super::entities::{Account, Counter, Note, OrderLine, Stamp, Ticket, WorkItem, work_items};
use super::schema;
use super::setup::{assert_batch_statements, bump_second, other_writer, seed, seed_accounts};

/// Seeds accounts 1..=n (balance 100, version 1); returns a connection and the accounts
/// as it reads them.
#[flavour]
async fn seeded(db: &TestDb<Conn>, n: i32) -> (Conn, Vec<Account>) {
    for sql in seed_accounts(n) {
        raw_sql(db, &sql).await;
    }
    let mut conn = db.conn().await;
    let batch = accounts(&mut conn, n).await;
    (conn, batch)
}

/// Accounts 1..=n as read, ordered by id.
#[flavour]
async fn accounts(conn: &mut Conn, n: i32) -> Vec<Account> {
    use schema::accounts::dsl::{accounts, id};
    let query = accounts
        .filter(id.le(n))
        .order(id)
        .select(Account::as_select());
    query.load(conn).await.expect("accounts")
}

#[flavour]
async fn account(conn: &mut Conn, id: i32) -> Account {
    Account::find(conn, id).await.expect("account row")
}

/// Saves `batch`, which must succeed with the statements a batch of its length sends to
/// `table` (see [`assert_batch_statements`]); returns them.
#[flavour]
async fn save_batch<T>(conn: &mut Conn, table: &str, batch: &mut [T]) -> Vec<String>
where
    [T]: BatchDsl<Conn>,
{
    let log = StatementCounter::install_in_flavour(conn);
    batch.save_all_checked(conn).await.expect("batch save");
    let statements = log.take_sql();
    assert_batch_statements(Conn::BACKEND, table, &statements, batch.len());
    statements
}

/// Saves `batch`, which must fail with a batch conflict naming exactly the entities at
/// `indices`, every token left as it was; returns the error.
#[flavour]
async fn conflicts_at<T>(conn: &mut Conn, batch: &mut [T], indices: &[usize]) -> Error
where
    T: Versioned + Clone + PartialEq + Debug,
    [T]: BatchDsl<Conn>,
{
    let before = batch.to_vec();
    let error = batch.save_all_checked(conn).await.unwrap_err();
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    let named: Vec<_> = conflict.indices().collect();
    assert_eq!(named, indices, "{conflict:?}");
    assert_eq!(batch, before, "no token advanced");
    error
}

/// The token the conflict at `index` found in the row.
fn current_at(conflict: &BatchConflict, index: usize) -> Option<i32> {
    conflict.conflict_at(index).unwrap().current::<i32>()
}

#[flavour(test)]
async fn batch_saves_all_with_one_update_each() {
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 3).await;
    batch.iter_mut().for_each(|a| a.balance -= 10);
    let statements = save_batch(&mut conn, "accounts", &mut batch).await;
    let read = |s: &String| s.trim_start().to_ascii_uppercase().starts_with("SELECT");
    let reads = statements.iter().any(read);
    assert!(!reads, "no read on success: {statements:?}");
    assert!(batch.iter().all(|a| a.version == 2));
    assert_eq!(accounts(&mut conn, 3).await, batch);
}

#[flavour(test)]
async fn a_batch_of_100_sends_one_statement_on_postgres_where_single_saves_send_100() {
    let db = db!();
    let (mut conn, mut singles) = seeded(&db, 100).await;
    let log = StatementCounter::install_in_flavour(&mut conn);
    for a in &mut singles {
        a.balance -= 1;
        a.save_checked(&mut conn).await.expect("single save");
    }
    assert_eq!(log.take(), 100, "one statement per single save");

    let mut batch = accounts(&mut conn, 100).await;
    batch.iter_mut().for_each(|a| a.balance -= 1);
    let statements = save_batch(&mut conn, "accounts", &mut batch).await;
    // PostgreSQL: BEGIN, one UPDATE over 100 VALUES rows, COMMIT.
    let postgres = Conn::BACKEND == Backend::Postgres;
    let expected = if postgres { 3 } else { 102 };
    assert_eq!(statements.len(), expected, "statements for 100 entities");
    let rows = accounts(&mut conn, 100).await;
    assert_eq!(rows, batch, "every row written, every token fresh");
    assert!(batch.iter().all(|a| a.version == 3 && a.balance == 98));
}

#[flavour(test)]
async fn a_batch_of_1001_names_every_conflict_and_a_batch_of_1000_is_one_statement() {
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 1001).await;
    // Stale: the first entity, the 64th, one in the middle and the last; deleted: the
    // 65th.
    raw_sql(&db, &other_writer(&[1, 64, 500, 1001], 7, &[65])).await;
    batch.iter_mut().for_each(|a| a.balance = 0);
    let error = conflicts_at(&mut conn, &mut batch, &[0, 63, 64, 499, 1000]).await;
    let conflict = error.as_batch_conflict().unwrap();
    assert_eq!(conflict.total(), 1001);
    assert!(conflict.conflict_at(64).unwrap().is_deleted());
    for index in [0, 63, 499, 1000] {
        assert_eq!(current_at(conflict, index), Some(2));
    }
    let rows = accounts(&mut conn, 1001).await;
    assert_eq!(rows.len(), 1000);
    assert!(rows.iter().all(|a| a.balance != 0), "nothing written");

    // Read again, the same batch commits in full: BEGIN, one statement, COMMIT.
    let mut batch = accounts(&mut conn, 1001).await;
    batch.iter_mut().for_each(|a| a.balance = 0);
    save_batch(&mut conn, "accounts", &mut batch).await;
    assert_eq!(accounts(&mut conn, 1001).await, batch);
}

#[flavour(test)]
async fn several_stale_and_a_deleted_entity_among_100_are_all_named_and_nothing_is_written() {
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 100).await;
    raw_sql(&db, &other_writer(&[8, 43, 100], 50, &[64])).await;
    batch.iter_mut().for_each(|a| a.balance = 0);
    let log = StatementCounter::install_in_flavour(&mut conn);
    let error = conflicts_at(&mut conn, &mut batch, &[7, 42, 63, 99]).await;
    let conflict = error.as_batch_conflict().unwrap();
    assert!(conflict.conflict_at(63).unwrap().is_deleted());
    for index in [7, 42, 99] {
        assert!(!conflict.conflict_at(index).unwrap().is_deleted());
        assert_eq!(current_at(conflict, index), Some(2));
    }
    assert!(error.is_retryable());
    let statements = log.take_sql();
    let last = statements.last().map(String::as_str);
    assert_eq!(last, Some("ROLLBACK"), "{statements:?}");
    let rows = accounts(&mut conn, 100).await;
    assert_eq!(rows.len(), 99);
    assert!(rows.iter().all(|a| a.balance != 0), "nothing was written");
    let mut untouched = rows.iter().filter(|a| a.version == 1);
    assert!(untouched.all(|a| a.balance == 100));
}

#[flavour(test)]
async fn a_batch_holding_a_row_twice_writes_it_once_and_names_the_second() {
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 3).await;
    batch.push(batch[1].clone());
    batch.iter_mut().for_each(|a| a.balance = 0);
    let error = conflicts_at(&mut conn, &mut batch, &[3]).await;
    // Stale against the token the batch's own first write of the row assigned.
    assert_eq!(current_at(error.as_batch_conflict().unwrap(), 3), Some(2));
    let rows = accounts(&mut conn, 3).await;
    assert!(rows.iter().all(|a| a.balance == 100 && a.version == 1));
}

/// PostgreSQL: a batch of 100 is one statement, which may have written other rows when
/// it waits for row 50's lock. Dropped there, it leaves nothing written once its
/// connection is closed, and the connection refuses further checked writes meanwhile.
#[flavour(asynchronous, test)]
async fn a_batch_of_100_dropped_mid_statement_leaves_nothing_written() {
    if Conn::BACKEND != Backend::Postgres {
        return;
    }
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 100).await;
    batch.iter_mut().for_each(|a| a.balance = 0);
    let pid = backend_pid(&mut conn).await;
    let mut locker = db.conn().await;
    let lock = "BEGIN; SELECT * FROM accounts WHERE id = 50 FOR UPDATE";
    locker.batch_execute(lock).await.expect("lock row 50");
    let mut watcher = db.conn().await;
    {
        let save = batch.save_all_checked(&mut conn);
        tokio::pin!(save);
        let waiting = wait_for_lock(&mut watcher, pid);
        tokio::select! {
            biased;
            outcome = &mut save => panic!("the batch finished: {outcome:?}"),
            () = waiting => {}
        }
    }
    let mut one = batch[0].clone();
    one.balance = 1;
    let refused = one.save_checked(&mut conn).await;
    assert!(refused.is_err(), "the connection is broken");
    assert!(batch.iter().all(|a| a.version == 1), "no token advanced");
    drop(conn);
    locker.batch_execute("COMMIT").await.expect("unlock");

    let rows = accounts(&mut watcher, 100).await;
    assert_eq!(rows.len(), 100);
    let untouched = rows.iter().all(|a| a.balance == 100 && a.version == 1);
    assert!(untouched, "nothing of the batch was written");
}

#[flavour(test)]
async fn batch_conflict_reports_every_stale_and_deleted_entity_and_writes_nothing() {
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 4).await;
    // Another connection: account 2 is stale, account 4 is deleted.
    raw_sql(&db, &other_writer(&[2], 50, &[4])).await;
    batch.iter_mut().for_each(|a| a.balance = 0);
    let error = conflicts_at(&mut conn, &mut batch, &[1, 3]).await;
    let conflict = error.as_batch_conflict().unwrap();
    assert_eq!(conflict.total(), 4);
    assert_eq!(current_at(conflict, 1), Some(2));
    assert!(conflict.conflict_at(3).unwrap().is_deleted());
    assert!(error.is_retryable());
    assert_eq!(account(&mut conn, 1).await.balance, 100, "rolled back");
    assert_eq!(account(&mut conn, 3).await.balance, 100, "rolled back");
    assert_eq!(account(&mut conn, 2).await.balance, 50);
}

#[flavour(test)]
async fn a_failed_batch_inside_a_transaction_rolls_back_to_its_savepoint_only() {
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 3).await;
    let mut three = batch.pop().expect("account 3");
    let mut other = batch[1].clone();
    other.balance = 42;
    other.save_checked(&mut conn).await.expect("other save");

    let outer = conn.transaction(async |conn| {
        three.balance = 3;
        three.save_checked(conn).await?;
        batch[0].balance = 0;
        let error = batch.save_all_checked(conn).await.unwrap_err();
        Ok::<_, Error>(error)
    });
    let batch_error = outer.await.expect("the outer transaction commits");
    let conflict = batch_error.as_batch_conflict().unwrap();
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [1]);
    let rows = accounts(&mut conn, 3).await;
    assert_eq!(rows[2].balance, 3, "the outer write committed");
    assert_eq!(rows[0].balance, 100, "the batch rolled back");
    assert_eq!(batch[0].version, 1);
}

#[flavour(test)]
async fn racing_batch_and_single_save_leave_one_consistent_outcome() {
    let db = db!();
    seeded(&db, 2).await;
    let report = Race::new(2)
        .run_in_flavour(
            async |_| {
                let mut conn = db.conn().await;
                let batch = accounts(&mut conn, 2).await;
                (conn, batch)
            },
            async |writer, (mut conn, mut batch): (Conn, Vec<Account>)| {
                if writer == 0 {
                    batch.iter_mut().for_each(|a| a.balance = 0);
                    let saved = batch.save_all_checked(&mut conn).await;
                    saved.map_err(|e| e.is_retryable())
                } else {
                    batch[1].balance = 1;
                    let saved = batch[1].save_checked(&mut conn).await;
                    saved.map_err(|e| e.is_conflict())
                }
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let rows = accounts(&mut db.conn().await, 2).await;
    let balances = (rows[0].balance, rows[1].balance);
    match (&outcomes[0], &outcomes[1]) {
        (Ok(()), Err(true)) => assert_eq!(balances, (0, 0)),
        (Err(true), Ok(())) => assert_eq!(balances, (100, 1), "the batch wrote nothing"),
        other => panic!("exactly one writer wins: {other:?}"),
    }
}

/// PostgreSQL, READ COMMITTED: the batch's one statement waits for a row another writer
/// has written but not committed; that writer commits a new token; PostgreSQL checks
/// the join again against the committed row (EvalPlanQual), so that entity is a
/// conflict, never a silent overwrite, and the batch writes nothing. The interleaving
/// is forced: the other writer commits only once the batch waits for its lock.
#[flavour(test)]
async fn a_row_committed_while_the_batch_waits_for_its_lock_is_a_conflict_not_an_overwrite() {
    if Conn::BACKEND != Backend::Postgres {
        return;
    }
    let db = db!();
    let (mut conn, mut batch) = seeded(&db, 3).await;
    batch.iter_mut().for_each(|a| a.balance = 0);
    let before = batch.clone();
    let pid = backend_pid(&mut conn).await;

    // The other writer saves account 2 with the library, inside a transaction it
    // keeps open: the row is locked, the new token not committed yet.
    let mut other = db.conn().await;
    other.batch_execute("BEGIN").await.expect("begin");
    let mut two = account(&mut other, 2).await;
    two.balance = 42;
    two.save_checked(&mut other).await.expect("other save");

    let mut watcher = db.conn().await;
    let outcome = beside(
        async || batch.save_all_checked(&mut conn).await,
        async move || {
            wait_for_lock(&mut watcher, pid).await;
            other.batch_execute("COMMIT").await.expect("commit");
        },
    )
    .await;

    let error = outcome.expect_err("the batch must not overwrite the committed write");
    let conflict = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(conflict.indices().collect::<Vec<_>>(), [1]);
    assert_eq!(current_at(conflict, 1), Some(2));
    assert_eq!(batch, before, "no token advanced");
    let rows = accounts(&mut db.conn().await, 3).await;
    let rows: Vec<_> = rows.iter().map(|a| (a.balance, a.version)).collect();
    // The other writer's commit stands, the batch wrote nothing.
    assert_eq!(rows, [(100, 1), (42, 2), (100, 1)]);
}

/// Runs `save` on a thread of its own while `meanwhile` runs on the test's (which
/// drops what it holds, releasing the batch, if it panics).
#[flavour(blocking)]
fn beside<T: Send>(save: impl FnOnce() -> T + Send, meanwhile: impl FnOnce()) -> T {
    std::thread::scope(|scope| {
        let saver = scope.spawn(save);
        meanwhile();
        saver.join().expect("the batch thread")
    })
}

/// Polls `save` and `meanwhile` together on the test's task.
#[flavour(asynchronous)]
async fn beside<T>(save: impl AsyncFnOnce() -> T, meanwhile: impl AsyncFnOnce()) -> T {
    tokio::join!(save(), meanwhile()).0
}

/// The PostgreSQL backend process serving `conn`.
#[flavour]
async fn backend_pid(conn: &mut Conn) -> i32 {
    let pid = diesel::dsl::sql::<diesel::sql_types::Integer>("pg_backend_pid()");
    diesel::select(pid).get_result(conn).await.expect("pid")
}

/// Waits until the backend `pid` waits for a lock: the state is polled, the test never
/// relies on how long anything takes.
#[flavour]
async fn wait_for_lock(watcher: &mut Conn, pid: i32) {
    let what = format!("backend {pid} to wait for a lock");
    let sql = format!(
        "(SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND wait_event_type = 'Lock')"
    );
    wait_until(&what, wait::TIMEOUT, async || {
        let query = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(&sql));
        let waiting: i64 = query.get_result(&mut *watcher).await.expect("lock waits");
        waiting == 1
    })
    .await;
}

/// Three rows of `table` saved as one batch (on PostgreSQL one `VALUES` statement) read
/// back exactly as saved; then, with the second row changed by another writer, the
/// same batch names that entity and writes nothing.
#[flavour]
async fn saves_a_batch_and_names_a_stale_entity<T>(
    db: &TestDb<Conn>,
    table: &str,
    load: impl AsyncFn(&mut Conn) -> Vec<T>,
    edit: fn(&mut T),
) where
    T: Versioned + Clone + PartialEq + Debug,
    [T]: BatchDsl<Conn>,
{
    raw_sql(db, &seed(table, Conn::BACKEND)).await;
    let mut conn = db.conn().await;
    let mut batch = load(&mut conn).await;
    assert_eq!(batch.len(), 3);
    batch.iter_mut().for_each(edit);
    save_batch(&mut conn, table, &mut batch).await;
    let saved = load(&mut conn).await;
    assert_eq!(saved, batch, "every row written, every token fresh");

    let mut stale = saved.clone();
    stale.iter_mut().for_each(edit);
    raw_sql(db, &bump_second(table, Conn::BACKEND)).await;
    let error = conflicts_at(&mut conn, &mut stale, &[1]).await;
    let conflict = error.as_batch_conflict().unwrap();
    assert!(!conflict.conflict_at(1).unwrap().is_deleted());
    let rows = load(&mut conn).await;
    assert_eq!(rows[0], saved[0], "nothing was written");
    assert_eq!(rows[2], saved[2], "nothing was written");
    assert_ne!(rows[1], saved[1], "the other writer's row stands");
}

/// One test per entity shape (see `entities.rs`): `$entity`'s three rows of `$name`,
/// loaded from `$table` in key order, with `$edit` applied to each, saved and checked
/// as [`saves_a_batch_and_names_a_stale_entity`] describes.
#[flavour]
macro_rules! a_batch_of_each_shape_is_saved_and_checked {
    ($($test:ident: $entity:ident, $name:literal, $($table:ident)::+ by $order:expr,
        edit $edit:expr;)+) => {$(
        #[tokio::test]
        async fn $test() {
            saves_a_batch_and_names_a_stale_entity::<$entity>(
                &db!(),
                $name,
                async |conn: &mut Conn| {
                    use $($table)::+::columns::*;
                    let query = $($table)::+::table.order($order).select($entity::as_select());
                    query.load(conn).await.expect($name)
                },
                $edit,
            )
            .await;
        }
    )+};
}

a_batch_of_each_shape_is_saved_and_checked! {
    a_batch_of_uuid_tokens_is_saved_and_checked:
        Ticket, "tickets", schema::tickets by id, edit |t| t.seat.push('!');
    a_batch_of_microsecond_timestamp_tokens_is_saved_and_checked:
        Stamp, "stamped", schema::stamped by id, edit |s| s.value += 10;
    a_batch_of_composite_keys_is_saved_and_checked:
        OrderLine, "order_lines", schema::order_lines by (order_id, line_no),
        edit |l| l.quantity += 10;
    a_batch_of_renamed_columns_is_saved_and_checked:
        Note, "notes", schema::notes by note_id, edit |n| n.body.push('!');
    a_batch_writing_null_to_every_row_of_a_bigint_column_is_saved_and_checked:
        WorkItem, "work_items", work_items by id, edit |w| {
            w.status = "PENDING".into();
            w.lease_owner = None;
            w.lease_expires_at = None;
            w.fence += 1;
        };
}

/// An `Option` field without `treat_none_as_null`: `None` leaves the column alone in a
/// batch exactly as in a single save, whichever row it is in.
#[flavour(test)]
async fn a_batch_leaves_a_skipped_none_column_alone_as_the_single_save_does() {
    let db = db!();
    raw_sql(&db, &seed("counters", Conn::BACKEND)).await;
    let mut conn = db.conn().await;
    async fn load(conn: &mut Conn) -> Vec<Counter> {
        use schema::counters::dsl::*;
        let query = counters.order(id).select(Counter::as_select());
        query.load(conn).await.expect("counters")
    }
    let mut batch = load(&mut conn).await;
    batch[0].label = None;
    batch[1].label = Some("second".into());
    batch.iter_mut().for_each(|c| c.value += 10);
    save_batch(&mut conn, "counters", &mut batch).await;
    let rows = load(&mut conn).await;
    let written: Vec<_> = rows.iter().map(|c| (c.value, c.label.as_deref())).collect();
    let expected = [(11, Some("one")), (12, Some("second")), (13, None)];
    assert_eq!(written, expected);
    assert!(rows.iter().all(|c| c.version == 2));

    let mut singles = load(&mut conn).await;
    singles[0].label = None;
    singles[1].label = Some("second".into());
    for c in &mut singles {
        c.save_checked(&mut conn).await.expect("single save");
    }
    let labels = |rows: &[Counter]| rows.iter().map(|c| c.label.clone()).collect::<Vec<_>>();
    assert_eq!(labels(&load(&mut conn).await), labels(&rows));
}
