//! Support for diesel-occ's integration tests: which backends to run, a fresh database
//! per test, the test schema and statement counting.
//!
//! Backends are chosen with environment variables:
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `OCC_POSTGRES_URL` | `postgres://postgres@127.0.0.1:5432/test` | a PostgreSQL server and a database to connect to while creating per-test databases |
//! | `OCC_MYSQL_URL` | `mysql://root@127.0.0.1:3306/test` | the same for MySQL/MariaDB |
//! | `OCC_REQUIRE` | empty | comma list of `postgres`, `mysql`, `sqlite`: an unreachable required backend fails the tests instead of printing `SKIPPED` |
//!
//! SQLite always runs, on a temporary file per test.

pub mod backend;
pub mod db;
pub mod schema;
pub mod statements;

#[cfg(feature = "testcontainers")]
pub mod containers;

pub use backend::Backend;
pub use db::{AsyncTestConnection, AsyncTestDb, TestConnection, TestDb, connect_async};
