//! Inventory reservation with a client-held token. See `diesel_occ_examples::inventory`.
#![forbid(unsafe_code)]

use diesel_occ_examples::{cli::Args, inventory};

fn main() -> std::process::ExitCode {
    let args = Args::from_env("inventory", "");
    println!(
        "Inventory reservation with a client-held token, on {}",
        args.target
    );
    diesel_occ_examples::finish(inventory::walkthrough(&args.target, &mut std::io::stdout()))
}
