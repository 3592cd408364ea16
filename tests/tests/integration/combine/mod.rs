//! The hot-row combiner (`blocking::Combiner`, `asynchronous::Combiner`): the changes queued
//! while a group is written are saved as one group, a writer outside the combiner is
//! never overwritten (the group reads again and runs every change again), a group that
//! fails for good gives each caller its own error, a change that panics leaves its
//! group, and (async) a caller that goes away before its group is taken withdraws its
//! change. One scenario file for both flavours (`scenarios.rs`).

on_every_backend!(scenarios);

mod lost_answers;
