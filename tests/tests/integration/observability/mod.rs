//! What diesel-occ reports while it retries: `tracing` events in their attempt's span
//! and `metrics` counters.

on_every_backend!(asynchronous_counters, asynchronous);
