//! Transactions around checked writes on a blocking connection.

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{ConflictState, Error, UuidToken};
use diesel_occ_tests::{Backend, TestConnection, TestDb};

use super::entities::{BigCounter, Counter, SmallCounter, Stamped, Stock, counter, rollback};
use diesel_occ::Tracked;
use super::{Conn, schema};

fn seed_counters(conn: &mut Conn, ids: &[i32]) {
    for &id in ids {
        diesel::insert_into(schema::counters::table)
            .values(Counter {
                id,
                value: 0,
                label: None,
                version: 1,
            })
            .execute(conn)
            .expect("seed counter");
    }
}

/// The four steps, for one token kind: a save inside a transaction that
/// rolls back, another writer's legitimate save, then the rolled-back
/// entity's next save, which must be a typed conflict.
macro_rules! rolled_back_save {
    ($entity:ident, $table:ident, $row:expr, $field:ident) => {{
        let db = test_db!();
        let mut conn = db.conn();
        diesel::insert_into(schema::$table::table)
            .values($row)
            .execute(&mut conn)
            .expect("seed");
        let read = $entity::find(&mut conn, 1).expect("read");
        let mut mine = read.clone();

        // 1. Saved inside a transaction that rolls back.
        mine.$field += 1;
        let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
            mine.save_checked(conn)?;
            Err::<(), _>(rollback())
        });
        assert!(matches!(outcome, Err(Error::Database(_))), "{outcome:?}");
        assert_eq!($entity::find(&mut conn, 1).expect("row"), read);
        // The entity keeps its edit and the token it read.
        assert_eq!(mine.token(), read.token());

        // 2. Another writer saves, legitimately.
        let mut other = db.conn();
        let mut theirs = $entity::find(&mut other, 1).expect("their read");
        theirs.$field += 10;
        theirs.save_checked(&mut other).expect("their save");

        // 3. The rolled-back entity's next save is a typed conflict.
        let error = mine.save_checked(&mut conn).unwrap_err();
        let conflict = error.as_conflict().expect("a conflict");
        assert_eq!(
            conflict.state(),
            &ConflictState::Stale {
                current: theirs.token().to_value()
            }
        );
        // 4. Their write stands.
        assert_eq!($entity::find(&mut conn, 1).expect("row"), theirs);
    }};
}

#[test]
fn rolled_back_save_then_conflicts_i16() {
    rolled_back_save!(
        SmallCounter,
        small_counters,
        SmallCounter {
            id: 1,
            value: 0,
            version: 1
        },
        value
    );
}
#[test]
fn rolled_back_save_then_conflicts_i32() {
    rolled_back_save!(
        Counter,
        counters,
        Counter {
            id: 1,
            value: 0,
            label: None,
            version: 1
        },
        value
    );
}
#[test]
fn rolled_back_save_then_conflicts_i64() {
    rolled_back_save!(
        BigCounter,
        big_counters,
        BigCounter {
            id: 1,
            value: 0,
            version: 1
        },
        value
    );
}
#[test]
fn rolled_back_save_then_conflicts_uuid() {
    rolled_back_save!(
        Stock,
        stock,
        Stock {
            id: 1,
            available: 5,
            version: UuidToken::initial()
        },
        available
    );
}
#[test]
fn rolled_back_save_then_conflicts_timestamp() {
    rolled_back_save!(
        Stamped,
        stamped,
        Stamped {
            id: 1,
            value: 0,
            updated_at: NaiveDateTime::initial()
        },
        value
    );
}

/// When nobody else wrote, the restored entity saves as if the rolled-back
/// transaction had never run.
#[test]
fn restored_entity_saves_when_the_row_is_unchanged() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1]);
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    mine.value = 7;
    let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
        mine.save_checked(conn)?;
        Err::<(), _>(rollback())
    });
    assert!(outcome.is_err());
    mine.save_checked(&mut conn)
        .expect("save after the rollback");
    assert_eq!(Counter::find(&mut conn, 1).expect("row"), mine);
    assert_eq!(mine.version, 2);
}

