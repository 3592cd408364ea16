//! The example apps of [diesel-occ](diesel_occ), runnable on SQLite (embedded, the default),
//! PostgreSQL and MySQL/MariaDB.
//!
//! | module | scenario |
//! |---|---|
//! | `inventory` | a reservation with a client-held token |
//! | `seat` | N buyers, one concert seat, booked through `blocking::retry` |
//! | `claims` | competing workers, leases and fencing tokens |
//! | `tracked` | a tracked save of the edited columns, and a three-way merge on conflict |
//! | `http` | an axum CRUD API where the token is the ETag, on `diesel-occ-axum`, with `/metrics` |
//!
//! Each app is written once, in `src/apps/`, for one connection type `Conn` (and
//! `AsyncConn` for the HTTP service), the way an application is written for its
//! database. [`sqlite`], [`postgres`] and `mysql` (feature `mysql`) compile those files
//! for their own connection types, so `sqlite::seat::book` and `postgres::seat::book`
//! are the same code. The `demo` binary runs every app on SQLite unless given a URL;
//! the integration tests (`tests/tests/integration/example_apps`) run them on all three backends.
//!
//! Every app reads its versioned rows and writes them through the generic
//! [`repository::Repository`] (the HTTP service through [`repository::AsyncRepository`]):
//! creates are checked inserts from a form without the token, updates checked writes.
#![forbid(unsafe_code)]

pub mod cli;
pub mod metrics;
#[cfg(feature = "mysql")]
pub mod mysql;
pub mod postgres;
pub mod repository;
pub mod schema;
pub mod sqlite;
pub mod target;

/// What an app's walkthrough returns.
pub type AppResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Ends an app: exit code 0, or the error on stderr and exit code 1.
pub fn finish(result: AppResult) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
