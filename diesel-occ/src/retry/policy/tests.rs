use diesel::result::{DatabaseErrorKind, Error as DieselError};

use super::retry_loop::jitter;
use super::*;
use crate::error::BatchConflict;
use crate::error::{ConcurrencyConflict, ConflictState, EntityKey, Error, NotFound, Operation};
use crate::token::VersionToken;

const MS: Duration = Duration::from_millis(1);

fn conflict(operation: Operation) -> Error {
    ConcurrencyConflict::new(
        "stock",
        EntityKey::new(&["id"], vec!["1".into()]),
        operation,
        1_i32.to_value(),
        ConflictState::Stale {
            current: 2_i32.to_value(),
        },
    )
    .into()
}

fn busy() -> Error {
    DieselError::DatabaseError(
        DatabaseErrorKind::Unknown,
        Box::new(String::from("database is locked")),
    )
    .into()
}

fn seeded(policy: &RetryPolicy) -> RetryLoop<'_> {
    RetryLoop::with_rng(policy, fastrand::Rng::with_seed(7))
}

#[test]
fn backoff_ceiling_doubles_up_to_the_maximum() {
    let policy = RetryPolicy::new().backoff(10 * MS, 75 * MS);
    let ceilings: Vec<_> = (1..=6).map(|n| policy.backoff_ceiling(n)).collect();
    assert_eq!(
        ceilings,
        [10 * MS, 20 * MS, 40 * MS, 75 * MS, 75 * MS, 75 * MS]
    );
    // No overflow for absurd retry numbers or durations.
    assert_eq!(policy.backoff_ceiling(u32::MAX), 75 * MS);
    let huge = RetryPolicy::new().backoff(Duration::MAX, Duration::MAX);
    assert_eq!(huge.backoff_ceiling(40), Duration::from_nanos(u64::MAX));
    // Zero means no sleep at all.
    let zero = RetryPolicy::new().backoff(Duration::ZERO, Duration::ZERO);
    assert_eq!(zero.backoff_ceiling(3), Duration::ZERO);
}

#[test]
fn jitter_stays_within_zero_and_the_ceiling_and_spreads() {
    let mut rng = fastrand::Rng::with_seed(1);
    let ceiling = 40 * MS;
    let samples: Vec<_> = (0..2_000).map(|_| jitter(&mut rng, ceiling)).collect();
    assert!(samples.iter().all(|d| *d <= ceiling));
    // Full jitter: the whole range is used, not just the top.
    assert!(samples.iter().any(|d| *d < 4 * MS));
    assert!(samples.iter().any(|d| *d > 36 * MS));
    assert_eq!(jitter(&mut rng, Duration::ZERO), Duration::ZERO);
}

#[test]
fn builder_clamps_nonsense() {
    let policy = RetryPolicy::new().max_attempts(0).backoff(20 * MS, 5 * MS);
    assert_eq!(policy.attempt_limit(), 1);
    assert_eq!(policy.backoff_bounds(), (20 * MS, 20 * MS));
    assert_eq!(
        RetryPolicy::new().deadline(MS).no_deadline().time_budget(),
        None
    );
}

#[test]
fn success_and_final_errors_end_the_loop_at_once() {
    let policy = RetryPolicy::new();
    let mut state = seeded(&policy);
    state.next_attempt();
    assert!(matches!(
        state.after(Ok(7), Duration::ZERO),
        Step::Done(Ok(7))
    ));

    for error in [
        Error::from(DieselError::NotFound),
        NotFound {
            table: "stock",
            key: EntityKey::new(&["id"], vec!["1".into()]),
        }
        .into(),
        // A stale client token cannot become current by re-reading.
        conflict(Operation::ClientToken),
    ] {
        let mut state = seeded(&policy);
        state.next_attempt();
        match state.after::<()>(Err(error), Duration::ZERO) {
            Step::Done(Err(error)) => assert!(!error.is_retryable(), "{error:?}"),
            step => panic!("expected the error back, got {step:?}"),
        }
    }
}

#[test]
fn conflicts_and_transient_errors_retry_until_the_attempt_limit() {
    let policy = RetryPolicy::new().max_attempts(3).backoff(MS, 4 * MS);
    let mut state = seeded(&policy);
    let errors = [
        conflict(Operation::Update),
        busy(),
        conflict(Operation::Delete),
    ];
    let mut steps = Vec::new();
    for error in errors {
        let attempt = state.next_attempt();
        steps.push((
            attempt.number(),
            state.after::<()>(Err(error), Duration::ZERO),
        ));
    }
    assert!(matches!(steps[0], (1, Step::Retry(d)) if d <= MS));
    assert!(matches!(steps[1], (2, Step::Retry(d)) if d <= 2 * MS));
    match &steps[2] {
        (3, Step::Done(Err(Error::RetriesExhausted(exhausted)))) => {
            assert_eq!(exhausted.attempts(), 3);
            assert!(!exhausted.deadline_reached());
            assert_eq!(
                exhausted
                    .last_conflict()
                    .map(ConcurrencyConflict::operation),
                Some(Operation::Delete)
            );
        }
        step => panic!("expected exhaustion after 3 attempts, got {step:?}"),
    }
}