/// A batch and an aggregate root's force increment inside the caller's
/// transaction: when it rolls back, every token is restored.
#[test]
fn rolled_back_batch_and_force_increment_restore_their_tokens() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1, 2, 3]);
    let mut root = Counter::find(&mut conn, 1).expect("root");
    let mut lines = vec![
        Counter::find(&mut conn, 2).expect("line"),
        Counter::find(&mut conn, 3).expect("line"),
    ];
    lines[0].value = 5;
    lines[1].value = 6;
    let outcome =
        diesel_occ::transaction(&mut conn, (&mut root, &mut lines), |conn, (root, lines)| {
            lines.save_all_checked(conn)?;
            root.force_increment(conn)?;
            assert_eq!(
                (root.version, lines[0].version, lines[1].version),
                (2, 2, 2)
            );
            Err::<(), _>(rollback())
        });
    assert!(outcome.is_err());
    assert_eq!(
        (root.version, lines[0].version, lines[1].version),
        (1, 1, 1)
    );

    // Others write every row once; each of ours must now conflict.
    let mut other = db.conn();
    for id in 1..=3 {
        let mut theirs = Counter::find(&mut other, id).expect("their read");
        theirs.value = 100;
        theirs.save_checked(&mut other).expect("their save");
    }
    assert!(root.force_increment(&mut conn).unwrap_err().is_conflict());
    let error = lines.save_all_checked(&mut conn).unwrap_err();
    let batch = error.as_batch_conflict().expect("a batch conflict");
    assert_eq!(batch.indices().collect::<Vec<_>>(), [0, 1]);
}

/// The restoring transaction commits like any other when the closure
/// succeeds: the entities keep their fresh tokens.
#[test]
fn committed_transaction_keeps_fresh_tokens() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1, 2]);
    let mut a = Counter::find(&mut conn, 1).expect("a");
    let mut b = Counter::find(&mut conn, 2).expect("b");
    let answer = diesel_occ::transaction(&mut conn, (&mut a, &mut b), |conn, (a, b)| {
        a.value = 1;
        b.value = 2;
        a.save_checked(conn)?;
        b.save_checked(conn)?;
        Ok::<_, Error>(42)
    })
    .expect("commit");
    assert_eq!(answer, 42);
    assert_eq!((a.version, b.version), (2, 2));
    assert_eq!(Counter::find(&mut conn, 2).expect("row"), b);
}

/// A closure that reorders its entities before a rollback: each entity gets
/// its own row's token back (restored by key, not by position), so a later
/// save of the row whose token moved on conflicts instead of winning.
#[test]
fn rolled_back_transaction_restores_tokens_by_key_after_a_sort() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1, 2]);
    let mut second = Counter::find(&mut conn, 2).expect("row 2");
    second.value = 1;
    second.save_checked(&mut conn).expect("row 2 moves to version 2");
    let mut mine = vec![
        Counter::find(&mut conn, 1).expect("row 1"),
        Counter::find(&mut conn, 2).expect("row 2"),
    ];
    let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
        mine.sort_by_key(|counter| std::cmp::Reverse(counter.id));
        for counter in mine.iter_mut() {
            counter.value += 10;
            counter.save_checked(conn)?;
        }
        Err::<(), _>(rollback())
    });
    assert!(outcome.is_err());
    let tokens: Vec<(i32, i32)> = mine.iter().map(|c| (c.id, c.version)).collect();
    assert_eq!(tokens, [(2, 2), (1, 1)], "each entity holds its own row's token");

    // Another writer moves row 1 to version 2, the token row 2 held.
    let mut other = db.conn();
    let mut theirs = Counter::find(&mut other, 1).expect("their read");
    theirs.value = 100;
    theirs.save_checked(&mut other).expect("their save");
    let row_one = mine.iter_mut().find(|c| c.id == 1).expect("row 1 entity");
    assert!(row_one.save_checked(&mut conn).unwrap_err().is_conflict());
    assert_eq!(Counter::find(&mut conn, 1).expect("row").value, 100);
}

/// An entity the closure adds to the `Vec` holds what the rolled-back
/// transaction read and wrote: after the rollback it is gone, and the
/// entities that were there keep their own tokens.
#[test]
fn rolled_back_transaction_drops_entities_the_closure_added() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1, 2]);
    let mut mine = vec![Counter::find(&mut conn, 1).expect("row 1")];
    let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
        let mut added = Counter::find(conn, 2)?;
        added.value = 5;
        added.save_checked(conn)?;
        mine.insert(0, added);
        Err::<(), _>(rollback())
    });
    assert!(outcome.is_err());
    let tokens: Vec<(i32, i32)> = mine.iter().map(|c| (c.id, c.version)).collect();
    assert_eq!(tokens, [(1, 1)]);
}

