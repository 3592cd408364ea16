//! PostgreSQL with a streaming standby: a standby read is stale while its replay is
//! paused, and reads from that stale standby with checked saves on the primary
//! (`retry_with_standby`) lose no update, blocking (`blocking.rs`) and async
//! (`asynchronous.rs`); and a failover (the primary SIGKILLed, the standby promoted)
//! per token kind, with an asynchronous and a synchronous standby (`failover.rs`,
//! blocking: the guarantee is the database's and the token kind's, not the flavour's).

mod common;
mod failover;

mod asynchronous;
mod blocking;
