//! The guide's recipe for adding a token column to tables that hold rows
//! (`migrations/adopt/<backend>/`), applied on every backend, then `SchemaCheck` and a
//! `find` + `save_checked` on a backfilled row of each table (see
//! `diesel_occ_tests::adopt`). CI runs it:
//!
//! ```text
//! OCC_REQUIRE=postgres,mysql,sqlite cargo run -p diesel-occ-tests --features mysql --bin adopt_migrations
//! ```
//!
//! Prints a line per backend and table and exits with 1 on the first failure of a
//! backend (the other backends still run). Servers come from `OCC_POSTGRES_URL` /
//! `OCC_MYSQL_URL` as for the tests; each backend runs in a fresh database that is
//! dropped afterwards, so runs repeat.

use std::process::ExitCode;

use diesel_occ_tests::Backend;
use diesel_occ_tests::adopt;

fn main() -> ExitCode {
    let mut failed = false;
    for backend in Backend::ALL {
        match adopt::run(backend) {
            Ok(Some(lines)) => lines.iter().for_each(|line| println!("{line}")),
            Ok(None) => println!("{backend}: SKIPPED (server unreachable, not required)"),
            Err((lines, error)) => {
                lines.iter().for_each(|line| println!("{line}"));
                println!("{backend}: FAILED: {error}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
