//! Bounded waits on the servers: statement and lock timeouts, exhausted pools, and a
//! retry policy's deadline bounding every wait with the pools' default settings (r2d2
//! waits 30 s, deadpool without end) against a row lock another session holds for 10 s.
//! Each ends in a typed error within about the deadline, and nothing is written.

use std::time::Duration;

/// The policy's deadline.
const DEADLINE: Duration = Duration::from_millis(300);
/// How long the wait may take in the test: generous, but far below the 10 s the
/// holders keep what they hold and r2d2's 30 s.
const BOUND: Duration = Duration::from_secs(5);
/// How long a holder keeps the lock or the connection when nobody releases it.
const HELD_FOR: Duration = Duration::from_secs(10);

on_every_server!(server_counters, scenarios);
