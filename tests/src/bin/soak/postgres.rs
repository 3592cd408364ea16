//! The workload on PostgreSQL, through `diesel_occ_examples::postgres`. The fault is a
//! killed session (`pg_terminate_backend`).

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ_examples::postgres as examples;

use crate::faults;

/// The test tables the paths write (`counters`).
use diesel_occ_tests::schema::pg as schema;

/// The connection the workload runs on.
type Conn = diesel::pg::PgConnection;

/// The connection the async paths run on.
type AsyncConn = diesel_async::AsyncPgConnection;

/// A new connection. A session killed right after connecting fails here: an error for
/// the caller, not a panic.
fn connect(url: &str) -> ConnectionResult<Conn> {
    let mut conn = Conn::establish(url)?;
    conn.batch_execute("SET lc_messages TO 'C'")
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// Kills one other session of the soak database.
fn fault(url: &str, admin: &mut Option<Conn>, rng: &mut fastrand::Rng) -> bool {
    const SESSIONS: &str = "SELECT CAST(pid AS BIGINT) AS id FROM pg_stat_activity \
                            WHERE datname = current_database() AND pid <> pg_backend_pid()";
    faults::kill_server_session(admin, || connect(url).ok(), SESSIONS, kill, rng)
}

/// `false` when no such session was left to signal.
fn kill(conn: &mut Conn, victim: i64) -> bool {
    #[derive(QueryableByName)]
    struct Killed {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        killed: bool,
    }
    diesel::sql_query(format!("SELECT pg_terminate_backend({victim}) AS killed"))
        .get_result::<Killed>(conn)
        .is_ok_and(|k| k.killed)
}

/// The fault, as the figures line names it.
const FAULT_KIND: &str = "sessions killed";

/// The connection the check reads the database with: a plain one.
use self::connect as connect_for_check;

// The same files for every backend, each time for this module's connection type.
#[allow(clippy::duplicate_mod)]
#[path = "workload/mod.rs"]
mod workload;

pub(crate) use workload::run;

/// Runs `path` on the PostgreSQL pair of `tests/cluster/pg-replicas.sh`: its database
/// made on the primary and replayed by the standby, the reads of `retry_with_standby`
/// on the standby, the faults on the primary; `None` when the pair is not running.
pub(crate) fn run_on_replicas(
    args: &crate::options::Args,
    path: &'static str,
) -> Option<crate::report::Report> {
    use diesel_occ_tests::{Access, PgReplicasDb};
    // A failover disturbs the pair: it runs alone.
    let access = match args.failover {
        Some(_) => Access::Exclusive,
        None => Access::Shared,
    };
    let db = PgReplicasDb::create(&format!("soak_{path}"), access)?;
    if let Some(failover) = &args.failover {
        return Some(run_with_failover(args, path, &db, failover));
    }
    let site = workload::Site {
        backend: "pg-replicas",
        url: db.primary_url(),
        standby_url: db.standby_url(),
        wait_replayed: &|| db.wait_replayed(),
        beside: None,
    };
    Some(workload::run_on(args, path, &site))
}

/// [`run_on_replicas`] with `--failover` (`pg_failover.rs`): the workers on multi-host
/// URLs, the failover beside them, then a new pair.
fn run_with_failover(
    args: &crate::options::Args,
    path: &'static str,
    db: &diesel_occ_tests::PgReplicasDb,
    failover: &crate::options::Failover,
) -> crate::report::Report {
    use crate::pg_failover;
    let pair = db.failover();
    let mut notes = pg_failover::prepare(&pair, failover);
    let (url, standby_url) = pg_failover::urls(db);
    let fault = |counters: &crate::counters::Counters| {
        pg_failover::run(&pair, failover, args.duration, counters)
    };
    let site = workload::Site {
        backend: "pg-replicas",
        url: &url,
        standby_url: &standby_url,
        wait_replayed: &|| db.wait_replayed(),
        beside: Some(&fault),
    };
    let mut report = workload::run_on(args, path, &site);
    notes.append(&mut report.notes);
    report.notes = notes;
    let took = pair.rebuild();
    report.notes.push(format!(
        "failover: the pair re-created (stop, start) in {:.1}s",
        took.as_secs_f64()
    ));
    report
}
