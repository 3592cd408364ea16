//! The README's main command: every scenario, on an embedded SQLite file by default.
//!
//! `cargo run -p diesel-occ-examples --bin demo [-- --database-url URL]`
#![forbid(unsafe_code)]

use diesel_occ_examples::{claims, cli::Args, http, inventory, seat};

fn main() -> std::process::ExitCode {
    let args = Args::from_env("demo", "");
    diesel_occ_examples::finish(run(&args))
}

fn run(args: &Args) -> diesel_occ_examples::AppResult {
    let out = &mut std::io::stdout();
    let target = &args.target;
    // Connecting and migrating first makes a bad URL fail before any heading.
    let conn = target.connect_and_migrate()?;
    println!("diesel-occ demo on {target} (migrated)\n");
    drop(conn);

    println!("1. Inventory reservation with a client-held token");
    inventory::walkthrough(target, out)?;
    println!("\n2. The last concert seat");
    seat::walkthrough(target, 4, out)?;
    println!("\n3. Work claims by competing workers");
    claims::walkthrough(target, 4, 6, out)?;
    println!("\n4. The HTTP API where the token is the ETag");
    tokio::runtime::Runtime::new()?.block_on(http::client::walkthrough(target, out))?;
    println!(
        "\n(cargo run -p diesel-occ-examples --bin http keeps the API running; see examples/README.md)"
    );
    Ok(())
}
