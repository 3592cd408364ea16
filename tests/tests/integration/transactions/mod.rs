//! Transactions around checked writes:
//!
//! - a save inside a transaction that rolls back never leaves the entity able to match
//!   another writer's row (every token kind: i16, i32, i64, UUID, timestamp);
//! - a conflict met inside a REPEATABLE READ or SERIALIZABLE transaction reports the
//!   row's real current token, or a transient error, never the snapshot's token;
//! - a write that matched nothing although the row holds the expected token (a trigger
//!   skipped it) is reported as such, not as a stale token, and is not retried.
//! - a panic inside the closure rolls the transaction back before it resumes and leaves
//!   the connection usable outside any transaction (async: unless the closure left a
//!   diesel-async transaction of its own open, which marks the connection broken);
//! - a batch future dropped while its transaction is open leaves the connection visibly
//!   broken: later saves on it fail instead of returning `Ok` inside a transaction that
//!   will never commit (SQLite's case in [`sqlite_cancelled_batch`]).

mod sqlite_cancelled_batch;

on_every_backend!(entities, scenarios);
