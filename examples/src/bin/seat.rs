//! The last concert seat: N buyers, one seat. See `diesel_occ_examples::seat`.
#![forbid(unsafe_code)]

use diesel_occ_examples::{cli::Args, seat};

fn main() -> std::process::ExitCode {
    let args = Args::from_env("seat", " [--buyers N]");
    let buyers = args.get("buyers", 4_usize).max(1);
    println!("The last concert seat, on {}", args.target);
    diesel_occ_examples::finish(seat::walkthrough(
        &args.target,
        buyers,
        &mut std::io::stdout(),
    ))
}
