//! What the blocking and the async combiner share: the rows being written, each with its
//! queue of changes, and a queued change with where it stands.

use std::any::Any;
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::{EntityKey, Error};
use crate::versioned::Versioned;

/// The rows some caller is writing, by key. A row is made by the first caller and
/// forgotten by the last one to let it go, so that rows nobody writes take no memory.
pub(crate) struct Rows<T> {
    map: Mutex<HashMap<EntityKey, Arc<Row<T>>>>,
}

impl<T: Versioned> Rows<T> {
    pub(crate) fn new() -> Self {
        Rows {
            map: Mutex::new(HashMap::new()),
        }
    }

    /// The row's queue, made when nobody writes the row.
    pub(crate) fn take(&self, key: &T::Key) -> Arc<Row<T>> {
        Arc::clone(lock(&self.map).entry(T::entity_key(key)).or_default())
    }

    /// Lets the row go; the last holder of an idle row forgets it.
    pub(crate) fn release(&self, key: &T::Key, row: Arc<Row<T>>) {
        let mut map = lock(&self.map);
        // Every holder takes and lets go under this lock, so the last one sees 2: the
        // map's handle and its own.
        if Arc::strong_count(&row) == 2 && row.is_idle() {
            map.remove(&T::entity_key(key));
        }
        drop(row);
    }

    /// How many changes to the row wait for the group being written.
    pub(crate) fn waiting(&self, key: &T::Key) -> usize {
        lock(&self.map)
            .get(&T::entity_key(key))
            .map_or(0, |row| lock(&row.queue).waiting.len())
    }

    /// How many rows are remembered.
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }
}

/// The changes waiting to be written to one row, and whether a group of it is being
/// written.
pub(crate) struct Row<T> {
    pub(crate) queue: Mutex<Queue<T>>,
}

pub(crate) struct Queue<T> {
    /// The changes queued for the next group.
    pub(crate) waiting: Vec<Arc<dyn Member<T>>>,
    /// A group is being written: a change queued now waits for it.
    pub(crate) writing: bool,
}

impl<T> Default for Row<T> {
    fn default() -> Self {
        Row {
            queue: Mutex::new(Queue {
                waiting: Vec::new(),
                writing: false,
            }),
        }
    }
}

impl<T> Row<T> {
    fn is_idle(&self) -> bool {
        let queue = lock(&self.queue);
        !queue.writing && queue.waiting.is_empty()
    }
}

/// A queued change, whatever its closure and result types.
pub(crate) trait Member<T>: Send + Sync {
    /// Runs the change on `row`, keeping its output; false (the row as before, the
    /// caller told) when it panicked.
    fn run(&self, row: &mut T) -> bool;

    /// Where the change stands.
    fn mark(&self) -> &Mark;
}

/// A caller's change, its output and where it stands.
pub(crate) struct Pending<F, R> {
    pub(crate) change: Mutex<F>,
    pub(crate) output: Mutex<Option<R>>,
    pub(crate) mark: Mark,
}

impl<F, R> Pending<F, R> {
    pub(crate) fn new(change: F) -> Self {
        Pending {
            change: Mutex::new(change),
            output: Mutex::new(None),
            mark: Mark::default(),
        }
    }
}

impl<T, F, R> Member<T> for Pending<F, R>
where
    T: Clone,
    F: FnMut(&mut T) -> R + Send,
    R: Send,
{
    fn run(&self, row: &mut T) -> bool {
        let before = row.clone();
        let mut change = lock(&self.change);
        match panic::catch_unwind(AssertUnwindSafe(|| (*change)(row))) {
            Ok(output) => {
                *lock(&self.output) = Some(output);
                true
            }
            Err(payload) => {
                *row = before;
                self.mark.finish(Finished::Panicked(payload));
                false
            }
        }
    }

    fn mark(&self) -> &Mark {
        &self.mark
    }
}

/// Where a queued change stands, and its caller's wake-up (a thread's or a task's).
#[derive(Default)]
pub(crate) struct Mark {
    state: Mutex<State>,
    changed: Condvar,
    #[cfg(feature = "async")]
    notify: tokio::sync::Notify,
}

#[derive(Default)]
pub(crate) enum State {
    /// In the queue or in a group being written.
    #[default]
    Queued,
    /// Its caller leads the next group (the blocking combiner).
    Lead,
    Finished(Finished),
}

/// What became of a change.
pub(crate) enum Finished {
    /// Its group was saved (or needed no save): the output is the change's.
    Done,
    /// Its group failed for good: the error, for the caller whose change it was.
    Failed(Error),
    /// Its group failed for good, with other changes in it, and wrote nothing: run it
    /// alone, for its own result.
    Alone,
    /// The change panicked: the panic, to resume in the caller.
    Panicked(Box<dyn Any + Send>),
}

impl Mark {
    /// Sets the state and wakes the caller.
    pub(crate) fn set(&self, state: State) {
        *lock(&self.state) = state;
        self.changed.notify_one();
        #[cfg(feature = "async")]
        self.notify.notify_one();
    }

    pub(crate) fn finish(&self, finished: Finished) {
        self.set(State::Finished(finished));
    }

    /// Waits until the change is finished (`Some`) or its caller is handed the lead.
    pub(crate) fn wait_turn(&self) -> Option<Finished> {
        let mut state = lock(&self.state);
        loop {
            match std::mem::take(&mut *state) {
                State::Queued => {}
                State::Lead => return None,
                State::Finished(finished) => return Some(finished),
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Waits, without blocking the thread, until the change is finished.
    #[cfg(feature = "async")]
    pub(crate) async fn finished_async(&self) -> Finished {
        loop {
            if let State::Finished(finished) = std::mem::take(&mut *lock(&self.state)) {
                return finished;
            }
            // `notify_one` keeps a permit when nobody waits yet, so a change finished
            // between the check and this wait is not missed.
            self.notify.notified().await;
        }
    }

    /// What became of the change of a caller that led its group. Its group published
    /// it before the lead ended; were it not there, the change runs alone.
    pub(crate) fn finished(&self) -> Finished {
        match std::mem::take(&mut *lock(&self.state)) {
            State::Finished(finished) => finished,
            State::Queued | State::Lead => Finished::Alone,
        }
    }

    pub(crate) fn is_queued(&self) -> bool {
        matches!(*lock(&self.state), State::Queued)
    }
}

/// Publishes what became of a group's changes: `Done` after a save; after an unknown
/// outcome, that error for every change (none may run again: it may be in the row);
/// after another error, which wrote nothing, that error for the change of a group of
/// one, and for a bigger group a run alone for each change (the error may be another
/// change's). A change that panicked was told already.
pub(crate) fn publish<T>(group: &mut Vec<Arc<dyn Member<T>>>, result: Result<(), Error>) {
    let queued: Vec<_> = group
        .drain(..)
        .filter(|member| member.mark().is_queued())
        .collect();
    match result {
        Ok(()) => finish_all(&queued, || Finished::Done),
        Err(Error::OutcomeUnknown) => {
            finish_all(&queued, || Finished::Failed(Error::OutcomeUnknown));
        }
        Err(error) => match queued.as_slice() {
            [only] => only.mark().finish(Finished::Failed(error)),
            _ => finish_all(&queued, || Finished::Alone),
        },
    }
}

fn finish_all<T>(members: &[Arc<dyn Member<T>>], finished: impl Fn() -> Finished) {
    for member in members {
        member.mark().finish(finished());
    }
}

pub(crate) fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