#[test]
fn the_deadline_stops_retries_instead_of_sleeping_past_it() {
    let policy = RetryPolicy::new()
        .max_attempts(100)
        .backoff(10 * MS, 10 * MS)
        .deadline(100 * MS);
    let mut state = seeded(&policy);
    state.next_attempt();
    // Well before the deadline, with room for any backoff up to 10 ms: retry.
    match state.after::<()>(Err(busy()), 50 * MS) {
        Step::Retry(backoff) => assert!(backoff <= 10 * MS),
        step => panic!("expected a retry, got {step:?}"),
    }
    // Past the deadline: give up, whatever the backoff.
    state.next_attempt();
    match state.after::<()>(Err(conflict(Operation::Update)), 100 * MS) {
        Step::Done(Err(Error::RetriesExhausted(exhausted))) => {
            assert_eq!(exhausted.attempts(), 2);
            assert!(exhausted.deadline_reached());
            assert!(exhausted.last_error().is_conflict());
        }
        step => panic!("expected the deadline to end the loop, got {step:?}"),
    }
}

#[test]
fn a_checkout_the_deadline_cut_short_ends_the_loop_like_the_deadline() {
    use crate::error::{PoolError, PoolErrorKind};

    let timed_out = || Error::from(PoolError::from_kind(PoolErrorKind::Timeout));
    let policy = RetryPolicy::new()
        .backoff(Duration::ZERO, Duration::ZERO)
        .deadline(MS);
    // The first attempt's checkout: the pool error itself.
    let mut state = seeded(&policy);
    state.next_attempt();
    std::thread::sleep(2 * MS); // past the deadline
    match state.after::<()>(Err(timed_out()), Duration::ZERO) {
        Step::Done(Err(Error::Pool(error))) => assert_eq!(error.kind(), PoolErrorKind::Timeout),
        step => panic!("expected the pool error, got {step:?}"),
    }
    // A retry's checkout: the deadline came first, with the conflict that was
    // retried, after the one attempt that ran.
    let mut state = seeded(&policy);
    state.next_attempt();
    assert!(matches!(
        state.after::<()>(Err(conflict(Operation::Update)), Duration::ZERO),
        Step::Retry(_)
    ));
    state.next_attempt();
    std::thread::sleep(2 * MS);
    match state.after::<()>(Err(timed_out()), 2 * MS) {
        Step::Done(Err(Error::RetriesExhausted(exhausted))) => {
            assert_eq!(exhausted.attempts(), 1);
            assert!(exhausted.deadline_reached());
            assert!(exhausted.last_error().is_conflict(), "{exhausted:?}");
        }
        step => panic!("expected the deadline to end the loop, got {step:?}"),
    }
    // A pool that timed out on its own, with time left: the pool error.
    let roomy = policy.deadline(Duration::from_secs(3600));
    let mut state = seeded(&roomy);
    state.next_attempt();
    assert!(matches!(
        state.after::<()>(Err(conflict(Operation::Update)), Duration::ZERO),
        Step::Retry(_)
    ));
    state.next_attempt();
    assert!(matches!(
        state.after::<()>(Err(timed_out()), Duration::ZERO),
        Step::Done(Err(Error::Pool(_)))
    ));
}

#[test]
fn a_backoff_that_would_reach_the_deadline_gives_up_now() {
    // Every backoff is exactly 30 ms (initial = max, and the jitter is drawn from
    // [0, 30 ms]; check the boundary with the largest draw by trying many seeds).
    let policy = RetryPolicy::new()
        .max_attempts(100)
        .backoff(30 * MS, 30 * MS)
        .deadline(100 * MS);
    let mut gave_up = 0;
    let mut retried = 0;
    for seed in 0..200 {
        let mut state = RetryLoop::with_rng(&policy, fastrand::Rng::with_seed(seed));
        state.next_attempt();
        match state.after::<()>(Err(busy()), 85 * MS) {
            Step::Retry(backoff) => {
                assert!(85 * MS + backoff < 100 * MS, "slept past the deadline");
                retried += 1;
            }
            Step::Done(Err(Error::RetriesExhausted(e))) if e.deadline_reached() => {
                gave_up += 1;
            }
            step => panic!("unexpected {step:?}"),
        }
    }
    // About half of the draws fit in the 15 ms left.
    assert!(
        gave_up > 0 && retried > 0,
        "gave up {gave_up}, retried {retried}"
    );
}

