//! The README's main command: every scenario, on an embedded SQLite file by default.
//!
//! `cargo run -p diesel-occ-examples --bin demo [-- --database-url URL]`
#![forbid(unsafe_code)]

use diesel_occ_examples::cli::Args;
use diesel_occ_examples::target::Target;

fn main() -> std::process::ExitCode {
    let args = Args::from_env("demo", "");
    println!("diesel-occ demo on {}\n", args.target);
    diesel_occ_examples::finish(run(&args.target))
}

fn run(target: &Target) -> diesel_occ_examples::AppResult {
    let out = &mut std::io::stdout();
    match target {
        Target::Sqlite(path) => {
            let path = path.to_str().ok_or("the SQLite path is not UTF-8")?;
            diesel_occ_examples::sqlite::demo::run(path, out)?;
        }
        Target::Postgres(url) => diesel_occ_examples::postgres::demo::run(url, out)?,
        #[cfg(feature = "mysql")]
        Target::Mysql(url) => diesel_occ_examples::mysql::demo::run(url, out)?,
        #[cfg(not(feature = "mysql"))]
        Target::Mysql(_) => return Err(diesel_occ_examples::target::MysqlNotBuilt.into()),
    }
    println!(
        "\n(cargo run -p diesel-occ-examples --bin http keeps the API running; see examples/README.md)"
    );
    Ok(())
}
