//! `--failover sync|async-held` on `--backend pg-replicas`: the pair's primary
//! SIGKILLed and its standby promoted during the run (`tests/cluster/pg-replicas.sh
//! kill-primary`, `promote`), then the pair made anew for what runs after.
//!
//! - The workers reach the servers through libpq multi-host URLs over both: writes
//!   with `target_session_attrs=read-write` (the primary, the promoted standby after
//!   the failover), reads standby first (the standby, then the promoted one). A worker
//!   whose server died reconnects like after any killed session.
//! - `sync`: the standby is synchronous (`sync on`) from before the seed: a commit is
//!   acknowledged only once the standby has flushed it, so the failover may cost
//!   writes whose outcome is unknown (they were in flight) but no acknowledged one, and
//!   the run must pass.
//! - `async-held`, the twin: the standby stays asynchronous and its WAL stream is cut
//!   (`hold-wal`) at the failover time; the primary goes on acknowledging writes the
//!   standby will never have until [`HELD_WRITES`] more are acknowledged, and only then
//!   is it killed. The check must report those writes lost, and the integer tokens the
//!   new primary issues again (two acknowledged writes from one token) as lost updates.
//! - Evidence: the run fails for too little unless writes were acknowledged by the new
//!   primary after the promotion (and, for the twin, during the hold).

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use diesel_occ_tests::{PairFailover, PgReplicasDb};

use crate::counters::Counters;

/// `--failover`: the PostgreSQL pair's primary SIGKILLed and its standby promoted
/// during the run (`tests/cluster/pg-replicas.sh`), in one of two setups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailoverSetup {
    /// `sync`: the standby is synchronous (`pg-replicas.sh sync on`) before the run:
    /// no acknowledged write can be lost, the run must pass.
    Synchronous,
    /// `async-held`, the twin: the standby stays asynchronous and its WAL stream is cut
    /// (`hold-wal`) until writes were acknowledged that it will never have: the check
    /// must report them lost (and the integer tokens issued twice).
    AsyncHeld,
}

/// `--failover` with its time.
#[derive(Debug, Clone)]
pub(crate) struct Failover {
    pub(crate) setup: FailoverSetup,
    /// From the start of the run (default a third of the duration).
    pub(crate) at: Duration,
}

/// Writes the twin's primary acknowledges during the hold before it is killed.
const HELD_WRITES: u64 = 10;
/// After the promotion the fault waits (up to the run's end) for this many writes
/// acknowledged by the new primary.
const AFTER_PROMOTION: u64 = 20;
/// The longest the twin waits for its held writes.
const HOLD_WAIT: Duration = Duration::from_secs(20);

/// The workers' URLs: writes to whichever server takes them, reads standby first.
pub(crate) fn urls(db: &PgReplicasDb) -> (String, String) {
    let [primary, standby] = db.urls();
    (
        multi_host(primary, standby, "target_session_attrs=read-write"),
        multi_host(standby, primary, ""),
    )
}

/// `first` with `second`'s host and port added to its host list, and `attrs` to its
/// query.
fn multi_host(first: &str, second: &str, attrs: &str) -> String {
    fn host(url: &str) -> &str {
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        let authority = rest.split(['/', '?']).next().unwrap_or(rest);
        authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host)
    }
    let (one, other) = (host(first), host(second));
    let mut url = first.replacen(one, &format!("{one},{other}"), 1);
    if !attrs.is_empty() {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(attrs);
    }
    url
}

/// Makes the standby synchronous for `sync`, before the run; what the script said.
pub(crate) fn prepare(pair: &PairFailover<'_>, failover: &Failover) -> Vec<String> {
    match failover.setup {
        FailoverSetup::Synchronous => vec![said(&pair.sync(true))],
        FailoverSetup::AsyncHeld => Vec::new(),
    }
}

/// The failover, run beside the workers: at `failover.at` (from when it starts, with
/// the workers), until the new primary acknowledged writes or `duration` is over.
/// Returns notes, then shortfalls.
pub(crate) fn run(
    pair: &PairFailover<'_>,
    failover: &Failover,
    duration: Duration,
    counters: &Counters,
) -> (Vec<String>, Vec<String>) {
    let started = Instant::now();
    let at = || started.elapsed().as_secs_f64();
    let acked = || counters.acknowledged.load(Ordering::Relaxed);
    let (mut notes, mut shortfalls) = (Vec::new(), Vec::new());
    thread::sleep(failover.at);
    if failover.setup == FailoverSetup::AsyncHeld {
        let held = said(&pair.hold_wal());
        let base = acked();
        let deadline = Instant::now() + HOLD_WAIT;
        while acked() < base + HELD_WRITES && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        let during = acked() - base;
        notes.push(format!(
            "failover: {held} at {:.1}s; {during} writes acknowledged by the primary after it",
            at()
        ));
        if during == 0 {
            shortfalls.push("no write acknowledged while the standby's WAL was held".into());
        }
    }
    let before = acked();
    let killed = said(&pair.kill_primary());
    let killed_at = at();
    let promoted = said(&pair.promote());
    let promoted_at = at();
    let base = acked();
    while acked() < base + AFTER_PROMOTION && started.elapsed() < duration {
        thread::sleep(Duration::from_millis(5));
    }
    let after = acked() - base;
    notes.push(format!(
        "failover: {killed} at {killed_at:.1}s after {before} acknowledged writes; {promoted} \
         at {promoted_at:.1}s; {after} writes acknowledged by the new primary by {:.1}s",
        at()
    ));
    if after == 0 {
        shortfalls.push("no write acknowledged by the promoted standby".into());
    }
    (notes, shortfalls)
}

/// A script's report, without its name prefix.
fn said(stderr: &str) -> String {
    stderr
        .lines()
        .last()
        .unwrap_or_default()
        .trim_start_matches("pg-replicas: ")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::multi_host;

    #[test]
    fn multi_host_urls() {
        assert_eq!(
            multi_host(
                "postgres://postgres@127.0.0.1:15432/soak",
                "postgres://postgres@127.0.0.1:15433/soak",
                "target_session_attrs=read-write"
            ),
            "postgres://postgres@127.0.0.1:15432,127.0.0.1:15433/soak?target_session_attrs=read-write"
        );
        assert_eq!(
            multi_host("postgres://u@a:1/d?x=1", "postgres://u@b:2/d", ""),
            "postgres://u@a:1,b:2/d?x=1"
        );
    }
}
