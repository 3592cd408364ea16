//! The hot-row combiner (`blocking::Combiner`, `asynchronous::Combiner`): the changes queued
//! while a group is written are saved as one group, a writer outside the combiner is
//! never overwritten (the group reads again and runs every change again), a group that
//! fails for good gives each caller its own error, a change that panics leaves its
//! group, and (async) a caller that goes away before its group is taken withdraws its
//! change. One scenario file for both flavours (`scenarios.rs`).

use std::pin::Pin;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender};

use diesel::ConnectionResult;
use diesel_occ_tests::{AsyncTestConnection, TestConnection, connect_async};

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

/// What the scenario files take in the blocking flavour.
pub(crate) mod blocking {
    use super::*;

    /// Waits for the first change's signal that it runs.
    pub(crate) fn until_running(running: Receiver<()>) {
        running.recv().expect("the first change runs");
    }

    /// Connects to `url` per attempt, as a caller on a thread of its own needs.
    pub(crate) fn source<C: TestConnection>(
        url: &str,
    ) -> impl Fn() -> ConnectionResult<C> + Clone + Send + Sync + 'static {
        let url = url.to_owned();
        move || {
            let mut conn = C::establish(&url)?;
            conn.configure();
            Ok(conn)
        }
    }
}

/// What the scenario files take in the async flavour.
pub(crate) mod asynchronous {
    use super::*;

    /// [`super::blocking::until_running`] off the runtime's workers: one of them is held
    /// by the change, and a timer would wait on the other.
    pub(crate) async fn until_running(running: Receiver<()>) {
        let wait = move || super::blocking::until_running(running);
        tokio::task::spawn_blocking(wait).await.unwrap();
    }

    /// A future that connects.
    type Connecting<C> = Pin<Box<dyn Future<Output = ConnectionResult<C>> + Send>>;

    /// Connects to `url` per attempt, as the combiner's writer task needs.
    pub(crate) fn source<C: AsyncTestConnection>(
        url: &str,
    ) -> impl Fn() -> Connecting<C> + Clone + Send + Sync + 'static {
        let url = url.to_owned();
        move || {
            let url = url.clone();
            Box::pin(async move { connect_async::<C>(&url).await })
        }
    }
}
