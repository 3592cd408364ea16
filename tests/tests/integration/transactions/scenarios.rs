//! Transactions around checked writes, in both flavours (what they show: `mod.rs`).
//! Where the flavours' own transactions differ (panics, nested and spawned transactions,
//! a dropped batch), each flavour has its scenarios, written in its form.

flavour_prelude!();

use chrono::NaiveDateTime;
use diesel_occ::{ConflictState, Error, Tracked, UuidToken};
use diesel_occ_tests::Backend;

use super::entities::{BigCounter, Counter, SmallCounter, Stamped, Stock, counter, rollback};
use super::schema;

/// The flavour's transaction manager.
type Manager = <Conn as Connection>::TransactionManager;

#[flavour]
async fn insert_counters(conn: &mut Conn, rows: &[Counter]) {
    for row in rows {
        insert_rows!(&mut *conn, schema::counters::table, row);
    }
}

/// `$body` inside `transaction` on `$entities`, which rolls it back: a database error.
#[flavour]
macro_rules! rolled_back {
    ($conn:expr, $entities:expr, |$c:ident, $e:pat_param| { $($body:tt)* }) => {
        let outcome = transaction($conn, $entities, async |$c, $e| {
            $($body)*
            Err::<(), _>(rollback())
        })
        .await;
        assert!(matches!(outcome, Err(Error::Database(_))), "{outcome:?}");
    };
}

/// A fresh database holding counters `$id` (value 0, token 1), and a connection to it.
#[flavour]
macro_rules! seeded {
    ($($id:expr),+) => {{
        let (db, mut conn) = db_and_conn!();
        let rows: Vec<Counter> = [$($id),+].into_iter().map(|id| Counter::new(id, 0)).collect();
        insert_counters(&mut conn, &rows).await;
        (db, conn)
    }};
}

/// Counters `ids` as `conn` reads them.
#[flavour]
async fn find_all(conn: &mut Conn, ids: &[i32]) -> Vec<Counter> {
    let mut rows = Vec::new();
    for &id in ids {
        rows.push(Counter::find(&mut *conn, id).await.expect("read"));
    }
    rows
}

/// Each counter's key and token.
fn tokens(counters: &[Counter]) -> Vec<(i32, i32)> {
    counters.iter().map(|c| (c.id, c.version)).collect()
}

/// Another writer's legitimate save of counter `id`, its value up by `by`: what it wrote.
#[flavour]
async fn bump(db: &TestDb<Conn>, id: i32, by: i32) -> Counter {
    let mut other = db.conn().await;
    let mut theirs = Counter::find(&mut other, id).await.expect("their read");
    theirs.value += by;
    theirs.save_checked(&mut other).await.expect("their save");
    theirs
}

/// A statement the server refuses: `counters` has no such column.
#[flavour]
async fn fail_a_statement(conn: &mut Conn) -> diesel::QueryResult<usize> {
    let sql = "SELECT no_such_column FROM counters";
    diesel::sql_query(sql).execute(conn).await
}

/// One test per token kind: a save rolled back, another writer's, then a typed conflict.
#[flavour]
macro_rules! rolled_back_save_then_conflicts {
    ($($test:ident: $entity:ident in $table:ident, edit $field:ident, seed $row:expr;)+) => {$(
        #[tokio::test]
        async fn $test() {
            let (db, mut conn) = db_and_conn!();
            insert_rows!(&mut conn, schema::$table::table, $row);
            let read = $entity::find(&mut conn, 1).await.expect("read");
            let mut mine = read.clone();

            // 1. Saved inside a transaction that rolls back.
            mine.$field += 1;
            rolled_back!(&mut conn, &mut mine, |conn, mine| {
                mine.save_checked(conn).await?;
            });
            assert_eq!($entity::find(&mut conn, 1).await.expect("row"), read);
            // The entity keeps its edit and the token it read.
            assert_eq!(mine.token(), read.token());

            // 2. Another writer saves, legitimately.
            let mut other = db.conn().await;
            let mut theirs = $entity::find(&mut other, 1).await.expect("their read");
            theirs.$field += 10;
            theirs.save_checked(&mut other).await.expect("their save");

            // 3. The rolled-back entity's next save is a typed conflict.
            let error = mine.save_checked(&mut conn).await.unwrap_err();
            let current = theirs.token().to_value();
            let state = error.as_conflict().expect("a conflict").state();
            assert_eq!(state, &ConflictState::Stale { current });
            // 4. Their write stands.
            assert_eq!($entity::find(&mut conn, 1).await.expect("row"), theirs);
        }
    )+};
}