/// A panic inside the closure rolls the transaction back before it resumes:
/// the connection is left outside any transaction, so a later checked save
/// on it commits (another connection sees it), and the entity's token is the
/// one it read.
#[test]
fn panic_inside_transaction_rolls_back_and_leaves_no_transaction_open() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1]);
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    mine.value = 5;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| -> Result<(), Error> {
            mine.save_checked(conn)?;
            panic!("a bug inside the transaction");
        })
    }));
    assert!(caught.is_err(), "the panic resumes in the caller");
    assert_eq!(mine.version, 1, "the token read, not the rolled-back one");

    let mut again = Counter::find(&mut conn, 1).expect("read again");
    assert_eq!((again.value, again.version), (0, 1), "the save was rolled back");
    again.value = 7;
    again.save_checked(&mut conn).expect("a later save");
    let mut other = db.conn();
    assert_eq!(
        Counter::find(&mut other, 1).expect("their read").value,
        7,
        "the later save was committed"
    );
}

/// Without the restoring transaction the rolled-back token survives in
/// memory, and the entity's next save overwrites another writer's row:
/// the lost update `diesel_occ::transaction` exists to prevent.
#[test]
fn control_plain_transaction_rollback_loses_an_update() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1]);
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    mine.value = 1;
    let outcome = conn.transaction(|conn| {
        mine.save_checked(conn)?;
        Err::<(), _>(rollback())
    });
    assert!(outcome.is_err());
    let mut other = db.conn();
    let mut theirs = Counter::find(&mut other, 1).expect("their read");
    theirs.value = 10;
    theirs.save_checked(&mut other).expect("their save");
    mine.save_checked(&mut conn).expect("the stale save wins");
    assert_eq!(Counter::find(&mut conn, 1).expect("row").value, 1);
}

/// Opens a transaction at `isolation` (`None`: the backend's default).
fn in_transaction<R>(
    conn: &mut Conn,
    isolation: Option<&str>,
    f: impl FnOnce(&mut Conn) -> Result<R, Error>,
) -> Result<R, Error> {
    let level = isolation.map(|level| format!("SET TRANSACTION ISOLATION LEVEL {level}"));
    if let (Some(level), Backend::Mysql) = (&level, Conn::BACKEND) {
        // MySQL: set before the transaction starts, for the next one.
        conn.batch_execute(level).expect("isolation");
    }
    conn.transaction(|conn| {
        if let (Some(level), Backend::Postgres) = (&level, Conn::BACKEND) {
            conn.batch_execute(level)?;
        }
        f(conn)
    })
}

fn bump(db: &TestDb<Conn>) -> Counter {
    let mut other = db.conn();
    let mut theirs = Counter::find(&mut other, 1).expect("their read");
    theirs.value += 1;
    theirs.save_checked(&mut other).expect("their save");
    theirs
}

/// The entity is read inside the snapshot; another writer commits; the
/// save conflicts. The conflict names the row's real token (or is a
/// transient error), never the snapshot's, which equals the expected one.
fn read_in_snapshot(isolation: Option<&str>) {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1]);
    let outcome = in_transaction(&mut conn, isolation, |conn| {
        let mut mine = Counter::find(conn, 1)?;
        let theirs = bump(&db);
        mine.value = 100;
        Ok((mine.save_checked(conn), theirs))
    });
    let (result, theirs) = match outcome {
        Ok(pair) => pair,
        Err(error) => {
            assert!(error.is_transient(), "{error:?}");
            return;
        }
    };
    match result {
        Err(Error::Conflict(conflict)) => {
            assert_eq!(
                conflict.current::<i32>(),
                Some(theirs.version),
                "{conflict}"
            );
        }
        Err(error) => assert!(error.is_transient(), "{error:?}"),
        Ok(()) => panic!("a stale save succeeded"),
    }
    assert_eq!(Counter::find(&mut conn, 1).expect("row"), theirs);
}

