//! The hot-row combiner (`blocking::Combiner`, `asynchronous::Combiner`): the changes queued
//! while a group is written are saved as one group, a writer outside the combiner is
//! never overwritten (the group reads again and runs every change again), a group that
//! fails for good gives each caller its own error, a change that panics leaves its
//! group, and (async) a caller that goes away before its group is taken withdraws its
//! change. One scenario file for both flavours (`scenarios.rs`).

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender};

use diesel_occ_tests::entities::Counter;

on_every_backend!(scenarios);

mod lost_answers;

/// The change every caller makes: one more, and the value it left.
fn increment(counter: &mut Counter) -> i32 {
    counter.value += 1;
    counter.value
}

/// `change`, whose first run says it is running and waits to be let go: it holds its
/// group open while the test queues the next ones.
fn gated<E>(
    running: Sender<()>,
    go: Receiver<()>,
    mut change: impl FnMut(&mut E) -> i32 + Send + 'static,
) -> impl FnMut(&mut E) -> i32 + Send + 'static {
    let gate = Mutex::new(Some((running, go)));
    move |entity| {
        if let Some((running, go)) = gate.lock().unwrap().take() {
            running.send(()).unwrap();
            go.recv().unwrap();
        }
        change(entity)
    }
}

/// Waits for the first change's signal that it runs.
fn until_running(running: Receiver<()>) {
    running.recv().expect("the first change runs");
}

/// [`until_running`] off the runtime's workers: one of them is held by the change, and
/// a timer would wait on the other.
async fn until_running_async(running: Receiver<()>) {
    tokio::task::spawn_blocking(move || until_running(running))
        .await
        .unwrap();
}
