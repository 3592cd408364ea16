//! Forced interleavings: writers that have all read before any of them writes.

use std::sync::Barrier;
use std::thread;

/// Runs `writers` threads. Thread `i` calls `read(i)` (open a connection, load the
/// row), waits until every thread has read, then calls `write(i, state)`. Returns the
/// outcomes in writer order.
///
/// The barrier, not timing, makes every writer work from the same state.
pub fn after_all_read<S, T>(
    writers: usize,
    read: impl Fn(usize) -> S + Sync,
    write: impl Fn(usize, S) -> T + Sync,
) -> Vec<T>
where
    S: Send,
    T: Send,
{
    let barrier = Barrier::new(writers);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let (read, write, barrier) = (&read, &write, &barrier);
                scope.spawn(move || {
                    let state = read(i);
                    barrier.wait();
                    write(i, state)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a writer panicked"))
            .collect()
    })
}
