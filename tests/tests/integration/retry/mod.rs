//! The retry helpers on real servers: a fresh connection per attempt, exhaustion after
//! exactly N, deadlines, the hot row and an attempt's atomicity (escalation has a subject
//! of its own). One scenario file for both flavours (`scenarios.rs`).

on_every_backend!(asynchronous_counters, scenarios);
