//! What the asynchronous strategies use on every backend: the statement counter, the
//! helper's backoff pause and the hand-written reservations' retry loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use diesel_occ::retry::RetryPolicy;

use crate::harness::OpResult;

/// Counts every statement `conn` starts into `counter` (Diesel's instrumentation).
pub fn count_statements(conn: &mut impl diesel_async::AsyncConnection, counter: &Arc<AtomicU64>) {
    use diesel::connection::InstrumentationEvent;
    let counter = Arc::clone(counter);
    conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
        if let InstrumentationEvent::StartQuery { .. } = event {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// One reservation's future.
pub type BoxedOp<'s> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<OpResult, String>> + Send + 's>>;

/// The async helper's backoff sleep, as diesel-occ's `asynchronous::retry::pause` does
/// it: below the timer's 1 ms tick, `thread::sleep` on the runtime's blocking pool.
pub async fn pause(backoff: std::time::Duration) {
    const TICK: std::time::Duration = std::time::Duration::from_millis(1);
    if backoff >= TICK {
        tokio::time::sleep(backoff - TICK / 2).await;
    } else {
        // A failed join only means the pause was cut short.
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(backoff)).await;
    }
}

/// One attempt of a hand-written async reservation: `Some(committed)` ends the
/// operation, `None` is an optimistic miss (the checked write matched no row); an
/// error ends it too, unretried.
pub type AttemptResult = Result<Option<bool>, String>;

/// The retry loop of the hand-written async reservations (`handwritten-async`, the
/// sqlx peer): the policy's attempts, and before each retry the async helper's
/// jittered backoff ([`pause`]). Each call of `attempt` makes one attempt.
pub async fn retry_misses<F, Fut>(policy: &RetryPolicy, mut attempt: F) -> Result<OpResult, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = AttemptResult>,
{
    let mut op = OpResult::default();
    for number in 1..=policy.attempt_limit() {
        if number > 1 {
            op.retries += 1;
            let ceiling = policy.backoff_ceiling(number - 1);
            // Full jitter from the thread's generator, as the helper draws it.
            pause(ceiling.mul_f64(fastrand::f64())).await;
        }
        match attempt().await? {
            Some(committed) => {
                op.committed = committed;
                return Ok(op);
            }
            None => op.conflicts += 1,
        }
    }
    Ok(op)
}
