//! The retry helpers on real servers: a fresh connection per attempt, exhaustion after
//! exactly N, deadlines, the hot row and an attempt's atomicity (escalation has a subject
//! of its own).
//!
//! `scenarios.rs` holds what both flavours must do alike (an attempt's atomicity, the
//! caller's transaction, batches and deletions); `blocking.rs` (r2d2) and
//! `asynchronous.rs` (deadpool, spawned tasks) what their pools and runtimes make
//! different.

on_every_backend!(
    asynchronous_counters,
    scenarios,
    blocking_only,
    asynchronous_only
);
