//! Sessions killed during a retry attempt: before the write or the commit, after a committed
//! save, between attempts. The helper reports the write or leaves the row as it was, and a
//! pooled session that died is replaced.
//!
//! Every fault is placed by a barrier inside the attempt, never by timing; after every fault the
//! row is read back on a new connection. See RELIABILITY.md for what each test shows.

on_every_server!(server_counters, scenarios);
