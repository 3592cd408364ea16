//! Galera: multi-primary races, stale reads from a lagging node, the multi-host source and
//! a node killed under load in both flavours; a network partition (blocking) and a node that
//! stops answering under pessimistic locking (async) besides.

#[cfg(feature = "mysql")]
use diesel::mysql::MysqlConnection as Conn;
use diesel_async::AsyncMysqlConnection as AsyncConn;

// The scenarios take their database from `cluster_db!`, not `db!()`.
on_every_backend!(@mysql scenarios);
