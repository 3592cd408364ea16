//! Work claims by competing workers, with leases and fencing tokens. See
//! `diesel_occ_examples::claims`.
#![forbid(unsafe_code)]

use diesel_occ_examples::{claims, cli::Args};

fn main() -> std::process::ExitCode {
    let args = Args::from_env("claims", " [--workers N] [--items M]");
    let workers = args.get("workers", 4_usize).max(1);
    let items = args.get("items", 6_i32).max(1);
    println!("Work claims by competing workers, on {}", args.target);
    diesel_occ_examples::finish(claims::walkthrough(
        &args.target,
        workers,
        items,
        &mut std::io::stdout(),
    ))
}
