//! PostgreSQL primary and standby on blocking connections.

use std::sync::{Barrier, Mutex};
use std::thread;

use diesel::pg::PgConnection as Conn;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel_occ::blocking;
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::schema::pg as schema;
use diesel_occ_tests::{Access, PgReplicasDb};

use super::common::{
    ATTEMPT_BOUND, Counter, Increment, ROUNDS, WRITERS, bounded_policy, check_increments, seed_row,
};

/// Seeds row 1 on the primary and waits until the standby has replayed it.
fn seed(db: &PgReplicasDb) {
    diesel::insert_into(schema::counters::table)
        .values(seed_row())
        .execute(&mut db.primary())
        .expect("seed");
    db.wait_replayed();
}

/// With the standby's replay paused, a change committed on the primary is not seen on
/// the standby: its read is stale (what the retry tests below rely on). Once replay
/// resumes, the standby catches up.
#[test]
fn a_standby_read_is_stale_while_its_replay_is_paused() {
    let db = pg_replicas_db!(Access::Exclusive);
    seed(&db);
    let mut standby = db.standby();
    assert_eq!(Counter::find(&mut standby, 1).expect("row 1"), seed_row());

    let paused = db.pause_replay();
    let mut primary = db.primary();
    let mut row = Counter::find(&mut primary, 1).expect("row 1");
    row.value = 7;
    row.save_checked(&mut primary).expect("the primary saves");
    let stale = Counter::find(&mut standby, 1).expect("row 1");
    assert_eq!((stale.value, stale.version), (0, 1), "the standby is stale");

    paused.resume();
    let caught_up = Counter::find(&mut standby, 1).expect("row 1");
    assert_eq!((caught_up.value, caught_up.version), (7, 2));
}

fn pool(url: &str) -> Pool<ConnectionManager<Conn>> {
    Pool::builder()
        .max_size(u32::try_from(WRITERS).unwrap())
        .build(ConnectionManager::new(url))
        .expect("pool")
}

/// With the standby's replay paused and the primary one write ahead, 4 writers
/// increment row 1 through `retry_with_standby` in 5 rounds, all writers of a round
/// reading (from the standby) before any of them saves (a barrier in the first
/// attempt). Every increment's first attempt reads the stale row and conflicts on the
/// primary; every later attempt reads the primary; no increment takes more than
/// `1 + WRITERS` attempts (the policy allows no more); no update is lost: the row ends
/// at exactly one more than the writes. The control: a plain retry that keeps reading
/// the stale standby never gets a save in.
#[test]
fn writers_reading_a_stale_standby_lose_no_update_in_a_bounded_number_of_attempts() {
    let db = pg_replicas_db!(Access::Exclusive);
    seed(&db);
    let paused = db.pause_replay();
    // The primary moves on: the standby stays at token 1.
    let mut ahead = Counter::find(&mut db.primary(), 1).expect("row 1");
    ahead.value += 1;
    ahead
        .save_checked(&mut db.primary())
        .expect("the primary saves");
    let (primary, standby) = (pool(db.primary_url()), pool(db.standby_url()));
    let policy = bounded_policy();
    let increments = Mutex::new(Vec::new());
    for _ in 0..ROUNDS {
        let everyone_read = Barrier::new(WRITERS);
        thread::scope(|scope| {
            for _ in 0..WRITERS {
                scope.spawn(|| {
                    let mut increment = Increment {
                        attempts: 0,
                        standby_reads: 0,
                        first_read_version: 0,
                        first_conflicted: false,
                    };
                    blocking::retry_with_standby(&primary, &standby, &policy, |conns, attempt| {
                        increment.attempts = attempt.number();
                        let from_standby = !conns.reads_from_primary();
                        let read = conns
                            .read()
                            .and_then(|conn| attempt.find::<Counter>(conn, 1));
                        increment.standby_reads += u32::from(from_standby);
                        if attempt.is_first() {
                            everyone_read.wait();
                        }
                        let mut row = read?;
                        if attempt.is_first() {
                            increment.first_read_version = row.version;
                        }
                        row.value += 1;
                        let saved = row.save_checked(conns.write()?);
                        if attempt.is_first() {
                            increment.first_conflicted =
                                saved.as_ref().is_err_and(|e| e.is_conflict());
                        }
                        saved
                    })
                    .unwrap_or_else(|e| panic!("saved within {ATTEMPT_BOUND} attempts: {e:?}"));
                    increments.lock().unwrap().push(increment);
                });
            }
        });
    }
    check_increments(&increments.into_inner().unwrap(), 1);

    // The control: reading from the stale standby on every attempt never succeeds.
    let control = blocking::retry(&primary, &RetryPolicy::new().max_attempts(5), |conn, _| {
        let mut stale: Counter = Counter::find(&mut *standby.get().expect("standby"), 1)?;
        stale.value += 1;
        stale.save_checked(conn)
    });
    let exhausted = control.expect_err("a stale standby read never saves");
    assert!(
        matches!(&exhausted, diesel_occ::Error::RetriesExhausted(e) if e.attempts() == 5 && e.last_error().is_conflict()),
        "{exhausted:?}"
    );

    paused.resume();
    let total = i32::try_from(1 + WRITERS * ROUNDS).unwrap();
    for conn in [&mut db.primary(), &mut db.standby()] {
        let row = Counter::find(conn, 1).expect("row 1");
        assert_eq!((row.value, row.version), (total, total + 1));
    }
}
