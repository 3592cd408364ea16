//! The library part of diesel-occ's benchmarks, shared by the three binaries:
//! `diesel-occ-bench` (the paired rounds of the reservation workload, `--hot-key`,
//! `--batch`), `bench-scale` (Galera and the PostgreSQL standby) and `bench-http` (the
//! example HTTP service under load).
//!
//! Where to find things, from the bottom up:
//!
//! | module | what it holds |
//! |---|---|
//! | [`stats`], [`abba`], [`summary`], [`cli`] | medians and percentiles, the ABBA rounds' statistic and verdict, the printed summary, the shared command-line options |
//! | [`backend`], [`model`], [`strategy`] | the databases, the table and entity, the strategies and their retry settings |
//! | [`harness`], [`outcome`], [`row`], [`cpu`] | worker threads and their tallies, what one reservation ended with, one run's results, CPU probes |
//! | [`async_setup`], [`async_support`], [`measures`] | how the async strategy is set up, what it shares, what statement counts record |
//! | [`strategies`] | the strategies, generic over the connection, and the statements they run |
//! | [`database`] | the [`Database`](database::Database) trait: how the generic code connects to a backend |
//! | [`pg`], [`mysql`], [`sqlite`] | each backend's connections, and the few statements it writes its own way |

pub mod abba;
pub mod async_setup;
pub mod async_support;
pub mod backend;
pub mod cli;
pub mod cpu;
pub mod database;
pub mod harness;
pub mod measures;
pub mod model;
#[cfg(feature = "mysql")]
pub mod mysql;
pub mod outcome;
pub mod pg;
pub mod row;
pub mod sqlite;
pub mod stats;
pub mod strategies;
pub mod strategy;
pub mod summary;
