//! The library part of diesel-occ's benchmarks, under the `diesel-occ-bench` binary's
//! subcommands.
//!
//! Where to find things, from the bottom up:
//!
//! | module | what it holds |
//! |---|---|
//! | [`stats`], [`summary`], [`cli`] | medians, percentiles and bootstrap intervals, the printed summary, the shared command-line options |
//! | [`backend`], [`model`], [`strategy`] | the databases, the table and entity, the strategies and their retry settings |
//! | [`harness`], [`outcome`], [`row`], [`cpu`] | worker threads and their tallies, what one reservation ended with, one run's results, CPU probes |
//! | [`async_setup`], [`async_support`], [`measures`] | how the async strategy is set up (the recommended setup, or by hand), what it shares, what statement counts record |
//! | [`strategies`] | the strategies, generic over the connection ([`strategies::database`]), and the statements they run |
//! | [`pg`], [`mysql`], [`sqlite`] | each backend's connections, and the few statements it writes its own way |

pub mod async_setup;
pub mod async_support;
pub mod backend;
pub mod cli;
pub mod cpu;
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
