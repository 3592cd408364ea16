//! The load generator's HTTP/1.1 client: one keep-alive connection, one request at a
//! time, its buffers reused, in the calling task.
//!
//! The clients share two cores with the service and PostgreSQL, so what a request costs
//! the client is taken from what the service can have. A general client (reqwest: a
//! connection pool, URL parsing, header maps, a task driving each connection) costs
//! several times this one, which writes the request with one `write_all` and parses the
//! response head with `httparse`. It speaks only what the service answers: a body with
//! `Content-Length`, no chunks, the connection kept open.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response: the status, the `ETag` if any, the body.
#[derive(Debug)]
pub(crate) struct Reply<'a> {
    pub(crate) status: u16,
    pub(crate) etag: Option<&'a str>,
    pub(crate) body: &'a [u8],
}

/// One keep-alive connection to the service.
#[derive(Debug)]
pub(crate) struct Wire {
    stream: TcpStream,
    host: String,
    request: Vec<u8>,
    response: Vec<u8>,
    /// Where the `ETag` value sits in `response`, once parsed.
    etag: Option<(usize, usize)>,
}

/// How much of a response head is parsed at most.
const MAX_HEADERS: usize = 16;

impl Wire {
    /// Connects to `addr` (`host:port`), with Nagle's algorithm off.
    pub(crate) async fn connect(addr: &str) -> Result<Wire, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Wire {
            stream,
            host: addr.to_owned(),
            request: Vec::with_capacity(1024),
            response: Vec::with_capacity(2048),
            etag: None,
        })
    }

    /// Sends one request and reads its whole response.
    pub(crate) async fn send(
        &mut self,
        method: &str,
        path: &str,
        if_match: Option<&str>,
        body: &[u8],
    ) -> Result<Reply<'_>, String> {
        self.write_request(method, path, if_match, body);
        self.stream
            .write_all(&self.request)
            .await
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let (status, head, length) = self.read_response().await?;
        let etag = self
            .etag
            .map(|(from, to)| std::str::from_utf8(&self.response[from..to]))
            .transpose()
            .map_err(|_| "an ETag that is not UTF-8".to_owned())?;
        Ok(Reply {
            status,
            etag,
            body: &self.response[head..head + length],
        })
    }

    fn write_request(&mut self, method: &str, path: &str, if_match: Option<&str>, body: &[u8]) {
        let buffer = &mut self.request;
        buffer.clear();
        for part in [method, " ", path, " HTTP/1.1\r\nhost: ", &self.host] {
            buffer.extend_from_slice(part.as_bytes());
        }
        if let Some(tag) = if_match {
            buffer.extend_from_slice(b"\r\nif-match: ");
            buffer.extend_from_slice(tag.as_bytes());
        }
        if !body.is_empty() {
            buffer.extend_from_slice(b"\r\ncontent-type: application/json");
        }
        buffer.extend_from_slice(b"\r\ncontent-length: ");
        buffer.extend_from_slice(body.len().to_string().as_bytes());
        buffer.extend_from_slice(b"\r\n\r\n");
        buffer.extend_from_slice(body);
    }

    /// Reads the head, then the body: the status, the head's length, the body's.
    async fn read_response(&mut self) -> Result<(u16, usize, usize), String> {
        self.response.clear();
        self.etag = None;
        loop {
            self.fill().await?;
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut parsed = httparse::Response::new(&mut headers);
            let head = match parsed.parse(&self.response) {
                Ok(httparse::Status::Complete(head)) => head,
                Ok(httparse::Status::Partial) => continue,
                Err(error) => return Err(format!("a malformed response: {error}")),
            };
            let status = parsed.code.ok_or("a response without a status")?;
            let mut length = None;
            for header in parsed.headers.iter() {
                if header.name.eq_ignore_ascii_case("content-length") {
                    let text = std::str::from_utf8(header.value).map_err(|e| e.to_string())?;
                    length = Some(text.parse::<usize>().map_err(|e| e.to_string())?);
                } else if header.name.eq_ignore_ascii_case("etag") {
                    let from = header.value.as_ptr() as usize - self.response.as_ptr() as usize;
                    self.etag = Some((from, from + header.value.len()));
                } else if header.name.eq_ignore_ascii_case("transfer-encoding")
                    || (header.name.eq_ignore_ascii_case("connection")
                        && header.value.eq_ignore_ascii_case(b"close"))
                {
                    return Err(format!(
                        "a response with {}: not what this client reads",
                        header.name
                    ));
                }
            }
            let length = length.ok_or("a response without content-length")?;
            while self.response.len() < head + length {
                self.fill().await?;
            }
            if self.response.len() > head + length {
                return Err("bytes after the response (none was asked for)".into());
            }
            return Ok((status, head, length));
        }
    }

    /// Reads what the socket has into `response`; a closed connection is an error.
    async fn fill(&mut self) -> Result<(), String> {
        self.response.reserve(2048);
        let read = self
            .stream
            .read_buf(&mut self.response)
            .await
            .map_err(|e| e.to_string())?;
        if read == 0 {
            return Err("the service closed the connection".into());
        }
        Ok(())
    }
}