/// The entity was read before the snapshot; a second writer commits after
/// it. The snapshot's token is neither the expected nor the current one.
fn read_before_snapshot(isolation: Option<&str>) {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1]);
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    bump(&db);
    let outcome = in_transaction(&mut conn, isolation, |conn| {
        // The snapshot: the first writer's row.
        Counter::find(conn, 1)?;
        let theirs = bump(&db);
        mine.value = 100;
        Ok((mine.save_checked(conn), theirs))
    });
    let (result, theirs) = match outcome {
        Ok(pair) => pair,
        Err(error) => {
            assert!(error.is_transient(), "{error:?}");
            return;
        }
    };
    match result {
        Err(Error::Conflict(conflict)) => {
            assert_eq!(
                conflict.current::<i32>(),
                Some(theirs.version),
                "{conflict}"
            );
        }
        Err(error) => assert!(error.is_transient(), "{error:?}"),
        Ok(()) => panic!("a stale save succeeded"),
    }
}

#[test]
fn snapshot_conflict_reports_current_token_default_isolation() {
    read_in_snapshot(None);
    read_before_snapshot(None);
}

#[test]
fn snapshot_conflict_reports_current_token_repeatable_read() {
    read_in_snapshot(Some("REPEATABLE READ"));
    read_before_snapshot(Some("REPEATABLE READ"));
}

#[test]
fn snapshot_conflict_reports_current_token_serializable() {
    if Conn::BACKEND == Backend::Mysql {
        // InnoDB's SERIALIZABLE reads take shared locks: the other writer
        // would wait for this transaction, there is no stale snapshot.
        return;
    }
    read_in_snapshot(Some("SERIALIZABLE"));
    read_before_snapshot(Some("SERIALIZABLE"));
}

/// A trigger that silently skips the write (PostgreSQL `RETURN NULL`,
/// SQLite `RAISE(IGNORE)`; MySQL has no such trigger).
fn skip_writes(conn: &mut Conn) -> bool {
    let ddl = match Conn::BACKEND {
        Backend::Postgres => {
            "CREATE FUNCTION skip_write() RETURNS trigger AS $$ BEGIN RETURN NULL; END $$ LANGUAGE plpgsql;
             CREATE TRIGGER skip_write BEFORE UPDATE ON counters FOR EACH ROW EXECUTE FUNCTION skip_write();"
        }
        Backend::Sqlite => {
            "CREATE TRIGGER skip_write BEFORE UPDATE ON counters BEGIN SELECT RAISE(IGNORE); END;"
        }
        _ => return false,
    };
    conn.batch_execute(ddl).expect("trigger");
    true
}

#[test]
fn skipped_write_is_unmatched_not_stale() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1]);
    if !skip_writes(&mut conn) {
        return;
    }
    for in_tx in [false, true] {
        let mut mine = Counter::find(&mut conn, 1).expect("read");
        mine.value = 5;
        let error = if in_tx {
            conn.transaction(|conn| mine.save_checked(conn))
                .unwrap_err()
        } else {
            mine.save_checked(&mut conn).unwrap_err()
        };
        let conflict = error.as_conflict().expect("a conflict");
        assert_eq!(conflict.state(), &ConflictState::Unmatched, "{conflict}");
        assert_eq!(conflict.current::<i32>(), None);
        assert!(!error.is_retryable());
        assert_eq!(mine.version, 1);
    }
}

/// "Insert, or carry on if the key is taken" inside a transaction: the library's own
/// taken key (and an upsert's conflict) leave the transaction usable on every backend,
/// so it commits the closure's other write, and the entity holds the committed token.
#[test]
fn a_caught_taken_key_leaves_the_transaction_usable_and_it_commits() {
    let db = test_db!();
    let mut conn = db.conn();
    diesel::insert_into(schema::counters::table)
        .values([counter(1, 1), counter(2, 1)])
        .execute(&mut conn)
        .expect("seed");
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    mine.value = 5;
    diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
        mine.save_checked(conn)?;
        let mut taken = counter(2, 0);
        match taken.insert_checked(conn) {
            Err(Error::UniqueViolation(_)) => {}
            other => panic!("expected a taken key, got {other:?}"),
        }
        match taken.upsert_checked(conn, None) {
            Err(Error::Conflict(_)) => {}
            other => panic!("expected a conflict, got {other:?}"),
        }
        Ok::<_, Error>(())
    })
    .expect("the transaction commits");
    assert_eq!(Counter::find(&mut conn, 1).expect("read"), mine);
}

