//! Bounded polls: wait until the server (or another thread) has reached a state, such as
//! a session blocked on a row lock, and fail with a message naming what never happened
//! instead of hanging the test run.
//!
//! For states the test can only observe, not be told about. Where the test controls
//! both sides, a barrier says it better.

use std::time::{Duration, Instant};

/// How often a condition is checked: short next to any wait worth polling for, long
/// enough not to load a server that is busy with the very work being waited on.
const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// How long a test waits for a state that, when all is well, comes within milliseconds
/// (a session blocked on a lock, a killed session gone, a change queued): generous, for
/// a loaded CI machine, and still a bound.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Calls `check` every few milliseconds until it returns `true`.
///
/// # Panics
///
/// After `timeout`, with "timed out after {timeout} waiting for {what}": name `what` as
/// the state awaited, e.g. "the save to wait for row 2's lock".
pub fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// [`wait_until`] for async code: `check` may await (a query on an async connection),
/// the wait sleeps on Tokio's timer so other tasks run meanwhile, and the timeout also
/// cuts a `check` that never returns.
///
/// # Panics
///
/// After `timeout`, as [`wait_until`].
pub async fn wait_until_async(what: &str, timeout: Duration, mut check: impl AsyncFnMut() -> bool) {
    let polled = async {
        while !check().await {
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    };
    if tokio::time::timeout(timeout, polled).await.is_err() {
        panic!("timed out after {timeout:?} waiting for {what}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_once_the_condition_holds() {
        let mut calls = 0;
        wait_until("the third call", Duration::from_secs(5), || {
            calls += 1;
            calls == 3
        });
        assert_eq!(calls, 3);
    }

    #[test]
    #[should_panic(expected = "waiting for a condition that never holds")]
    fn panics_naming_what_never_happened() {
        wait_until(
            "a condition that never holds",
            Duration::from_millis(20),
            || false,
        );
    }
}
