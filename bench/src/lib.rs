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
//! | [`async_support`], [`measures`] | what the async strategies share, what statement counts record |
//! | [`strategies`] | the strategies, generic over the connection ([`strategies::sql::StockSql`]), and the statements they run |
//! | [`pg`], [`mysql`], [`sqlite`] | each backend's connections, and the few statements it writes its own way |

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

/// Runs `$body` with `$db` standing for the blocking connection
/// ([`StockSql`](strategies::sql::StockSql)) of `$backend` (`pg::Conn`, `mysql::Conn`,
/// `sqlite::Conn`); without feature `mysql`, MySQL is an error. The one `match` on the backend of the code generic over it.
#[macro_export]
macro_rules! for_backend {
    ($backend:expr, $db:ident => $body:expr) => {
        match $backend {
            $crate::backend::Backend::Postgres => {
                type $db = $crate::pg::Conn;
                $body
            }
            $crate::backend::Backend::Sqlite => {
                type $db = $crate::sqlite::Conn;
                $body
            }
            #[cfg(feature = "mysql")]
            $crate::backend::Backend::Mysql => {
                type $db = $crate::mysql::Conn;
                $body
            }
            #[cfg(not(feature = "mysql"))]
            $crate::backend::Backend::Mysql => Err(String::from("MySQL needs `--features mysql`")),
        }
    };
}
