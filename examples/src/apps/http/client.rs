//! The HTTP walkthrough: the service on an ephemeral port of 127.0.0.1, and a real
//! HTTP client going through every precondition outcome.

use std::io::Write;

use reqwest::header::{ETAG, IF_MATCH};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

use super::AsyncPool;

/// A response as the walkthrough shows it: status, ETag and the error code.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The `ETag` header, if any.
    pub etag: Option<String>,
    /// The body, parsed as JSON (`Null` when empty).
    pub body: Value,
}

impl Reply {
    fn line(&self) -> String {
        let mut line = format!("{}", self.status.as_u16());
        if let Some(code) = self.body.get("error").and_then(Value::as_str) {
            line.push_str(&format!(" {code}"));
        }
        if let Some(tag) = &self.etag {
            line.push_str(&format!(", ETag {}…\"", &tag[..tag.len().min(9)]));
        }
        line
    }
}

/// Sends one request with an optional `If-Match` and JSON body.
pub async fn send(
    client: &Client,
    method: Method,
    url: &str,
    if_match: Option<&str>,
    body: Option<Value>,
) -> reqwest::Result<Reply> {
    let mut request = client.request(method, url);
    if let Some(tag) = if_match {
        request = request.header(IF_MATCH, tag);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    let status = response.status();
    let etag = response
        .headers()
        .get(ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = response.bytes().await?;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(Reply { status, etag, body })
}

/// Starts the service on 127.0.0.1 (an ephemeral port) and walks through GET, the
/// `If-Match` outcomes, two clients with the same ETag, and a delete.
pub async fn walkthrough(pool: AsyncPool, out: &mut (dyn Write + Send)) -> crate::AppResult {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(super::serve(listener, pool));
    writeln!(out, "  serving on {base}")?;

    let client = Client::new();
    let created = send(
        &client,
        Method::POST,
        &format!("{base}/articles"),
        None,
        Some(json!({"title": "Draft", "body": "Optimistic locking, explained."})),
    )
    .await?;
    let id = created.body["id"]
        .as_str()
        .ok_or("POST returned no id")?
        .to_owned();
    let url = format!("{base}/articles/{id}");
    let mut show = |label: &str, reply: &Reply| writeln!(out, "  {label:<44} -> {}", reply.line());
    show("POST /articles", &created)?;

    let read = send(&client, Method::GET, &url, None, None).await?;
    show("GET /articles/{id}", &read)?;
    let etag = read.etag.clone().ok_or("GET returned no ETag")?;
    let edit = || Some(json!({"title": "Final", "body": "Edited."}));

    show(
        "PUT without If-Match",
        &send(&client, Method::PUT, &url, None, edit()).await?,
    )?;
    show(
        "PUT with If-Match: not-an-etag",
        &send(&client, Method::PUT, &url, Some("not-an-etag"), edit()).await?,
    )?;
    show(
        "PUT with a weak ETag W/\"…\"",
        &send(
            &client,
            Method::PUT,
            &url,
            Some(&format!("W/{etag}")),
            edit(),
        )
        .await?,
    )?;
    let put = send(&client, Method::PUT, &url, Some(&etag), edit()).await?;
    show("PUT with the ETag", &put)?;
    show(
        "PATCH with the old ETag",
        &send(
            &client,
            Method::PATCH,
            &url,
            Some(&etag),
            Some(json!({"title": "Late"})),
        )
        .await?,
    )?;

    // Two clients with the same (current) ETag: the first write wins, the second one's
    // token is stale by the time it arrives.
    let current = put.etag.clone().ok_or("PUT returned no ETag")?;
    let a = send(&client, Method::PUT, &url, Some(&current), edit()).await?;
    show("two clients, same ETag: client A PUTs", &a)?;
    let b = send(&client, Method::PUT, &url, Some(&current), edit()).await?;
    show("                        client B PUTs", &b)?;

    let now = send(&client, Method::GET, &url, None, None).await?;
    let latest = now.etag.clone().ok_or("GET returned no ETag")?;
    show(
        "DELETE with the current ETag",
        &send(&client, Method::DELETE, &url, Some(&latest), None).await?,
    )?;
    show(
        "GET after the delete",
        &send(&client, Method::GET, &url, None, None).await?,
    )?;
    show(
        "DELETE again with that ETag",
        &send(&client, Method::DELETE, &url, Some(&latest), None).await?,
    )?;
    server.abort();
    Ok(())
}