rolled_back_save_then_conflicts! {
    rolled_back_save_then_conflicts_i16: SmallCounter in small_counters, edit value,
        seed SmallCounter { id: 1, value: 0, version: 1 };
    rolled_back_save_then_conflicts_i32: Counter in counters, edit value, seed counter(1, 1);
    rolled_back_save_then_conflicts_i64: BigCounter in big_counters, edit value,
        seed BigCounter { id: 1, value: 0, version: 1 };
    rolled_back_save_then_conflicts_uuid: Stock in stock, edit available,
        seed Stock { id: 1, available: 5, version: UuidToken::initial() };
    rolled_back_save_then_conflicts_timestamp: Stamped in stamped, edit value,
        seed Stamped { id: 1, value: 0, updated_at: NaiveDateTime::initial() };
}

/// Nobody else wrote: the restored entity saves as if the transaction had never run.
#[flavour(test)]
async fn restored_entity_saves_when_the_row_is_unchanged() {
    let (_db, mut conn) = seeded!(1);
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    mine.value = 7;
    rolled_back!(&mut conn, &mut mine, |conn, mine| {
        mine.save_checked(conn).await?;
    });
    mine.save_checked(&mut conn).await.expect("a later save");
    assert_eq!(Counter::find(&mut conn, 1).await.expect("row"), mine);
    assert_eq!(mine.version, 2);
}

/// A batch and an aggregate root's force increment, both inside the rolled-back closure.
#[flavour(test)]
async fn rolled_back_batch_and_force_increment_restore_their_tokens() {
    let (db, mut conn) = seeded!(1, 2, 3);
    let mut root = Counter::find(&mut conn, 1).await.expect("root");
    let mut lines = find_all(&mut conn, &[2, 3]).await;
    lines[0].value = 5;
    lines[1].value = 6;
    let both = (&mut root, &mut lines);
    rolled_back!(&mut conn, both, |conn, (root, lines)| {
        lines.save_all_checked(conn).await?;
        root.force_increment(conn).await?;
        assert_eq!((root.version, tokens(lines)), (2, vec![(2, 2), (3, 2)]));
    });
    assert_eq!((root.version, tokens(&lines)), (1, vec![(2, 1), (3, 1)]));

    // Others write every row once; each of ours must now conflict.
    for id in 1..=3 {
        bump(&db, id, 100).await;
    }
    let forced = root.force_increment(&mut conn).await;
    assert!(forced.unwrap_err().is_conflict());
    let error = lines.save_all_checked(&mut conn).await.unwrap_err();
    let batch = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(batch.indices().collect::<Vec<_>>(), [0, 1]);
}

/// When the closure succeeds the transaction commits, and the tokens stay fresh.
#[flavour(test)]
async fn committed_transaction_keeps_fresh_tokens() {
    let (_db, mut conn) = seeded!(1, 2);
    let mut a = Counter::find(&mut conn, 1).await.expect("a");
    let mut b = Counter::find(&mut conn, 2).await.expect("b");
    let answer = transaction(&mut conn, (&mut a, &mut b), async |conn, (a, b)| {
        a.value = 1;
        b.value = 2;
        a.save_checked(conn).await?;
        b.save_checked(conn).await?;
        Ok::<_, Error>(42)
    })
    .await;
    assert_eq!(answer.expect("commit"), 42);
    assert_eq!((a.version, b.version), (2, 2));
    assert_eq!(Counter::find(&mut conn, 2).await.expect("row"), b);
}

