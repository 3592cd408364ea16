//! PostgreSQL primary and standby on blocking connections.

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ_tests::schema::pg as schema;
use diesel_occ_tests::{Access, PgReplicasDb};

use super::common::{Counter, seed_row};

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
