//! The axum CRUD service where the token is the ETag. See `diesel_occ_examples::http`.
//!
//! Runs the walkthrough against itself, then serves on `--listen` (default
//! 127.0.0.1:3000) until Ctrl-C; `--serve false` stops after the walkthrough.
#![forbid(unsafe_code)]

use diesel_occ_examples::cli::Args;
use diesel_occ_examples::http::{self, ArticleStore, client};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::from_env("http", " [--listen ADDR] [--serve true|false]");
    diesel_occ_examples::finish(run(&args).await)
}

async fn run(args: &Args) -> diesel_occ_examples::AppResult {
    let listen: String = args.get("listen", "127.0.0.1:3000".to_owned());
    println!("HTTP API where the token is the ETag, on {}", args.target);
    client::walkthrough(&args.target, &mut std::io::stdout()).await?;
    if !args.get("serve", true) {
        return Ok(());
    }
    let store = ArticleStore::open(&args.target, 8).await?;
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    let base = format!("http://{}", listener.local_addr()?);
    println!("\nserving on {base} (Ctrl-C to stop). Try:");
    println!(
        "  curl -si -X POST {base}/articles -H 'content-type: application/json' -d '{{\"title\":\"Hi\",\"body\":\"...\"}}'"
    );
    println!("  curl -si {base}/articles/<id>");
    println!(
        "  curl -si -X PUT {base}/articles/<id> -H 'If-Match: \"<token>\"' -H 'content-type: application/json' -d '{{\"title\":\"New\",\"body\":\"...\"}}'"
    );
    tokio::select! {
        served = http::serve(listener, store) => served?,
        _ = tokio::signal::ctrl_c() => println!("stopped"),
    }
    Ok(())
}