/// A closure that reorders its entities before a rollback: each entity gets
/// its own row's token back (restored by key, not by position), so a later
/// save of the row whose token moved on conflicts instead of winning.
#[flavour(test)]
async fn rolled_back_transaction_restores_tokens_by_key_after_a_sort() {
    let (db, mut conn) = seeded!(1, 2);
    // Row 2 moves to version 2.
    bump(&db, 2, 1).await;
    let mut mine = find_all(&mut conn, &[1, 2]).await;
    rolled_back!(&mut conn, &mut mine, |conn, mine| {
        mine.sort_by_key(|counter| std::cmp::Reverse(counter.id));
        for counter in mine.iter_mut() {
            counter.value += 10;
            counter.save_checked(conn).await?;
        }
    });
    assert_eq!(tokens(&mine), [(2, 2), (1, 1)], "each its own row's token");

    // Another writer moves row 1 to version 2, the token row 2 held.
    bump(&db, 1, 100).await;
    let row_one = mine.iter_mut().find(|c| c.id == 1).expect("row 1 entity");
    let saved = row_one.save_checked(&mut conn).await;
    assert!(saved.unwrap_err().is_conflict());
    assert_eq!(Counter::find(&mut conn, 1).await.expect("row").value, 100);
}

/// An entity the closure adds to the `Vec` holds what the rolled-back
/// transaction read and wrote: after the rollback it is gone, and the
/// entities that were there keep their own tokens.
#[flavour(test)]
async fn rolled_back_transaction_drops_entities_the_closure_added() {
    let (_db, mut conn) = seeded!(1, 2);
    let mut mine = find_all(&mut conn, &[1]).await;
    rolled_back!(&mut conn, &mut mine, |conn, mine| {
        let mut added = Counter::find(conn, 2).await?;
        added.value = 5;
        added.save_checked(conn).await?;
        mine.insert(0, added);
    });
    assert_eq!(tokens(&mine), [(1, 1)]);
}

/// A trigger that silently skips the write (PostgreSQL `RETURN NULL`, SQLite
/// `RAISE(IGNORE)`; MySQL has no such trigger): the save, alone or inside a
/// transaction, is an unmatched conflict, not a stale one, and not retryable.
#[flavour(test)]
async fn skipped_write_is_unmatched_not_stale() {
    let (_db, mut conn) = seeded!(1);
    let ddl = match Conn::BACKEND {
        Backend::Postgres => {
            "CREATE FUNCTION skip_write() RETURNS trigger AS $$ BEGIN RETURN NULL; END $$ LANGUAGE plpgsql;
             CREATE TRIGGER skip_write BEFORE UPDATE ON counters FOR EACH ROW EXECUTE FUNCTION skip_write();"
        }
        Backend::Sqlite => {
            "CREATE TRIGGER skip_write BEFORE UPDATE ON counters BEGIN SELECT RAISE(IGNORE); END;"
        }
        _ => return,
    };
    run_sql(&mut conn, ddl).await;
    for in_tx in [false, true] {
        let mut mine = Counter::find(&mut conn, 1).await.expect("read");
        mine.value = 5;
        let saved = if in_tx {
            let mine = &mut mine;
            conn.transaction(async |conn| mine.save_checked(conn).await)
                .await
        } else {
            mine.save_checked(&mut conn).await
        };
        let error = saved.unwrap_err();
        let conflict = error.as_conflict().expect("a conflict");
        let case = format!("in a transaction: {in_tx}");
        let state = conflict.state();
        assert_eq!(state, &ConflictState::Unmatched, "{case}: {conflict}");
        assert_eq!(conflict.current::<i32>(), None, "{case}");
        assert!(!error.is_retryable(), "{case}");
        assert_eq!(mine.version, 1, "{case}");
    }
}

