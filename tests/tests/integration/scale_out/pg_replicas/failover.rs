//! Failover on the PostgreSQL pair (the primary SIGKILLed, the standby promoted) with
//! clients that keep their entities across it, per token kind. The interleaving is
//! forced: the standby's WAL stream is cut (`pg-replicas.sh hold-wal`), then
//!
//! 1. client A (one per row) saves its entity through a `MultiHost` over both servers
//!    (a node in recovery refuses the connection, so writes go to the primary);
//! 2. the primary is SIGKILLed and the standby promoted: what it did not receive is gone;
//! 3. client B reads the row on the new primary (the `MultiHost` skips the dead node), saves it;
//! 4. client A saves its entity again, with the token its first save returned.
//!
//! Counted per token kind: A's acknowledged first saves the database lost (its property), and A's
//! second saves accepted (the library's: a stale save overwriting B's acknowledged write). With an
//! asynchronous standby every first save is acknowledged and lost; B then issues an integer token
//! again (`v + 1` twice), so A's stale save matches: a lost update the library cannot see. A UUID
//! token is random and a timestamp token the writer's clock, so B's differs and A's save is a
//! `ConcurrencyConflict`, unless the row's timestamp is ahead of the writers' clocks: then each
//! fresh token is the old one plus one tick, like an integer (the fourth kind). With a synchronous
//! standby no first save is acknowledged while the standby cannot have it (each waits until the
//! kill ends it), so nothing acknowledged is lost and every stale save is refused.
//!
//! Each setup is one test failing the pair over once for all kinds, then making a new pair.

use std::fmt;
use std::thread;
use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::dsl::sql;
use diesel::pg::PgConnection as Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool};
use diesel_occ::Error;
use diesel_occ::blocking::ConnectionSource;
use diesel_occ::multi_host::MultiHost;
use diesel_occ::prelude::*;
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::schema::pg as schema;
use diesel_occ_tests::{Access, PgReplicasDb, wait_until};

use crate::flavours::blocking::insert_rows;

/// Rows per token kind, each with a client A of its own.
const ROWS: i32 = 3;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: uuid::Uuid,
}

/// A `timestamp` column stores microseconds: the token is the writer's clock at that precision.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stamped)]
struct Stamped {
    id: i32,
    value: i32,
    #[occ(version, precision = 6)]
    updated_at: NaiveDateTime,
}

/// The token kinds, each on rows of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Integer,
    Uuid,
    Timestamp,
    /// Timestamp tokens seeded in the year 2999: ahead of every writer's clock.
    TimestampAhead,
}

impl Kind {
    const ALL: [Kind; 4] = [
        Kind::Integer,
        Kind::Uuid,
        Kind::Timestamp,
        Kind::TimestampAhead,
    ];

    fn id(self, n: i32) -> i32 {
        n + if self == Kind::TimestampAhead { 100 } else { 0 }
    }

    fn seed(self, conn: &mut Conn, n: i32) {
        let id = self.id(n);
        let updated_at = match self {
            Kind::TimestampAhead => "2999-01-01T00:00:00".parse().expect("a timestamp"),
            _ => NaiveDateTime::initial_at(6),
        };
        match self {
            Kind::Integer => insert_rows!(conn, schema::counters::table, Counter::new(id, 0)),
            Kind::Uuid => {
                let version = uuid::Uuid::initial();
                let row = Stock {
                    id,
                    available: 0,
                    version,
                };
                insert_rows!(conn, schema::stock::table, row)
            }
            Kind::Timestamp | Kind::TimestampAhead => {
                let row = Stamped {
                    id,
                    value: 0,
                    updated_at,
                };
                insert_rows!(conn, schema::stamped::table, row)
            }
        };
    }

    fn load(self, conn: &mut Conn, n: i32) -> Result<Box<dyn Held>, Error> {
        let id = self.id(n);
        let held: Box<dyn Held> = match self {
            Kind::Integer => Box::new(Counter::find(conn, id)?),
            Kind::Uuid => Box::new(Stock::find(conn, id)?),
            Kind::Timestamp | Kind::TimestampAhead => Box::new(Stamped::find(conn, id)?),
        };
        Ok(held)
    }
}