#[test]
fn escalation_starts_after_the_configured_number_of_conflicts() {
    let policy = RetryPolicy::new()
        .max_attempts(6)
        .backoff(Duration::ZERO, Duration::ZERO)
        .escalate_after(2);
    let mut state = seeded(&policy);
    let mut escalated = Vec::new();
    // A transient error does not count towards escalation; conflicts do.
    for error in [
        busy(),
        conflict(Operation::Update),
        busy(),
        conflict(Operation::Update),
        busy(),
    ] {
        let attempt = state.next_attempt();
        escalated.push((
            attempt.number(),
            attempt.conflicts(),
            attempt.is_escalated(),
        ));
        assert!(matches!(
            state.after::<()>(Err(error), Duration::ZERO),
            Step::Retry(_)
        ));
    }
    let last = state.next_attempt();
    escalated.push((last.number(), last.conflicts(), last.is_escalated()));
    assert!(last.is_last());
    assert_eq!(
        escalated,
        [
            (1, 0, false),
            (2, 0, false),
            (3, 1, false),
            (4, 1, false),
            (5, 2, true),
            (6, 2, true),
        ]
    );

    let always = RetryPolicy::new().escalate_after(0);
    assert!(seeded(&always).next_attempt().is_escalated());
    assert!(!seeded(&RetryPolicy::new()).next_attempt().is_escalated());
}

/// The backoff each of these errors gets, one after the other, on a fresh loop.
fn backoffs(policy: &RetryPolicy, errors: Vec<Error>) -> Vec<Duration> {
    let mut state = seeded(policy);
    errors
        .into_iter()
        .map(|error| {
            state.next_attempt();
            match state.after::<()>(Err(error), Duration::ZERO) {
                Step::Retry(backoff) => backoff,
                step => panic!("expected a retry, got {step:?}"),
            }
        })
        .collect()
}

#[test]
fn a_retry_that_will_take_the_lock_does_not_back_off() {
    let hour = Duration::from_secs(3600);
    let slow = RetryPolicy::new().max_attempts(10).backoff(hour, hour);
    let sleeps = |policy, errors| {
        backoffs(&policy, errors)
            .into_iter()
            .map(|backoff| !backoff.is_zero())
            .collect::<Vec<_>>()
    };
    // Without escalation every retry backs off.
    assert_eq!(
        sleeps(slow.clone(), vec![conflict(Operation::Update), busy()]),
        [true, true]
    );
    // Escalating after 2 conflicts: the retry that escalates starts at once; a
    // transient error still backs off, escalated or not.
    assert_eq!(
        sleeps(
            slow.clone().escalate_after(2),
            vec![
                conflict(Operation::Update),
                busy(),
                conflict(Operation::Update),
                busy(),
            ]
        ),
        [true, true, false, true]
    );
    // Hot rows. A zero window makes nothing hot; with a threshold of 2, the first
    // conflict backs off and the second makes the row hot, so the retry locks it.
    assert_eq!(
        sleeps(
            slow.clone().escalate_hot_rows(1, Duration::ZERO),
            vec![conflict(Operation::Update)]
        ),
        [true]
    );
    assert_eq!(
        sleeps(
            slow.escalate_hot_rows(2, hour),
            vec![
                conflict(Operation::Update),
                conflict(Operation::Update),
                busy()
            ]
        ),
        [true, false, true]
    );
}

fn conflict_on(id: i32, state: ConflictState) -> ConcurrencyConflict {
    ConcurrencyConflict::new(
        "stock",
        EntityKey::new(&["id"], vec![id.to_string()]),
        Operation::Update,
        1_i32.to_value(),
        state,
    )
}

fn stale(id: i32) -> ConcurrencyConflict {
    conflict_on(
        id,
        ConflictState::Stale {
            current: 2_i32.to_value(),
        },
    )
}

fn deleted(id: i32) -> ConcurrencyConflict {
    conflict_on(id, ConflictState::Deleted)
}

fn batch(conflicts: Vec<ConcurrencyConflict>) -> Error {
    BatchConflict::new(3, conflicts.into_iter().enumerate().collect()).into()
}

/// Runs one attempt per error on a fresh loop; returns, for each attempt, whether
/// it was escalated and whether it ran in the helper's transaction, and the backoffs.
fn run(policy: &RetryPolicy, errors: Vec<Error>) -> (Vec<(bool, bool)>, Vec<Duration>) {
    let mut state = seeded(policy);
    let mut kinds = Vec::new();
    let mut sleeps = Vec::new();
    for error in errors {
        let attempt = state.next_attempt();
        kinds.push((attempt.is_escalated(), attempt.runs_in_transaction()));
        match state.after::<()>(Err(error), Duration::ZERO) {
            Step::Retry(backoff) => sleeps.push(backoff),
            step => panic!("expected a retry, got {step:?}"),
        }
    }
    let last = state.next_attempt();
    kinds.push((last.is_escalated(), last.runs_in_transaction()));
    (kinds, sleeps)
}