/// "Insert, or carry on if the key is taken" inside a transaction: the library's own
/// taken key (and an upsert's conflict) leave the transaction usable on every backend,
/// so it commits the closure's other write, and the entity holds the committed token.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_caught_taken_key_leaves_the_transaction_usable_and_it_commits() {
    let (_db, mut conn) = seeded!(1, 2);
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    mine.value = 5;
    transaction(&mut conn, &mut mine, async |conn, mine| {
        mine.save_checked(conn).await?;
        let mut taken = counter(2, 0);
        let inserted = taken.insert_checked(conn).await;
        let unique = matches!(inserted, Err(Error::UniqueViolation(_)));
        assert!(unique, "{inserted:?}");
        let upserted = taken.upsert_checked(conn, None).await;
        assert!(matches!(upserted, Err(Error::Conflict(_))), "{upserted:?}");
        Ok::<_, Error>(())
    })
    .await
    .expect("the transaction commits");
    assert_eq!(Counter::find(&mut conn, 1).await.expect("read"), mine);
}

/// Counter 1 after a closure that set its value to 5, saved it and caught a failed
/// statement: an error and nothing committed where that aborts the transaction
/// (PostgreSQL), the write committed elsewhere.
fn assert_committed_unless_aborted<T: std::fmt::Debug>(outcome: Result<T, Error>, row: &Counter) {
    if Conn::BACKEND == Backend::Postgres {
        assert!(outcome.is_err(), "aborted, so not Ok: {outcome:?}");
        assert_eq!((row.value, row.version), (0, 1), "nothing was committed");
    } else {
        outcome.expect("only the statement failed: the transaction commits");
        assert_eq!(row.value, 5);
    }
}

/// A database error the closure catches: on PostgreSQL it aborts the transaction, whose
/// COMMIT answers ROLLBACK, so the helper reports an error and gives the token back; on
/// MySQL and SQLite only the statement failed and the transaction commits. Either way
/// `Ok` means committed, and the entity holds the row's token.
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_caught_database_error_is_never_reported_committed() {
    let (_db, mut conn) = seeded!(1);
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    mine.value = 5;
    let outcome = transaction(&mut conn, &mut mine, async |conn, mine| {
        mine.save_checked(conn).await?;
        assert!(fail_a_statement(conn).await.is_err(), "the statement fails");
        Ok::<_, Error>(())
    })
    .await;
    let row = Counter::find(&mut conn, 1).await.expect("read");
    assert_committed_unless_aborted(outcome, &row);
    assert_eq!(mine.version, row.version, "the entity has the row's token");
    mine.value = 6;
    mine.save_checked(&mut conn).await.expect("a later save");

    // Inside a caller's transaction the helper's is a savepoint: an aborted one is an
    // error too, and the caller's transaction is usable after it.
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    let (before, mine) = (mine.version, &mut mine);
    let outer = conn
        .transaction(async |conn| {
            let inner = transaction(conn, &mut *mine, async |conn, mine| {
                mine.value = 7;
                mine.save_checked(conn).await?;
                let _ = fail_a_statement(conn).await;
                Ok::<_, Error>(())
            })
            .await;
            let aborted = inner.is_err();
            let expected = before + i32::from(!aborted);
            assert_eq!(mine.version, expected, "given back unless committed");
            Counter::find(conn, 1).await?;
            Ok::<_, Error>(aborted)
        })
        .await
        .expect("the caller's transaction is usable and commits");
    assert_eq!(outer, Conn::BACKEND == Backend::Postgres);
}

