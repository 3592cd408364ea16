//! PostgreSQL with a streaming standby: a paused standby reads stale, and reads from it with
//! checked saves on the primary (`retry_with_standby`) lose no update, in both flavours; a
//! failover per token kind, with an asynchronous and a synchronous standby (`failover.rs`,
//! blocking: the guarantee is the database's and the token kind's, not the flavour's).

mod failover;

use diesel::pg::PgConnection as Conn;
use diesel_async::AsyncPgConnection as AsyncConn;

// The scenarios take their database from `cluster_db!`, not `db!()`.
on_every_backend!(@file scenarios);
