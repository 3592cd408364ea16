//! Cancellation: async saves and retries dropped at any point leave whole rows, free
//! locks and a pool whose connections are in step with their servers.

on_every_backend!(asynchronous_counters, asynchronous);