/// A single entity the closure replaced with another row's entity, then rolled back:
/// it gets back the entity passed in, never the other row with the first row's token
/// (which the other row reaches later, letting a stale save through).
#[flavour(test(flavor = "multi_thread", worker_threads = 2))]
async fn a_single_entity_the_closure_replaced_gets_itself_back_after_rollback() {
    let (db, mut conn) = db_and_conn!();
    insert_counters(&mut conn, &[counter(1, 2), counter(2, 1)]).await;
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    let passed_in = mine.clone();
    rolled_back!(&mut conn, &mut mine, |conn, mine| {
        **mine = Counter::find(conn, 2).await?;
        mine.value = 7;
        mine.save_checked(conn).await?;
    });
    assert_eq!(mine, passed_in, "the entity as passed in");

    // Another writer moves row 2 to version 2, the token row 1 held.
    let theirs = bump(&db, 2, 3).await;
    mine.value = 8;
    mine.save_checked(&mut conn).await.expect("row 1 as read");
    let row_two = Counter::find(&mut conn, 2).await.expect("read");
    assert_eq!(row_two, theirs, "row 2 is theirs");

    // The same for a tracked entity.
    let mut tracked = Tracked::new(Counter::find(&mut conn, 1).await.expect("read"));
    let passed_in = tracked.clone();
    rolled_back!(&mut conn, &mut tracked, |conn, tracked| {
        **tracked = Tracked::new(Counter::find(conn, 2).await?);
        tracked.edit().value = 9;
        tracked.save_checked(conn).await?;
    });
    assert_eq!(tracked, passed_in, "the tracked entity as passed in");
}

/// Runs `run`, catching a panic raised inside it.
#[flavour(blocking)]
fn catch_panic<T>(run: impl FnOnce() -> T) -> std::thread::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
}

/// Polls `run`'s future to its end, catching a panic raised while it is polled (the
/// test holds the connection it borrows, so the panic cannot be caught at a task's join).
#[flavour(asynchronous)]
async fn catch_panic<T>(run: impl AsyncFnOnce() -> T) -> std::thread::Result<T> {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::task::Poll;
    let mut future = std::pin::pin!(run());
    std::future::poll_fn(|cx| {
        let polled = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx)));
        polled.map_or_else(|panic| Poll::Ready(Err(panic)), |poll| poll.map(Ok))
    })
    .await
}

/// A panic inside the closure rolls the transaction back before it resumes: the
/// connection is left outside any transaction and usable, so a later checked save on
/// it commits (another connection sees it), and the entity's token is the one it read.
#[flavour(test)]
async fn panic_inside_transaction_rolls_back_and_leaves_no_transaction_open() {
    let (db, mut conn) = seeded!(1);
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    mine.value = 5;
    let caught = catch_panic(async || {
        let (conn, mine) = (&mut conn, &mut mine);
        transaction(conn, mine, async |conn, mine| -> Result<(), Error> {
            mine.save_checked(conn).await?;
            panic!("a bug inside the transaction");
        })
        .await
    })
    .await;
    assert!(caught.is_err(), "the panic resumes in the caller");
    assert_eq!(mine.version, 1, "the token read, not the rolled-back one");
    let depth = Manager::transaction_manager_status_mut(&mut conn).transaction_depth();
    assert!(matches!(depth, Ok(None)), "in a transaction: {depth:?}");

    let mut again = Counter::find(&mut conn, 1).await.expect("read again");
    assert_eq!((again.value, again.version), (0, 1), "rolled back");
    again.value = 7;
    again.save_checked(&mut conn).await.expect("a later save");
    let theirs = Counter::find(&mut db.conn().await, 1).await;
    let theirs = theirs.expect("their read");
    assert_eq!(theirs.value, 7, "the later save was committed");
}

// ---- the blocking flavour's own ----

/// Without the restoring transaction the rolled-back token survives in
/// memory, and the entity's next save overwrites another writer's row:
/// the lost update `diesel_occ::transaction` exists to prevent.
#[flavour(blocking, test)]
fn control_plain_transaction_rollback_loses_an_update() {
    let (db, mut conn) = seeded!(1);
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    mine.value = 1;
    let outcome = conn.transaction(|conn| {
        mine.save_checked(conn)?;
        Err::<(), _>(rollback())
    });
    assert!(outcome.is_err());
    bump(&db, 1, 10);
    mine.save_checked(&mut conn).expect("the stale save wins");
    assert_eq!(Counter::find(&mut conn, 1).expect("row").value, 1);
}

