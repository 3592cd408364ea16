//! The HTTP walkthrough: the service on an ephemeral port of 127.0.0.1, and a real
//! HTTP client going through the conditional-request outcomes.

use std::io::Write;

use reqwest::header::{CONTENT_TYPE, ETAG, HeaderName, IF_MATCH, IF_NONE_MATCH};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};

use super::AsyncPool;

/// One request of the walkthrough: its label, method and optional header.
type Step<'a> = (&'a str, Method, Option<(HeaderName, &'a str)>);

/// A response as the walkthrough shows it.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The `ETag` header, if any.
    pub etag: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body, parsed as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

impl Reply {
    /// The problem's `code`, for an error response.
    pub fn code(&self) -> Option<&str> {
        self.body.get("code").and_then(Value::as_str)
    }

    fn line(&self) -> String {
        let mut line = format!("{}", self.status.as_u16());
        if let Some(code) = self.code() {
            line.push_str(&format!(" {code}"));
        }
        if let Some(tag) = &self.etag {
            line.push_str(&format!(", ETag {}…\"", &tag[..tag.len().min(9)]));
        }
        line
    }
}

/// Sends one request with the given headers and an optional JSON body.
pub async fn send(
    client: &Client,
    method: Method,
    url: &str,
    headers: &[(HeaderName, &str)],
    body: Option<Value>,
) -> reqwest::Result<Reply> {
    let mut request = client.request(method, url);
    for (name, value) in headers {
        request = request.header(name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (status, etag, content_type) = (response.status(), header(ETAG), header(CONTENT_TYPE));
    let bytes = response.bytes().await?;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(Reply {
        status,
        etag,
        content_type,
        body,
    })
}

/// Starts the service on 127.0.0.1 (an ephemeral port) and walks through reads, the
/// `If-Match` outcomes, two clients with the same ETag, and a delete.
pub async fn walkthrough(pool: AsyncPool, out: &mut (dyn Write + Send)) -> crate::AppResult {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(super::serve(listener, pool));
    writeln!(out, "  serving on {base}")?;

    let client = Client::new();
    let draft = json!({"title": "Draft", "body": "Optimistic locking, explained."});
    let created = send(
        &client,
        Method::POST,
        &format!("{base}/articles"),
        &[],
        Some(draft),
    )
    .await?;
    let id = created.body["id"]
        .as_str()
        .ok_or("POST returned no id")?
        .to_owned();
    let url = format!("{base}/articles/{id}");
    let etag = created.etag.clone().ok_or("POST returned no ETag")?;
    let mut show = |label: &str, reply: &Reply| writeln!(out, "  {label:<44} -> {}", reply.line());
    show("POST /articles", &created)?;

    let edit = || Some(json!({"title": "Final", "body": "Edited."}));
    let weak = format!("W/{etag}");
    let steps: [Step<'_>; 6] = [
        ("GET /articles/{id}", Method::GET, None),
        (
            "GET with If-None-Match: the ETag",
            Method::GET,
            Some((IF_NONE_MATCH, etag.as_str())),
        ),
        ("PUT without If-Match", Method::PUT, None),
        (
            "PUT with If-Match: not-an-etag",
            Method::PUT,
            Some((IF_MATCH, "not-an-etag")),
        ),
        (
            "PUT with a weak ETag W/\"…\"",
            Method::PUT,
            Some((IF_MATCH, weak.as_str())),
        ),
        (
            "PUT with the ETag",
            Method::PUT,
            Some((IF_MATCH, etag.as_str())),
        ),
    ];
    for (label, method, header) in steps {
        let body = if method == Method::PUT { edit() } else { None };
        let headers: Vec<_> = header.into_iter().collect();
        show(label, &send(&client, method, &url, &headers, body).await?)?;
    }
    let patch = Some(json!({"title": "Late"}));
    let stale = send(&client, Method::PATCH, &url, &[(IF_MATCH, &etag)], patch).await?;
    show("PATCH with the old ETag", &stale)?;

    // Two clients with the same (current) ETag: the first write wins, the second one's
    // token is stale by the time it arrives.
    let current = stale.etag.clone().ok_or("412 carried no current ETag")?;
    let a = send(&client, Method::PUT, &url, &[(IF_MATCH, &current)], edit()).await?;
    show("two clients, same ETag: client A PUTs", &a)?;
    let b = send(&client, Method::PUT, &url, &[(IF_MATCH, &current)], edit()).await?;
    show("                        client B PUTs", &b)?;
    let any = send(&client, Method::PUT, &url, &[(IF_MATCH, "*")], edit()).await?;
    show("PUT with If-Match: *", &any)?;

    let latest = any.etag.clone().ok_or("PUT returned no ETag")?;
    let delete = [(IF_MATCH, latest.as_str())];
    show(
        "DELETE with the current ETag",
        &send(&client, Method::DELETE, &url, &delete, None).await?,
    )?;
    show(
        "GET after the delete",
        &send(&client, Method::GET, &url, &[], None).await?,
    )?;
    show(
        "DELETE again with that ETag",
        &send(&client, Method::DELETE, &url, &delete, None).await?,
    )?;
    let star = [(IF_MATCH, "*")];
    show(
        "DELETE again with If-Match: *",
        &send(&client, Method::DELETE, &url, &star, None).await?,
    )?;
    server.abort();
    Ok(())
}