/// An entity a client holds: its value, and its checked save.
trait Held: fmt::Debug + Send {
    fn value(&mut self) -> &mut i32;
    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error>;
}

macro_rules! held {
    ($($entity:ty: $value:ident),+) => {$(
        impl Held for $entity {
            fn value(&mut self) -> &mut i32 {
                &mut self.$value
            }

            fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
                CheckedDsl::save_checked(self, conn)
            }
        }
    )+};
}

held!(Counter: value, Stock: available, Stamped: value);

/// A node of the clients' `MultiHost`: a new connection per checkout, refused (the node is
/// skipped) while the server is a standby, as libpq's `target_session_attrs=read-write` does.
fn writable(url: &str) -> impl Fn() -> ConnectionResult<Conn> + Send + Sync + use<> {
    let url = url.to_owned();
    move || {
        let mut conn = Conn::establish(&url)?;
        let standby = diesel::select(sql::<Bool>("pg_is_in_recovery()")).get_result(&mut conn);
        let read_only = ConnectionError::BadConnection("a standby in recovery".into());
        let standby = standby.map_err(ConnectionError::CouldntSetupConfiguration)?;
        if standby { Err(read_only) } else { Ok(conn) }
    }
}

/// What one token kind went through.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// Client A's first saves acknowledged by the old primary.
    acknowledged: usize,
    /// ...of which the new primary does not have the change.
    lost: usize,
    /// Client A's saves after the failover, from its held entity, that were accepted.
    stale_accepted: usize,
    /// ...and refused with a `ConcurrencyConflict`.
    stale_refused: usize,
}

/// Which setup a test fails over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// The default: the standby streams asynchronously.
    Asynchronous,
    /// `synchronous_standby_names` names the standby, `synchronous_commit = on`.
    Synchronous,
}

const A_FIRST: i32 = 1_000;
const B_VALUE: i32 = 2_000;
const A_STALE: i32 = 3_000;