/// A database error the closure catches: on PostgreSQL it aborts the transaction, whose
/// COMMIT answers ROLLBACK, so the helper reports an error and gives the token back; on
/// MySQL and SQLite only the statement failed and the transaction commits. Either way
/// `Ok` means committed, and the entity holds the row's token.
#[test]
fn a_caught_database_error_is_never_reported_committed() {
    let db = test_db!();
    let mut conn = db.conn();
    seed_counters(&mut conn, &[1]);
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    mine.value = 5;
    let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
        mine.save_checked(conn)?;
        let failed = diesel::sql_query("SELECT no_such_column FROM counters").execute(conn);
        assert!(failed.is_err(), "the statement fails");
        Ok::<_, Error>(())
    });
    let row = Counter::find(&mut conn, 1).expect("read");
    if Conn::BACKEND == Backend::Postgres {
        assert!(outcome.is_err(), "an aborted transaction is not Ok: {outcome:?}");
        assert_eq!((row.value, row.version), (0, 1), "nothing was committed");
    } else {
        outcome.expect("only the statement failed: the transaction commits");
        assert_eq!(row.value, 5);
    }
    assert_eq!(mine.version, row.version, "the entity holds the row's token");
    mine.value = 6;
    mine.save_checked(&mut conn).expect("the entity saves on the usable connection");
}

/// The same through the retry helper's transactional attempt (an escalated one).
#[test]
fn a_retried_attempt_that_caught_a_database_error_is_never_reported_committed() {
    let db = test_db!();
    seed_counters(&mut db.conn(), &[1]);
    let pool = diesel::r2d2::Pool::builder()
        .max_size(1)
        .build(diesel::r2d2::ConnectionManager::<Conn>::new(db.url()))
        .expect("r2d2 pool");
    let policy = diesel_occ::retry::RetryPolicy::new().escalate_after(0);
    let outcome = diesel_occ::blocking::retry(&pool, &policy, |conn, attempt| {
        let mut row: Counter = attempt.find(conn, 1)?;
        row.value = 5;
        row.save_checked(conn)?;
        let failed = diesel::sql_query("SELECT no_such_column FROM counters").execute(conn);
        assert!(failed.is_err(), "the statement fails");
        Ok(())
    });
    let row = Counter::find(&mut db.conn(), 1).expect("read");
    if Conn::BACKEND == Backend::Postgres {
        assert!(outcome.is_err(), "an aborted attempt is not Ok: {outcome:?}");
        assert_eq!(row.value, 0, "nothing was committed");
    } else {
        outcome.expect("only the statement failed: the attempt commits");
        assert_eq!(row.value, 5);
    }
}

/// A single entity the closure replaced with another row's entity, then rolled back:
/// it gets back the entity passed in, never the other row with the first row's token
/// (which the other row reaches later, letting a stale save through).
#[test]
fn a_single_entity_the_closure_replaced_gets_itself_back_after_rollback() {
    let db = test_db!();
    let mut conn = db.conn();
    diesel::insert_into(schema::counters::table)
        .values([counter(1, 2), counter(2, 1)])
        .execute(&mut conn)
        .expect("seed");
    let mut mine = Counter::find(&mut conn, 1).expect("read");
    let passed_in = mine.clone();
    let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
        **mine = Counter::find(conn, 2)?;
        mine.value = 7;
        mine.save_checked(conn)?;
        Err::<(), _>(rollback())
    });
    assert!(outcome.is_err());
    assert_eq!(mine, passed_in, "the entity as passed in");

    // Another writer moves row 2 to version 2, the token row 1 held.
    let mut theirs = Counter::find(&mut conn, 2).expect("read");
    theirs.value = 3;
    theirs.save_checked(&mut conn).expect("their save");
    mine.value = 8;
    mine.save_checked(&mut conn).expect("row 1 is as read");
    assert_eq!(Counter::find(&mut conn, 2).expect("read"), theirs, "row 2 is theirs");

    // The same for a tracked entity.
    let mut tracked = Tracked::new(Counter::find(&mut conn, 1).expect("read"));
    let passed_in = tracked.clone();
    let outcome = diesel_occ::transaction(&mut conn, &mut tracked, |conn, tracked| {
        **tracked = Tracked::new(Counter::find(conn, 2)?);
        tracked.edit().value = 9;
        tracked.save_checked(conn)?;
        Err::<(), _>(rollback())
    });
    assert!(outcome.is_err());
    assert_eq!(tracked, passed_in, "the tracked entity as passed in");
}
