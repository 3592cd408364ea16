//! Galera on blocking connections (`MysqlConnection`, feature `mysql`): writers on
//! different nodes race on one row, a stale read from a lagging node, increments
//! through the multi-host source, and a node killed under load.

use std::collections::HashMap;
use std::sync::Barrier;
use std::thread;

use diesel::connection::SimpleConnection;
use diesel::dsl::sql;
use diesel::mysql::MysqlConnection as Conn;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_occ::Error;
use diesel_occ::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ_tests::schema::mysql as schema;
use diesel_occ_tests::{Access, GaleraDb};

use super::common::{
    CAUSAL_READS, Counter, Loss, NODE_STATE, STALE_READS_ALLOWED, STOP_APPLYING, loss, seed_row,
    value_of,
};

/// A session on node `node` (1 to 3) whose reads are causal.
fn causal(db: &GaleraDb, node: usize) -> Conn {
    let mut conn = Conn::establish(db.url(node))
        .unwrap_or_else(|e| panic!("connect to node {node}: {e}"));
    conn.batch_execute(CAUSAL_READS).expect("wsrep_sync_wait");
    conn
}

fn seed(db: &GaleraDb) {
    diesel::insert_into(schema::counters::table)
        .values(seed_row())
        .execute(&mut causal(db, 1))
        .expect("seed");
}

/// Row 1 as every node holds it (causal reads), after checking that they agree.
fn row_everywhere(db: &GaleraDb) -> Counter {
    let rows: Vec<Counter> = (1..=db.nodes())
        .map(|node| Counter::find(&mut causal(db, node), 1).expect("row 1"))
        .collect();
    assert!(
        rows.iter().all(|row| *row == rows[0]),
        "the nodes disagree: {rows:?}"
    );
    rows[0].clone()
}

const ROUNDS: usize = 5;

/// Writer 0 on node 1 and writer 1 on node 2 both read row 1, meet at the race's barrier,
/// then save it with the token they read (autocommit), in each of a few rounds. Exactly
/// one wins each round; the other's write matched no row (the winner's write set was
/// applied first: a typed conflict) or failed certification (1213, retryable). The
/// row holds the winner's value, on every node.
#[test]
fn writers_on_two_nodes_race_one_row_and_exactly_one_wins() {
    let db = galera_db!(Access::Shared);
    seed(&db);
    let mut losses: HashMap<Loss, usize> = HashMap::new();
    for round in 0..ROUNDS {
        let report = Race::new(2).run(
            |writer| {
                let mut conn = causal(&db, writer + 1);
                let row = Counter::find(&mut conn, 1).expect("row 1");
                (conn, row)
            },
            |writer, (mut conn, mut row)| {
                row.value = value_of(round, writer);
                row.save_checked(&mut conn).map(|()| row.value)
            },
        );
        let winners: Vec<_> = report.winners().collect();
        assert_eq!(winners.len(), 1, "round {round}: {report:?}");
        let losers: Vec<_> = report.losers().collect();
        assert_eq!(losers.len(), 1, "round {round}: {report:?}");
        *losses.entry(loss(losers[0].1)).or_default() += 1;
        let row = row_everywhere(&db);
        assert_eq!(row.value, *winners[0].1, "round {round}: the winner's value");
        assert_eq!(row.version, 2 + i32::try_from(round).unwrap());
    }
    eprintln!("{}: losers over {ROUNDS} rounds: {losses:?}", module_path!());
}

/// Both writers save inside a transaction, each on its own node, and meet at a barrier
/// after the save, before the commit. Neither has committed, so each checked save
/// matches row 1 on its own node: the token check alone cannot stop the second writer
/// here. Certification does: exactly one commit succeeds, the other fails with error
/// 1213, which `is_retryable` says a retry would resolve, and the row holds the
/// winner's value on every node.
#[test]
fn saves_that_both_match_on_their_nodes_lose_one_commit_to_certification() {
    let db = galera_db!(Access::Shared);
    seed(&db);
    let barrier = Barrier::new(2);
    let outcomes: Vec<(bool, Result<i32, Error>)> = thread::scope(|scope| {
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let (db, barrier) = (&db, &barrier);
                scope.spawn(move || {
                    let mut conn = causal(db, writer + 1);
                    let mut saved_locally = false;
                    let value = value_of(0, writer);
                    let committed = conn.transaction::<_, Error, _>(|conn| {
                        let save = Counter::find(conn, 1).and_then(|mut row| {
                            row.value = value;
                            row.save_checked(conn)
                        });
                        saved_locally = save.is_ok();
                        // Both have saved (or failed) before either commits.
                        barrier.wait();
                        save.map(|()| value)
                    });
                    (saved_locally, committed)
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(
        outcomes.iter().all(|(saved, _)| *saved),
        "both checked saves match on their own node: {outcomes:?}"
    );
    let winners: Vec<i32> = outcomes
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().copied())
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let error = outcomes
        .iter()
        .find_map(|(_, r)| r.as_ref().err())
        .expect("a loser");
    assert_eq!(loss(error), Loss::Certification, "{error:?}");
    assert_eq!(row_everywhere(&db).value, winners[0]);
}

/// Node 2 stops applying (a session there holds its global read lock), node 1 saves a
/// change, and a session on node 2 with stale reads allowed (`wsrep_sync_wait = 0`)
/// reads the old row: the read IS stale. Once node 2 applies again, saving that stale
/// entity there must fail, as a conflict or a certification failure, never succeed:
/// the row keeps node 1's change on every node.
#[test]
fn a_stale_read_on_a_lagging_node_never_becomes_a_lost_update() {
    let db = galera_db!(Access::Exclusive);
    seed(&db);
    let mut reader = causal(&db, 2);
    assert_eq!(Counter::find(&mut reader, 1).expect("row 1"), seed_row());
    reader
        .batch_execute(STALE_READS_ALLOWED)
        .expect("wsrep_sync_wait");

    let mut lock = causal(&db, 2);
    lock.batch_execute(STOP_APPLYING).expect("global read lock");
    let state: String = diesel::select(sql::<Text>(NODE_STATE))
        .get_result(&mut lock)
        .expect("node state");
    eprintln!("{}: node 2 holding its read lock: {state}", module_path!());

    let mut writer = causal(&db, 1);
    let mut fresh = Counter::find(&mut writer, 1).expect("row 1");
    fresh.value = 111;
    fresh.save_checked(&mut writer).expect("node 1 saves");

    let mut stale = Counter::find(&mut reader, 1).expect("row 1");
    assert_eq!(
        (stale.value, stale.version),
        (0, 1),
        "node 2 lags: its read is stale"
    );

    lock.batch_execute("UNLOCK TABLES").expect("unlock");
    drop(lock);
    stale.value = 222;
    let result = stale.save_checked(&mut reader);
    let error = result.expect_err("a stale save must not succeed");
    eprintln!(
        "{}: the stale save on node 2 lost by {:?}",
        module_path!(),
        loss(&error)
    );
    let row = row_everywhere(&db);
    assert_eq!((row.value, row.version), (111, 2), "node 1's change stays");
}