/// Runs the module documentation's failover on `setup`; returns the tally per kind, printed.
fn fail_over(db: &PgReplicasDb, setup: Setup) -> Vec<(Kind, Tally)> {
    let clients: Vec<(Kind, i32)> = Kind::ALL
        .into_iter()
        .flat_map(|kind| (1..=ROWS).map(move |n| (kind, n)))
        .collect();
    let mut primary = db.primary();
    for &(kind, n) in &clients {
        kind.seed(&mut primary, n);
    }
    drop(primary);
    db.wait_replayed();
    let [primary_url, standby_url] = db.urls();
    let nodes = MultiHost::new([writable(primary_url), writable(standby_url)]);
    // Every client A reads its row before anything is disturbed.
    let mut held = Vec::new();
    for &(kind, n) in &clients {
        let mut conn = nodes.checkout().expect("the primary");
        held.push(kind.load(&mut conn, n).expect("seeded"));
    }

    let pair = db.failover();
    if setup == Setup::Synchronous {
        eprint!("{}", pair.sync(true));
    }
    eprint!("{}", pair.hold_wal());
    // Client A's first saves, each on a thread: on a synchronous standby the kill ends them.
    let first: Vec<Result<(), Error>> = thread::scope(|scope| {
        let mut saves = Vec::new();
        for entity in &mut held {
            let nodes = &nodes;
            saves.push(scope.spawn(move || {
                *entity.value() += A_FIRST;
                let mut conn = nodes.checkout()?;
                entity.save_checked(&mut conn)
            }));
        }
        if setup == Setup::Synchronous {
            let mut admin = db.primary();
            let waiting = format!("all {} saves to wait for the sync standby", saves.len());
            let in_sync_rep = diesel::select(sql::<BigInt>(
                "(SELECT count(*) FROM pg_stat_activity \
                 WHERE wait_event = 'SyncRep' AND datname = current_database())",
            ));
            wait_until(&waiting, Duration::from_secs(30), || {
                let n = in_sync_rep.clone().get_result::<i64>(&mut admin);
                n.expect("sync rep") == i64::try_from(saves.len()).expect("few")
            });
            eprint!("{}", pair.kill_primary());
        }
        let joined = saves.into_iter().map(|save| save.join().expect("client A"));
        joined.collect()
    });
    if setup == Setup::Asynchronous {
        eprint!("{}", pair.kill_primary());
    }
    eprint!("{}", pair.promote());

    let mut tallies: Vec<(Kind, Tally)> = Kind::ALL.map(|kind| (kind, Tally::default())).into();
    for (i, &(kind, n)) in clients.iter().enumerate() {
        // The clients go kind by kind, ROWS each.
        let t = &mut tallies[i / ROWS as usize].1;
        let mut conn = nodes.checkout().expect("the new primary");
        let mut now = kind.load(&mut conn, n).expect("the row");
        if first[i].is_ok() {
            t.acknowledged += 1;
            if *now.value() != *held[i].value() {
                t.lost += 1;
            }
        }
        // Client B: a fresh read on the new primary, an acknowledged save.
        let mut b = now;
        *b.value() = B_VALUE + n;
        let saved = b.save_checked(&mut conn);
        saved.unwrap_or_else(|e| panic!("client B saves {kind:?} {n} on the new primary: {e:?}"));
        // Client A again, from the entity it kept.
        *held[i].value() = A_STALE + n;
        match held[i].save_checked(&mut conn) {
            Ok(()) => t.stale_accepted += 1,
            Err(e) if e.is_conflict() => t.stale_refused += 1,
            Err(e) => panic!("client A's second save of {kind:?} {n}: {e:?}"),
        }
        // The row holds B's write unless A's stale save overwrote it.
        let end = *kind.load(&mut conn, n).expect("the row").value();
        let ends = [B_VALUE + n, A_STALE + n];
        assert!(ends.contains(&end), "{kind:?} {n} ends at {end}");
    }
    let served: Vec<u64> = nodes.node_stats().iter().map(|s| s.served).collect();
    for (kind, t) in &tallies {
        eprintln!(
            "failover {setup:?}: {kind:?}: {} of {ROWS} first saves acknowledged, {} of them \
             lost by the database; stale saves after failover: {} accepted, {} refused",
            t.acknowledged, t.lost, t.stale_accepted, t.stale_refused
        );
    }
    eprintln!(
        "checkouts served by node 1 (old primary), node 2 (promoted): {served:?}; \
         the pair re-created in {:.1?}",
        pair.rebuild()
    );
    tallies
}

/// Asynchronous standby (the default): every acknowledged first save is lost; integer tokens
/// (and timestamps ahead of the clock) accept every stale save, UUIDs and timestamps none.
#[test]
fn an_asynchronous_failover_reissues_integer_tokens_but_not_uuid_or_timestamp_ones() {
    let db = cluster_db!(PgReplicasDb, Access::Exclusive);
    let rows = usize::try_from(ROWS).expect("few");
    for (kind, tally) in fail_over(&db, Setup::Asynchronous) {
        let accepted = match kind {
            Kind::Integer | Kind::TimestampAhead => rows,
            Kind::Uuid | Kind::Timestamp => 0,
        };
        let expected = Tally {
            acknowledged: rows,
            lost: rows,
            stale_accepted: accepted,
            stale_refused: rows - accepted,
        };
        assert_eq!(tally, expected, "{kind:?}");
    }
}

/// Synchronous standby: no first save is acknowledged while the standby cannot have it, so
/// nothing acknowledged is lost, and every stale save is refused, whatever the token kind.
#[test]
fn a_synchronous_standby_loses_no_acknowledged_write_and_accepts_no_stale_save() {
    let db = cluster_db!(PgReplicasDb, Access::Exclusive);
    let rows = usize::try_from(ROWS).expect("few");
    for (kind, tally) in fail_over(&db, Setup::Synchronous) {
        let expected = Tally {
            stale_refused: rows,
            ..Tally::default()
        };
        assert_eq!(tally, expected, "{kind:?}");
    }
}
