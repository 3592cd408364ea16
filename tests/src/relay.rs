//! A TCP relay between the tests' connections and a database server that loses
//! connections on demand, at a point the test chooses: [`Relay`].
//!
//! Killing a session from another connection cannot place the loss between a statement
//! the server ran and its answer; the relay can. It forwards bytes both ways and, when
//! armed with [`Relay::lose_reply_to`], forwards the next client message that contains
//! a marker (such as `COMMIT`), waits until the server's answer to it arrives (the
//! server has then run the statement to its end) and closes both sides instead of
//! handing the answer over. The client sees a lost connection; the server kept what
//! the statement did.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

/// A relay listening on a free local port, forwarding to one server.
#[derive(Debug)]
pub struct Relay {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The relayed connections, both sockets of each.
    links: Vec<Arc<Link>>,
    /// The marker of the next client message whose answer is lost.
    marker: Option<Vec<u8>>,
    /// Answers lost so far.
    lost: usize,
    closed: bool,
}

#[derive(Debug)]
struct Link {
    client: TcpStream,
    server: TcpStream,
    /// The client sent the marked message: the server's next bytes are lost.
    awaiting: AtomicBool,
}

impl Link {
    fn close(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.server.shutdown(Shutdown::Both);
    }
}

impl Relay {
    /// A relay to the server of `url` (`scheme://[user@]host:port/...`).
    pub fn to(url: &str) -> Relay {
        let target = host_port(url).to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").expect("relay listener");
        let port = listener.local_addr().expect("relay address").port();
        let shared = Arc::new(Shared::default());
        let accepting = Arc::clone(&shared);
        thread::spawn(move || accept(listener, &target, &accepting));
        Relay { port, shared }
    }

    /// `url` pointed at the relay instead of its server, without TLS (so that the relay
    /// can see the statements) and without the switch to the server's Unix socket that
    /// the async MySQL driver makes on a local server.
    pub fn url(&self, url: &str) -> String {
        let through = url.replacen(host_port(url), &format!("127.0.0.1:{}", self.port), 1);
        let option = if through.starts_with("postgres") {
            "sslmode=disable"
        } else {
            "prefer_socket=false"
        };
        let separator = if through.contains('?') { '&' } else { '?' };
        format!("{through}{separator}{option}")
    }

    /// Arms the relay: the next client message containing `marker` reaches the server,
    /// and the server's answer to it is lost with the connection.
    pub fn lose_reply_to(&self, marker: &str) {
        lock(&self.shared.state).marker = Some(marker.as_bytes().to_vec());
    }

    /// Closes every relayed connection now; a client finds its connection lost at its
    /// next statement.
    pub fn cut_all(&self) {
        for link in std::mem::take(&mut lock(&self.shared.state).links) {
            link.close();
        }
    }

    /// How many answers the relay has lost.
    pub fn replies_lost(&self) -> usize {
        lock(&self.shared.state).lost
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        lock(&self.shared.state).closed = true;
        self.cut_all();
        // Wakes the accepting thread, which then sees `closed`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn accept(listener: TcpListener, target: &str, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if lock(&shared.state).closed {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(target) else {
            continue;
        };
        let link = Arc::new(Link {
            client,
            server,
            awaiting: AtomicBool::new(false),
        });
        lock(&shared.state).links.push(Arc::clone(&link));
        let (up, up_shared) = (Arc::clone(&link), Arc::clone(shared));
        thread::spawn(move || upstream(&up, &up_shared));
        let down_shared = Arc::clone(shared);
        thread::spawn(move || downstream(&link, &down_shared));
    }
}

/// Client to server; marks the link when the armed marker goes by.
fn upstream(link: &Link, shared: &Shared) {
    let (mut from, mut to) = (&link.client, &link.server);
    let mut buf = vec![0; 64 * 1024];
    // The end of the previous chunk, for a marker split between two reads.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        {
            let mut state = lock(&shared.state);
            if let Some(marker) = &state.marker {
                let mut seen = std::mem::take(&mut tail);
                seen.extend_from_slice(chunk);
                if seen.windows(marker.len()).any(|w| w == marker.as_slice()) {
                    state.marker = None;
                    // Before forwarding: the answer cannot overtake the mark.
                    link.awaiting.store(true, Ordering::SeqCst);
                } else {
                    let keep = marker.len().saturating_sub(1).min(seen.len());
                    tail = seen[seen.len() - keep..].to_vec();
                }
            }
        }
        if to.write_all(chunk).is_err() {
            break;
        }
    }
    link.close();
}

/// Server to client; loses the answer to a marked message with the connection.
fn downstream(link: &Link, shared: &Shared) {
    let (mut from, mut to) = (&link.server, &link.client);
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if link.awaiting.load(Ordering::SeqCst) {
            // Counted first: the client learns of the loss from the close.
            lock(&shared.state).lost += 1;
            link.close();
            return;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    link.close();
}

/// The `host:port` of a server URL.
fn host_port(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_pointed_at_the_relay() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:5432/test"),
            "127.0.0.1:5432"
        );
        assert_eq!(host_port("mysql://root:pw@db:3306/test?x=1"), "db:3306");
    }
}
