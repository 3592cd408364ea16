//! What diesel-occ reports: the spans OpenTelemetry receives through
//! `tracing-opentelemetry` (checked writes, retry loops, conflicts), `tracing` events in
//! their attempt's span, and `metrics` counters and histograms.

on_every_backend!(asynchronous_counters, scenarios);
