//! PostgreSQL with a streaming standby: a standby read is stale while its replay is
//! paused, and reads from that stale standby with checked saves on the primary
//! (`retry_with_standby`) lose no update, blocking (`blocking.rs`) and async
//! (`asynchronous.rs`).

mod common;

mod asynchronous;
mod blocking;
