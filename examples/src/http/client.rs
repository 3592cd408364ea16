//! The HTTP walkthrough: the service on an ephemeral port of 127.0.0.1, and a real
//! HTTP client going through every precondition outcome.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::header::{ETAG, IF_MATCH};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

use super::store::{ArticleStore, BeforeSave};
use crate::db::Target;

/// A gate for writes: while armed, every write waits at the save until `parties`
/// writes are there, then they all go at once.
#[derive(Debug)]
pub struct SaveGate {
    armed: AtomicBool,
    barrier: tokio::sync::Barrier,
}

impl SaveGate {
    /// A disarmed gate for `parties` writes.
    pub fn new(parties: usize) -> Arc<SaveGate> {
        Arc::new(SaveGate {
            armed: AtomicBool::new(false),
            barrier: tokio::sync::Barrier::new(parties),
        })
    }

    /// Makes writes wait at the gate.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Lets writes through without waiting.
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }

    /// The hook to install with [`ArticleStore::with_before_save`].
    pub fn hook(self: &Arc<Self>) -> BeforeSave {
        let gate = Arc::clone(self);
        Arc::new(move || {
            let gate = Arc::clone(&gate);
            Box::pin(async move {
                if gate.armed.load(Ordering::SeqCst) {
                    gate.barrier.wait().await;
                }
            })
        })
    }
}

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
/// `If-Match` outcomes, a race of two PUTs with the same ETag, and a delete.
pub async fn walkthrough(target: &Target, out: &mut (dyn Write + Send)) -> crate::AppResult {
    let gate = SaveGate::new(2);
    let store = ArticleStore::open(target, 4)
        .await?
        .with_before_save(gate.hook());
    store.reset().await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(super::serve(listener, store));
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

    // Two clients with the same (current) ETag: both pass the precondition, the gate
    // holds them at the save until both are there, then the predicate picks one.
    let current = put.etag.clone().ok_or("PUT returned no ETag")?;
    gate.arm();
    let (a, b) = tokio::join!(
        send(
            &client,
            Method::PUT,
            &url,
            Some(&current),
            Some(json!({"title": "A", "body": "a"}))
        ),
        send(
            &client,
            Method::PUT,
            &url,
            Some(&current),
            Some(json!({"title": "B", "body": "b"}))
        ),
    );
    gate.disarm();
    show("two PUTs with the same ETag: client A", &a?)?;
    show("                                client B", &b?)?;

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
