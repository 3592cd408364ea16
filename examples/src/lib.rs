//! The example apps of [diesel-occ](diesel_occ): the scenarios of the project's seeds,
//! runnable on SQLite (embedded, the default), PostgreSQL and MySQL/MariaDB.
//!
//! | module | scenario | binary |
//! |---|---|---|
//! | [`inventory`] | a reservation with a client-held token | `inventory` |
//! | [`seat`] | N buyers, one concert seat | `seat` |
//! | [`claims`] | competing workers, leases and fencing tokens | `claims` |
//! | [`http`] | an axum CRUD API where the token is the ETag | `http` |
//!
//! `cargo run -p diesel-occ-examples --bin demo` walks through all of them. The scenario
//! logic lives here so the binaries stay thin and the integration tests
//! (`tests/tests/examples`) run the same code on every backend.
#![forbid(unsafe_code)]

pub mod claims;
pub mod cli;
pub mod db;
pub mod http;
pub mod inventory;
pub mod schema;
pub mod seat;

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
