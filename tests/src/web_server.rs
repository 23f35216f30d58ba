//! A scripted web server for `fetch` and `web_search` tests: plain HTTP/1.1 on a loopback port,
//! one reply per path (a page, a redirect, a slow or huge answer), every request it received
//! kept (method, target, headers, body) for the test to read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The most bytes of a request the server reads.
const MAX_REQUEST_BYTES: usize = 1 << 20;

/// What the server answers on one path.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// A wait before the answer starts.
    delay: Duration,
}

impl Reply {
    /// `200` with `body` of type `content_type`.
    pub fn typed(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".to_string(), content_type.to_string())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// `200` with an HTML page.
    pub fn html(body: &str) -> Reply {
        Reply::typed("text/html; charset=utf-8", body)
    }

    /// `200` with a JSON body.
    pub fn json(body: &serde_json::Value) -> Reply {
        Reply::typed("application/json", body.to_string())
    }

    /// A `302` redirect to `location`.
    pub fn redirect(location: &str) -> Reply {
        Reply {
            status: 302,
            headers: vec![("Location".to_string(), location.to_string())],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// The same reply after `delay`.
    pub fn after(self, delay: Duration) -> Reply {
        Reply { delay, ..self }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path and query as sent.
    pub target: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Seen {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// The query's pairs, decoded.
    pub fn query(&self) -> Vec<(String, String)> {
        let query = self.target.split_once('?').map_or("", |(_, q)| q);
        url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect()
    }
}

/// What the server knows.
#[derive(Default)]
struct State {
    replies: HashMap<String, Reply>,
    seen: Vec<Seen>,
}

/// The running server; stops when dropped.
pub struct WebServer {
    port: u16,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebServer {
    /// Starts a server on a free loopback port; every path answers 404 until given a reply.
    pub async fn start() -> WebServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let port = listener.local_addr().expect("local address").port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        WebServer { port, state, task }
    }

    /// Answers `path` (without the query) with `reply`.
    pub fn route(&self, path: &str, reply: Reply) {
        self.state
            .lock()
            .unwrap()
            .replies
            .insert(path.to_string(), reply);
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// `http://{host}:PORT{path}`: the same server under another name.
    pub fn url_as(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// How many requests asked for `path`.
    pub fn hits(&self, path: &str) -> usize {
        self.seen().iter().filter(|s| s.path() == path).count()
    }
}

/// Serves one connection: one request, one answer, closed.
async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let Some(seen) = read_request(&mut stream).await else {
        return;
    };
    let reply = {
        let mut state = state.lock().unwrap();
        let reply = state.replies.get(seen.path()).cloned();
        state.seen.push(seen);
        reply
    };
    let reply = reply.unwrap_or_else(|| Reply {
        status: 404,
        ..Reply::typed("text/plain", "not found")
    });
    tokio::time::sleep(reply.delay).await;
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    // The client may stop reading (a download cap): that is not an error here.
    let _ = stream.write_all(&reply.body).await;
    let _ = stream.shutdown().await;
}

/// Reads one request: its line, headers and `Content-Length` body.
async fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buffer.len() > MAX_REQUEST_BYTES {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let target = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
        .min(MAX_REQUEST_BYTES);
    let mut body = buffer[end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Seen {
        method,
        target,
        headers,
        body,
    })
}
