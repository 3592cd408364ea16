//! The axum CRUD service where the token is the ETag (`src/apps/http/`).
//!
//! Runs the walkthrough against itself, then serves on `--listen` (default
//! 127.0.0.1:3000) until Ctrl-C; `--serve false` stops after the walkthrough.
#![forbid(unsafe_code)]

use diesel_occ_examples::cli::Args;
use diesel_occ_examples::target::Target;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::from_env("http", " [--listen ADDR] [--serve true|false]");
    println!("HTTP API where the token is the ETag, on {}", args.target);
    diesel_occ_examples::finish(run(&args).await)
}

async fn run(args: &Args) -> diesel_occ_examples::AppResult {
    let listen: String = args.get("listen", "127.0.0.1:3000".to_owned());
    let serve = args.get("serve", true);
    match &args.target {
        Target::Sqlite(path) => {
            let path = path.to_str().ok_or("the SQLite path is not UTF-8")?;
            diesel_occ_examples::sqlite::demo::serve_http(path, &listen, serve).await
        }
        Target::Postgres(url) => {
            diesel_occ_examples::postgres::demo::serve_http(url, &listen, serve).await
        }
        #[cfg(feature = "mysql")]
        Target::Mysql(url) => {
            diesel_occ_examples::mysql::demo::serve_http(url, &listen, serve).await
        }
        #[cfg(not(feature = "mysql"))]
        Target::Mysql(_) => Err(diesel_occ_examples::target::MysqlNotBuilt.into()),
    }
}