/// The same through the retry helper's transactional attempt (an escalated one).
#[flavour(blocking, test)]
fn a_retried_attempt_that_caught_a_database_error_is_never_reported_committed() {
    let (db, _) = seeded!(1);
    let manager = diesel::r2d2::ConnectionManager::<Conn>::new(db.url());
    let pool = diesel::r2d2::Pool::builder().max_size(1).build(manager);
    let pool = pool.expect("r2d2 pool");
    let policy = diesel_occ::retry::RetryPolicy::new().escalate_after(0);
    let outcome = diesel_occ::blocking::retry(&pool, &policy, |conn, attempt| {
        let mut row: Counter = attempt.find(conn, 1)?;
        row.value = 5;
        row.save_checked(conn)?;
        assert!(fail_a_statement(conn).is_err(), "the statement fails");
        Ok(())
    });
    let row = Counter::find(&mut db.conn(), 1).expect("read");
    assert_committed_unless_aborted(outcome, &row);
}

// ---- the async flavour's own ----

/// The transaction's future is `Send` whatever the closure borrows, so it runs inside
/// `tokio::spawn` on a multi-threaded runtime, as in a web handler.
#[flavour(asynchronous, test(flavor = "multi_thread", worker_threads = 2))]
async fn a_transaction_runs_inside_a_spawned_task() {
    let (db, mut conn) = seeded!(1);
    let step = 3;
    let task = tokio::spawn(async move {
        let mut mine = Counter::find(&mut conn, 1).await?;
        let outcome = transaction(&mut conn, &mut mine, async |conn, mine| {
            mine.value += step;
            mine.save_checked(conn).await?;
            Ok::<_, Error>(mine.value)
        })
        .await;
        outcome.map(|value| (value, mine.version))
    });
    let saved = task.await.expect("the spawned task");
    assert!(matches!(saved, Ok((3, 2))), "{saved:?}");
    let row = Counter::find(&mut db.conn().await, 1).await.expect("row");
    assert_eq!((row.value, row.version), (3, 2));
}

/// A transaction inside another's closure is a savepoint: the inner one rolls back
/// alone and gives its entity its token back, the outer one commits its own write.
#[flavour(asynchronous, test)]
async fn a_nested_transaction_rolls_back_alone() {
    let (db, mut conn) = seeded!(1, 2);
    let mut outer = Counter::find(&mut conn, 1).await.expect("outer");
    let mut inner = Counter::find(&mut conn, 2).await.expect("inner");
    let inner_ref = &mut inner;
    let outcome = transaction(&mut conn, &mut outer, async move |conn, outer| {
        outer.value = 1;
        outer.save_checked(conn).await?;
        rolled_back!(conn, inner_ref, |conn, inner| {
            inner.value = 2;
            inner.save_checked(conn).await?;
        });
        Ok::<_, Error>(())
    })
    .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let held = (outer.version, inner.version);
    assert_eq!(held, (2, 1), "the inner token restored");
    let rows = find_all(&mut db.conn().await, &[1, 2]).await;
    let rows: Vec<_> = rows.iter().map(|row| (row.value, row.version)).collect();
    // The outer write committed, the inner one rolled back.
    assert_eq!(rows, [(1, 2), (0, 1)]);
}

/// A panic inside a diesel-async transaction of the closure's own leaves that one open
/// inside ours (diesel-async does not end its transaction on a panic), so ours cannot
/// roll back to where it began: the connection is marked broken, as when the future is
/// dropped, and nothing of the transaction is committed.
#[flavour(asynchronous, test)]
async fn panic_inside_a_nested_diesel_async_transaction_marks_the_connection_broken() {
    let (db, mut conn) = seeded!(1);
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    mine.value = 5;
    let caught = catch_panic(async || {
        let (conn, mine) = (&mut conn, &mut mine);
        transaction(conn, mine, async |conn, mine| -> Result<(), Error> {
            mine.save_checked(conn).await?;
            conn.transaction(async |_| -> Result<(), Error> {
                panic!("a bug inside the inner transaction");
            })
            .await
        })
        .await
    })
    .await;
    assert!(caught.is_err(), "the panic resumes in the caller");
    assert_eq!(mine.version, 1, "the token read, not the rolled-back one");
    let later = mine.save_checked(&mut conn).await;
    assert!(later.is_err(), "a later save returned {later:?}");
    drop(conn);
    let row = Counter::find(&mut db.conn().await, 1).await.expect("row");
    assert_eq!((row.value, row.version), (0, 1), "nothing was committed");
}

