//! What the blocking and async PostgreSQL replica scenarios share.

// Each flavour uses a part of it.
#![allow(dead_code)]

/// The contended row (`counters` row 1).
pub(super) use diesel_occ_tests::entities::Counter;

/// Row 1 as seeded: value 0 at token 1.
pub(super) fn seed_row() -> Counter {
    Counter::new(1, 0)
}

/// Writers per round and rounds of the standby run: each writer increments row 1 once
/// per round, all writers of a round at once.
pub(super) const WRITERS: usize = 4;
pub(super) const ROUNDS: usize = 5;

/// The most attempts an increment of the standby run may take:
/// `retry_with_standby` promises that a standby costs an operation at most one extra
/// attempt (its first, whose stale read conflicts), after which it reads from the
/// primary. There, in a round where each of the `WRITERS` writers commits one
/// increment, an attempt can only lose to another writer's commit: at most
/// `WRITERS - 1` times. So `1 + WRITERS`, and the policy allows no more: an increment
/// that needed more would end in `RetriesExhausted`.
pub(super) const ATTEMPT_BOUND: usize = 1 + WRITERS;

/// How one increment of the standby run went.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Increment {
    /// Attempts it took.
    pub(super) attempts: u32,
    /// Attempts that read from the standby.
    pub(super) standby_reads: u32,
    /// The token its first attempt read.
    pub(super) first_read_version: i32,
    /// Whether its first attempt's save conflicted.
    pub(super) first_conflicted: bool,
}

/// Checks the increments of the standby run against the contract, and prints how many
/// attempts they took. `stale_version` is the token the paused standby shows.
pub(super) fn check_increments(increments: &[Increment], stale_version: i32) {
    assert_eq!(increments.len(), WRITERS * ROUNDS);
    for increment in increments {
        assert_eq!(
            (
                increment.standby_reads,
                increment.first_read_version,
                increment.first_conflicted
            ),
            (1, stale_version, true),
            "only the first attempt read the standby; it read the stale row and its save \
             conflicted on the primary: {increment:?}"
        );
        assert!(
            increment.attempts >= 2 && increment.attempts as usize <= ATTEMPT_BOUND,
            "attempts within 2..={ATTEMPT_BOUND}: {increment:?}"
        );
    }
    let mut histogram = [0usize; ATTEMPT_BOUND + 1];
    for increment in increments {
        histogram[increment.attempts as usize] += 1;
    }
    eprintln!(
        "{} increments, attempts per increment (index = attempts): {histogram:?}",
        increments.len()
    );
}

/// The policy of the standby run: at most [`ATTEMPT_BOUND`] attempts, short backoff.
pub(super) fn bounded_policy() -> diesel_occ::retry::RetryPolicy {
    diesel_occ::retry::RetryPolicy::new()
        .max_attempts(u32::try_from(ATTEMPT_BOUND).expect("small"))
        .backoff(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(20),
        )
}
