//! Every app, one after the other, on one database: what the `demo` binary runs.

use std::io::Write;

use super::{async_pool, claims, http, inventory, migrate, pool, seat, tracked};

/// Migrates the database at `url`, then runs every app's walkthrough on it.
pub fn run(url: &str, out: &mut (dyn Write + Send)) -> crate::AppResult {
    migrate(url)?;
    let pool = pool(url, 16)?;

    writeln!(out, "1. Inventory reservation with a client-held token")?;
    inventory::walkthrough(&pool, out)?;
    writeln!(out, "\n2. The last concert seat")?;
    seat::walkthrough(&pool, 4, out)?;
    writeln!(out, "\n3. Work claims by competing workers")?;
    claims::walkthrough(&pool, 4, 6, out)?;
    writeln!(
        out,
        "\n4. A tracked save, and a merge when two editors overlap"
    )?;
    tracked::walkthrough(&pool, out)?;
    writeln!(out, "\n5. The HTTP API where the token is the ETag")?;
    let async_pool = async_pool(url, 4)?;
    tokio::runtime::Runtime::new()?.block_on(http::client::walkthrough(async_pool, out))
}

/// What the `http` binary runs: migrates, walks through the API on a server of its own,
/// then, when `keep_serving`, serves on `listen` until Ctrl-C.
pub async fn serve_http(url: &str, listen: &str, keep_serving: bool) -> crate::AppResult {
    tokio::task::block_in_place(|| migrate(url))?;
    http::client::walkthrough(async_pool(url, 4)?, &mut std::io::stdout()).await?;
    if !keep_serving {
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(listen).await?;
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
        served = http::serve(listener, async_pool(url, 8)?) => served?,
        _ = tokio::signal::ctrl_c() => println!("stopped"),
    }
    Ok(())
}
