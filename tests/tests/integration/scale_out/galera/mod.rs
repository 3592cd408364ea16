//! Galera: multi-primary races, stale reads from a lagging node, the multi-host source
//! and a node killed under load, in both flavours (`scenarios.rs`; the blocking one
//! needs feature `mysql`), with a network partition (blocking) and a node that stops
//! answering under pessimistic locking (async) besides.

mod common;

#[cfg(feature = "mysql")]
use diesel::mysql::MysqlConnection as Conn;
use diesel_async::AsyncMysqlConnection as AsyncConn;

// `scenarios.rs` as modules `blocking` and `asynchronous`, as a subject's on the MySQL
// backend; the scenarios take their database from `galera_db!`, not `db!()`.
on_every_backend!(@mysql scenarios);