#[test]
fn conflicts_inside_a_batch_count_towards_escalation_like_one_conflict() {
    let hour = Duration::from_secs(3600);
    let policy = RetryPolicy::new()
        .max_attempts(10)
        .backoff(hour, hour)
        .escalate_after(2);
    let (kinds, sleeps) = run(
        &policy,
        vec![batch(vec![stale(1), stale(2)]), batch(vec![stale(1)])],
    );
    // Two batches with conflicts are two conflicts, whatever their size: the third
    // attempt escalates, and the retry that leads to it does not back off.
    assert_eq!(kinds, [(false, false), (false, false), (true, true)]);
    assert!(!sleeps[0].is_zero());
    assert_eq!(sleeps[1], Duration::ZERO);

    // Every stale row of a batch is a conflict on that row for the hot-row memory.
    let hot = RetryPolicy::new()
        .max_attempts(10)
        .backoff(hour, hour)
        .escalate_hot_rows(1, hour);
    let (kinds, sleeps) = run(&hot, vec![batch(vec![stale(1), deleted(2), stale(3)])]);
    assert_eq!(kinds, [(false, false), (false, true)]);
    assert_eq!(
        sleeps,
        [Duration::ZERO],
        "the retry locks a hot row at once"
    );
    let memory = hot.hot_row_memory().expect("a memory");
    let is_hot =
        |id: i32| memory.is_hot_row("stock", || EntityKey::new(&["id"], vec![id.to_string()]));
    assert_eq!((is_hot(1), is_hot(2), is_hot(3)), (true, false, true));
}

#[test]
fn a_deleted_row_is_retried_at_once_and_does_not_escalate() {
    let hour = Duration::from_secs(3600);
    let policy = RetryPolicy::new()
        .max_attempts(10)
        .backoff(hour, hour)
        .escalate_after(1)
        .escalate_hot_rows(1, hour);
    // The re-read finds nothing (or a new row) whenever it runs: no backoff, no
    // escalation, and the row is not hot.
    let (kinds, sleeps) = run(
        &policy,
        vec![Error::from(deleted(1)), batch(vec![deleted(1), deleted(2)])],
    );
    assert_eq!(kinds, [(false, false), (false, false), (false, false)]);
    assert_eq!(sleeps, [Duration::ZERO, Duration::ZERO]);
    assert!(!policy.hot_row_memory().expect("a memory").any_hot());

    // A deleted row still spends an attempt: the last one gives up with it.
    let once = RetryPolicy::new().max_attempts(1);
    let mut state = seeded(&once);
    state.next_attempt();
    match state.after::<()>(Err(deleted(1).into()), Duration::ZERO) {
        Step::Done(Err(Error::RetriesExhausted(exhausted))) => {
            assert!(
                exhausted
                    .last_conflict()
                    .is_some_and(ConcurrencyConflict::is_deleted)
            );
        }
        step => panic!("expected exhaustion, got {step:?}"),
    }
}

#[test]
fn two_policies_never_share_hot_rows_unless_given_one_memory() {
    let hour = Duration::from_secs(3600);
    let first = RetryPolicy::new().escalate_hot_rows(1, hour);
    let second = RetryPolicy::new().escalate_hot_rows(1, hour);
    let shared = RetryPolicy::new().escalate_hot_rows_with(
        first.hot_row_memory().expect("a memory"),
        5,
        hour,
    );
    let clone = first.clone();

    // The same table and key conflict under the first policy only.
    let (kinds, _) = run(&first, vec![stale(1).into()]);
    assert_eq!(kinds, [(false, false), (false, true)]);

    let attempt = |policy: &RetryPolicy| seeded(policy).next_attempt();
    let key = EntityKey::new(&["id"], vec!["1".into()]);
    assert!(attempt(&first).runs_in_transaction());
    assert!(
        attempt(&clone).runs_in_transaction(),
        "a clone shares the memory"
    );
    assert!(
        attempt(&shared).runs_in_transaction(),
        "so does a policy given it"
    );
    assert!(
        !attempt(&second).runs_in_transaction(),
        "another policy knows nothing of the first one's rows"
    );
    let memory = |policy: &RetryPolicy| policy.hot_row_memory().expect("a memory").clone();
    assert!(memory(&shared).is_hot_row("stock", || key.clone()));
    assert!(!memory(&second).is_hot_row("stock", || key.clone()));
    assert_eq!(first, clone);
    assert_ne!(first, second);
    // A policy without hot rows never runs an attempt in a transaction of its own.
    assert!(!attempt(&RetryPolicy::new()).runs_in_transaction());
}