/// Opens a transaction at `isolation` (`None`: the backend's default), with
/// Diesel's (diesel-async's) transaction manager, or with plain SQL it does not see.
#[flavour]
async fn begin(conn: &mut Conn, isolation: Option<&str>, raw: bool) {
    let level = isolation.map(|level| format!("SET TRANSACTION ISOLATION LEVEL {level}"));
    if let (Some(level), Backend::Mysql) = (&level, Conn::BACKEND) {
        run_sql(conn, level).await;
    }
    if raw {
        run_sql(conn, "BEGIN").await;
    } else {
        Manager::begin_transaction(conn).await.expect("begin");
    }
    if let (Some(level), Backend::Postgres) = (&level, Conn::BACKEND) {
        run_sql(conn, level).await;
    }
}

#[flavour]
async fn end(conn: &mut Conn, raw: bool) {
    if raw {
        run_sql(conn, "ROLLBACK").await;
    } else {
        Manager::rollback_transaction(conn).await.expect("rollback");
    }
}

/// Asserts what a stale save inside a snapshot returned: a conflict naming the row's
/// real token `current`, never the snapshot's, or a transient error.
fn assert_names_the_current_token(saved: Result<(), Error>, current: i32) {
    match saved {
        Err(Error::Conflict(conflict)) => {
            assert_eq!(conflict.current::<i32>(), Some(current), "{conflict}");
        }
        Err(error) => assert!(error.is_transient(), "{error:?}"),
        Ok(()) => panic!("a stale save succeeded"),
    }
}

/// The entity is read inside a snapshot (or before it, while another writer commits
/// in between); another writer commits; the save conflicts. The conflict names the
/// row's real token (or the save fails transiently), never the snapshot's.
#[flavour]
async fn in_snapshot(isolation: Option<&str>, read_before: bool, raw: bool) {
    if isolation == Some("SERIALIZABLE") && Conn::BACKEND == Backend::Mysql {
        // InnoDB's SERIALIZABLE reads take shared locks: no stale snapshot.
        return;
    }
    let (db, mut conn) = seeded!(1);
    let mut mine = Counter::find(&mut conn, 1).await.expect("read");
    if read_before {
        bump(&db, 1, 1).await;
    }
    begin(&mut conn, isolation, raw).await;
    let snapshot = Counter::find(&mut conn, 1).await;
    if !read_before {
        mine = snapshot.expect("read in the snapshot");
    }
    let theirs = bump(&db, 1, 1).await;
    mine.value = 100;
    let saved = mine.save_checked(&mut conn).await;
    assert_names_the_current_token(saved, theirs.version);
    end(&mut conn, raw).await;
}

