//! Galera: multi-primary races, stale reads from a lagging node, the multi-host source
//! and a node killed under load, blocking (`blocking.rs`, feature `mysql`) and async
//! (`asynchronous.rs`).

mod common;

#[cfg(feature = "mysql")]
mod blocking;

mod asynchronous;
