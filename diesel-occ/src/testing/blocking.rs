//! [`Race::run`]: one thread per writer, a barrier that a failed writer can break.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

use super::{Phase, Race, RaceReport, WriterError, panic_message};

impl Race {
    /// Runs the race on threads: writer `i` calls `read(i)`, waits until every writer
    /// has read, then calls `write(i, state)` with what it read. Returns when every
    /// writer has finished, with the outcomes in writer order.
    ///
    /// `read` is where a writer opens its connection and loads what it will change;
    /// `write` is the code under test (a checked save, a repository method). Both
    /// run on the writer's own thread, so the state need not be `Send`.
    ///
    /// No panic reaches the caller: see the [module documentation](super#panics).
    ///
    /// ```
    /// use diesel_occ::testing::Race;
    ///
    /// let report = Race::new(2).run(|i| i * 10, |i, read| read + i);
    /// assert_eq!(report.into_values().unwrap(), [0, 11]);
    /// ```
    pub fn run<S, T, R, W>(&self, read: R, write: W) -> RaceReport<T>
    where
        R: Fn(usize) -> S + Sync,
        W: Fn(usize, S) -> T + Sync,
        T: Send,
    {
        let gate = Gate::new(self.writers);
        let in_order = self.in_order;
        let outcomes = thread::scope(|scope| {
            let handles: Vec<_> = (0..self.writers)
                .map(|writer| {
                    let (read, write, gate) = (&read, &write, &gate);
                    let spawned = thread::Builder::new()
                        .name(format!("race-writer-{writer}"))
                        .spawn_scoped(scope, move || {
                            writer_thread(writer, in_order, gate, read, write)
                        });
                    spawned.map_err(|error| {
                        // This writer never reaches the barrier: release the others.
                        gate.abandon(writer);
                        WriterError::ThreadNotStarted {
                            writer,
                            reason: error.to_string(),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(writer, handle)| {
                    // The thread catches the closures' panics; a join error is a
                    // panic outside them (a payload's destructor), reported the same.
                    handle?.join().unwrap_or_else(|payload| {
                        Err(WriterError::Panicked {
                            writer,
                            phase: Phase::Write,
                            message: panic_message(&*payload),
                        })
                    })
                })
                .collect()
        });
        RaceReport { outcomes }
    }
}

/// One writer: read, meet the others, (wait for its turn,) write.
fn writer_thread<S, T>(
    writer: usize,
    in_order: bool,
    gate: &Gate,
    read: &(impl Fn(usize) -> S + Sync),
    write: &(impl Fn(usize, S) -> T + Sync),
) -> Result<T, WriterError> {
    let state = match catch_unwind(AssertUnwindSafe(|| read(writer))) {
        Ok(state) => state,
        Err(payload) => {
            gate.abandon(writer);
            return Err(WriterError::Panicked {
                writer,
                phase: Phase::Read,
                message: panic_message(&*payload),
            });
        }
    };
    if let Err(by) = gate.arrive() {
        return Err(WriterError::Abandoned { writer, by });
    }
    if in_order {
        gate.wait_for_turn(writer);
    }
    let written = catch_unwind(AssertUnwindSafe(|| write(writer, state)));
    if in_order {
        gate.pass_turn();
    }
    written.map_err(|payload| WriterError::Panicked {
        writer,
        phase: Phase::Write,
        message: panic_message(&*payload),
    })
}

/// A barrier for `expected` writers that a writer failing before it can open for
/// everyone (`std::sync::Barrier` would leave the others waiting forever), plus the
/// turn counter of [`Race::in_order`].
#[derive(Debug)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug)]
struct GateState {
    expected: usize,
    arrived: usize,
    /// The first writer that failed before the barrier.
    abandoned_by: Option<usize>,
    /// The writer whose turn it is to write, in order mode.
    turn: usize,
}

impl Gate {
    fn new(expected: usize) -> Self {
        Gate {
            state: Mutex::new(GateState {
                expected,
                arrived: 0,
                abandoned_by: None,
                turn: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        // Nothing panics while holding the lock, and its state stays consistent anyway.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, GateState>) -> MutexGuard<'a, GateState> {
        self.changed
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until every writer has arrived (`Ok`) or one failed before arriving
    /// (`Err` with its index).
    fn arrive(&self) -> Result<(), usize> {
        let mut state = self.lock();
        state.arrived = state.arrived.saturating_add(1);
        if state.arrived >= state.expected {
            self.changed.notify_all();
        }
        loop {
            if let Some(by) = state.abandoned_by {
                return Err(by);
            }
            if state.arrived >= state.expected {
                return Ok(());
            }
            state = self.wait(state);
        }
    }

    /// `writer` will never arrive: release everyone waiting, now and later.
    fn abandon(&self, writer: usize) {
        let mut state = self.lock();
        state.abandoned_by.get_or_insert(writer);
        self.changed.notify_all();
    }

    fn wait_for_turn(&self, writer: usize) {
        let mut state = self.lock();
        while state.turn != writer {
            state = self.wait(state);
        }
    }

    fn pass_turn(&self) {
        let mut state = self.lock();
        state.turn = state.turn.saturating_add(1);
        self.changed.notify_all();
    }
}
