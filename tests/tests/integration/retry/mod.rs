//! The retry helpers on real servers: a fresh connection per attempt, exhaustion after
//! exactly N, deadlines, the hot row, escalation and an attempt's atomicity.

on_every_backend!(blocking);