/// One test per row, of `in_snapshot` at each `(isolation, read_before, raw)`.
#[flavour]
macro_rules! snapshot_conflicts {
    ($($(#[$doc:meta])* $test:ident: $(($($case:expr),+))+;)+) => {$(
        $(#[$doc])*
        #[tokio::test]
        async fn $test() {
            $(in_snapshot($($case),+).await;)+
        }
    )+};
}

snapshot_conflicts! {
    snapshot_conflict_reports_current_token_default_isolation:
        (None, false, false) (None, true, false);
    snapshot_conflict_reports_current_token_repeatable_read:
        (Some("REPEATABLE READ"), false, false) (Some("REPEATABLE READ"), true, false);
    snapshot_conflict_reports_current_token_serializable:
        (Some("SERIALIZABLE"), false, false) (Some("SERIALIZABLE"), true, false);
    /// A transaction opened with plain SQL, which Diesel's transaction manager does not
    /// see: a conflict on an entity read in its snapshot still names the real token.
    snapshot_conflict_in_a_raw_sql_transaction:
        (None, false, true) (Some("REPEATABLE READ"), false, true);
}

/// The same snapshot, opened with diesel-async's own transaction.
#[flavour(asynchronous, test)]
async fn snapshot_conflict_in_a_diesel_async_transaction() {
    let (db, mut conn) = seeded!(1);
    let level = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";
    if Conn::BACKEND == Backend::Mysql {
        run_sql(&mut conn, level).await;
    }
    let db = &db;
    let outcome = conn
        .transaction(async |conn| {
            if Conn::BACKEND == Backend::Postgres {
                conn.batch_execute(level).await?;
            }
            let mut mine = Counter::find(conn, 1).await?;
            let theirs = bump(db, 1, 1).await;
            mine.value = 100;
            Ok::<_, Error>((mine.save_checked(conn).await, theirs))
        })
        .await;
    match outcome {
        Ok((saved, theirs)) => assert_names_the_current_token(saved, theirs.version),
        Err(error) => assert!(error.is_transient(), "{error:?}"),
    }
}

/// A batch future dropped while its transaction is open (PostgreSQL; SQLite has its own
/// test) leaves the connection visibly broken: later saves and transactions on it fail,
/// and nothing of the batch is committed.
#[flavour(asynchronous, test)]
async fn cancelled_batch_leaves_the_connection_visibly_broken() {
    use diesel::sql_types::{BigInt, Integer};
    if Conn::BACKEND != Backend::Postgres {
        return;
    }
    let (db, mut conn) = seeded!(1, 2, 3);
    let mut third = Counter::find(&mut conn, 3).await.expect("row 3");
    let mut batch = find_all(&mut conn, &[1, 2]).await;
    batch[0].value = 11;
    batch[1].value = 12;
    let pid = diesel::select(diesel::dsl::sql::<Integer>("pg_backend_pid()"));
    let pid: i32 = pid.get_result(&mut conn).await.expect("pid");
    let mut locker = db.conn().await;
    let lock = "BEGIN; SELECT * FROM counters WHERE id = 2 FOR UPDATE";
    run_sql(&mut locker, lock).await;
    let mut watcher = db.conn().await;
    let waiting = format!(
        "(SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND wait_event_type = 'Lock')"
    );
    let waiting = diesel::select(diesel::dsl::sql::<BigInt>(&waiting));
    {
        // Dropped once the server shows the batch's second UPDATE waiting for row 2.
        let save = batch.save_all_checked(&mut conn);
        tokio::pin!(save);
        let what = "the batch's second UPDATE to wait for row 2's lock";
        let blocked = wait_until(what, diesel_occ_tests::wait::TIMEOUT, async || {
            let count = waiting.clone().get_result::<i64>(&mut watcher).await;
            count.expect("stat") == 1
        });
        tokio::select! {
            biased;
            outcome = &mut save => panic!("the batch finished: {outcome:?}"),
            () = blocked => {}
        }
    }
    run_sql(&mut locker, "COMMIT").await;

    // A later save on the same connection fails loudly...
    third.value = 33;
    let later = third.save_checked(&mut conn).await;
    assert!(later.is_err(), "a later save returned {later:?}");
    assert_eq!(third.version, 1);
    // ...and so does a transaction.
    let tx = conn.transaction(async |_| Ok::<_, Error>(())).await;
    assert!(tx.is_err(), "{tx:?}");
    drop(conn);

    // Nothing of the batch or of the later save was committed.
    for row in find_all(&mut db.conn().await, &[1, 2, 3]).await {
        assert_eq!((row.value, row.version), (0, 1), "row {}", row.id);
    }
}
