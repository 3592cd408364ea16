//! Bounded waits: statement and lock timeouts, exhausted pools, and a policy's deadline bounding
//! every wait under the pools' defaults (r2d2 waits 30 s, deadpool forever) against a row lock
//! held for 10 s. Each ends in a typed error within about the deadline, writing nothing.

use std::time::Duration;

/// The policy's deadline.
const DEADLINE: Duration = Duration::from_millis(300);
/// How long the wait may take: generous, but far below `HELD_FOR` and r2d2's 30 s.
const BOUND: Duration = Duration::from_secs(5);
/// How long a holder keeps the lock or the connection when nobody releases it.
const HELD_FOR: Duration = Duration::from_secs(10);

on_every_server!(server_counters, scenarios);
