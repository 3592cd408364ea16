//! What the blocking and async Galera scenarios share: the row, how a losing writer
//! lost, and the SQL that makes a node lag or read causally.

// Each flavour uses a part of it.
#![allow(dead_code)]

use diesel_occ::{Error, TransientKind};

/// The contended row (`counters` row 1).
pub(super) use diesel_occ_tests::entities::Counter;

/// Row 1 as seeded: value 0 at token 1.
pub(super) fn seed_row() -> Counter {
    Counter::new(1, 0)
}

/// Reads on this session wait until the node has applied every write set the cluster
/// committed before the read (`wsrep_sync_wait = 1`): a read that is never stale.
pub(super) const CAUSAL_READS: &str = "SET SESSION wsrep_sync_wait = 1";

/// Reads on this session take whatever the node has applied (`wsrep_sync_wait = 0`, the
/// default): they may be stale on a node that lags.
pub(super) const STALE_READS_ALLOWED: &str = "SET SESSION wsrep_sync_wait = 0";

/// Holds the node's global read lock: MariaDB desyncs the node and pauses its applier,
/// so the node stops applying the other nodes' write sets (they queue up) while its
/// reads still answer. Released by `UNLOCK TABLES` or when the session ends.
pub(super) const STOP_APPLYING: &str = "FLUSH TABLES WITH READ LOCK";

/// `wsrep_local_state_comment` of the session's node.
pub(super) const NODE_STATE: &str = "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
     WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT')";

/// MariaDB's error 1047 on a Galera node that is not ready (joining, or not in the
/// primary component): `WSREP has not yet prepared node for application use`.
pub(super) const NOT_READY: &str = "WSREP has not yet prepared node for application use";

/// How a writer that did not win lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Loss {
    /// Its checked write matched no row: the winner's write set had been applied on its
    /// node, so the token no longer matched (a typed `ConcurrencyConflict`).
    Conflict,
    /// Its write matched on its node, and the cluster refused it at commit: a
    /// certification failure or a brute-force abort by the winner's write set, which
    /// MariaDB reports as error 1213 (deadlock).
    Certification,
}

/// How `error` lost, after checking that the retry helpers would retry it; panics on any
/// other error.
pub(super) fn loss(error: &Error) -> Loss {
    assert!(
        error.is_retryable(),
        "a losing writer's error must be retryable: {error:?}"
    );
    if error.is_conflict() {
        Loss::Conflict
    } else {
        assert_eq!(
            error.transient_kind(),
            Some(TransientKind::Deadlock),
            "a loser that is not a conflict is a certification failure (1213): {error:?}"
        );
        Loss::Certification
    }
}

/// The value writer `writer` of round `round` writes: distinct per writer and round.
pub(super) fn value_of(round: usize, writer: usize) -> i32 {
    i32::try_from(1000 * (round + 1) + writer + 1).expect("small")
}

diesel::table! {
    /// One row per committed increment of the node-kill scenario, written in the same
    /// transaction as the increment: an increment whose outcome the client never
    /// learnt is committed exactly when its row is here.
    increment_log (op) {
        op -> BigInt,
    }
}

/// Creates [`increment_log`] (run on node 1; Galera replicates the DDL).
pub(super) const CREATE_INCREMENT_LOG: &str = "CREATE TABLE increment_log (op BIGINT PRIMARY KEY)";

/// The multi-host run: workers, increments each.
pub(super) const WORKERS: usize = 8;
pub(super) const INCREMENTS: usize = 250;

/// Retries for a row that 8 writers on 3 nodes increment: plenty of attempts, a short
/// jittered backoff. Every conflict and certification failure is retried.
pub(super) fn hot_row_policy() -> diesel_occ::retry::RetryPolicy {
    diesel_occ::retry::RetryPolicy::new()
        .max_attempts(500)
        .backoff(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(40),
        )
}

/// How the attempts of a run ended, counted by the attempts themselves.
#[derive(Debug, Default)]
pub(super) struct AttemptCounts {
    pub(super) attempts: std::sync::atomic::AtomicU64,
    pub(super) conflicts: std::sync::atomic::AtomicU64,
    pub(super) certification_failures: std::sync::atomic::AtomicU64,
}

impl AttemptCounts {
    /// Counts one attempt and, when it failed with a retryable error, how.
    pub(super) fn record<T>(&self, result: &Result<T, Error>) {
        use std::sync::atomic::Ordering::Relaxed;
        self.attempts.fetch_add(1, Relaxed);
        if let Err(error) = result {
            if error.is_conflict() {
                self.conflicts.fetch_add(1, Relaxed);
            } else if error.transient_kind() == Some(TransientKind::Deadlock) {
                self.certification_failures.fetch_add(1, Relaxed);
            }
        }
    }

    pub(super) fn attempts(&self) -> u64 {
        self.attempts.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The names and served counts of `stats`, for messages.
pub(super) fn served(stats: &[diesel_occ::multi_host::NodeStats]) -> Vec<u64> {
    stats.iter().map(|node| node.served).collect()
}
