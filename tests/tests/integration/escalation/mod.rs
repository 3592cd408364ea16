//! Escalation: after a conflict the retry helper's next attempt holds the row lock, a
//! row that conflicted is locked from the first read of later operations, and an
//! attempt that fails leaves nothing written.

on_every_backend!(asynchronous_counters, asynchronous);
