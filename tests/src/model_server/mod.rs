//! A scripted model server: real HTTP/1.1 on loopback that answers each request with the next
//! scripted reply, streamed as server-sent events exactly as the provider's API sends them
//! (chunked transfer encoding, one event per chunk). It records every request so tests can look
//! at what the daemon sent, can hold a stream until the test releases it, and can cut a stream
//! in the middle or answer with an HTTP error.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

mod about;
pub mod anthropic;
pub mod openai;
pub mod responses;
pub mod wire;

/// One SSE event: its `event:` name and its JSON `data:`.
#[derive(Debug, Clone)]
pub struct SseFrame {
    /// The event name.
    pub event: String,
    /// The data.
    pub data: Value,
}

/// A point in a stream where the server waits until the test releases it.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<Notify>);

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets the held stream go on.
    pub fn release(&self) {
        self.0.notify_one();
    }
}

/// Lets a paced stream send one event per permit, so a benchmark can time each event.
#[derive(Debug, Clone)]
pub struct Pace(Arc<tokio::sync::Semaphore>);

impl Default for Pace {
    fn default() -> Self {
        Pace(Arc::new(tokio::sync::Semaphore::new(0)))
    }
}

impl Pace {
    /// A pace with no permits yet.
    pub fn new() -> Pace {
        Pace::default()
    }

    /// Lets `n` more events go.
    pub fn allow(&self, n: usize) {
        self.0.add_permits(n);
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// A 200 event stream.
    Stream {
        /// The events, in order.
        events: Vec<SseFrame>,
        /// Close the connection abruptly after this many events.
        cut_after: Option<usize>,
        /// Wait at this gate after this many events.
        hold: Option<(usize, Gate)>,
        /// Send each event only when the test allows one more.
        pace: Option<Pace>,
    },
    /// An HTTP error with a JSON body.
    Status {
        /// The status code.
        status: u16,
        /// The body.
        body: Value,
        /// Extra headers.
        headers: Vec<(String, String)>,
    },
}

impl Scripted {
    /// A 200 stream of `events`, sent whole.
    pub fn stream(events: Vec<SseFrame>) -> Scripted {
        Scripted::Stream {
            events,
            cut_after: None,
            hold: None,
            pace: None,
        }
    }

    /// This stream, cut off after `n` events.
    pub fn cut_after(self, n: usize) -> Scripted {
        match self {
            Scripted::Stream {
                events, hold, pace, ..
            } => Scripted::Stream {
                events,
                cut_after: Some(n),
                hold,
                pace,
            },
            other => other,
        }
    }

    /// This stream, held after `n` events until `gate` is released.
    pub fn hold_after(self, n: usize, gate: &Gate) -> Scripted {
        match self {
            Scripted::Stream {
                events,
                cut_after,
                pace,
                ..
            } => Scripted::Stream {
                events,
                cut_after,
                hold: Some((n, gate.clone())),
                pace,
            },
            other => other,
        }
    }

    /// This stream, sending each event only when `pace` allows it.
    pub fn paced(self, pace: &Pace) -> Scripted {
        match self {
            Scripted::Stream {
                events,
                cut_after,
                hold,
                ..
            } => Scripted::Stream {
                events,
                cut_after,
                hold,
                pace: Some(pace.clone()),
            },
            other => other,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request path.
    pub path: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Scripted>,
    /// Replies for requests whose first user message holds a marker, by marker: sessions that
    /// run at once (subagents) each get their own script.
    routes: Vec<(String, VecDeque<Scripted>)>,
    received: Vec<Received>,
    /// What a local server says of itself (`/v1/models`, `/props`, `/api/show`), by path; other
    /// such questions get a 404 and take nothing from the script.
    info: std::collections::HashMap<String, Value>,
    /// The models `/v1/models` lists (in the format of the API that asks) where `info` does not
    /// say otherwise.
    models: Option<Vec<String>>,
    /// The questions about the server received so far (not counted among `received`).
    questions: Vec<Received>,
}

/// The running server; stops when dropped.
pub struct ModelServer {
    url: String,
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl ModelServer {
    /// Starts a server that answers with `script`, one entry per request.
    pub async fn start(script: Vec<Scripted>) -> ModelServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        ModelServer::start_on(listener, script).await
    }

    /// Starts a server on `listener` (a port chosen by the test).
    pub async fn start_on(listener: std::net::TcpListener, script: Vec<Scripted>) -> ModelServer {
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let listener = TcpListener::from_std(listener).expect("tokio listener");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            routes: Vec::new(),
            received: Vec::new(),
            info: std::collections::HashMap::new(),
            models: None,
            questions: Vec::new(),
        }));
        let arrived = Arc::new(Notify::new());
        let task = tokio::spawn(accept_loop(listener, state.clone(), arrived.clone()));
        ModelServer {
            url,
            state,
            arrived,
            task,
        }
    }

    /// The base URL, e.g. `http://127.0.0.1:4321`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers requests whose first user message contains `marker` with `replies`, in order,
    /// instead of with the main script.
    pub fn route(&self, marker: &str, replies: Vec<Scripted>) {
        self.state
            .lock()
            .unwrap()
            .routes
            .push((marker.to_string(), replies.into()));
    }

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: Vec<Scripted>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// Answers `path` (ending in `/models`, `/props` or `/api/show`) with `body`, as a local
    /// server says what it serves.
    pub fn describe(&self, path: &str, body: Value) {
        self.state
            .lock()
            .unwrap()
            .info
            .insert(path.to_string(), body);
    }

    /// Answers `GET /v1/models` with `ids`, in the format of the API that asks: Anthropic's
    /// (pages, `has_more`) when the request has an `anthropic-version` header, OpenAI's list
    /// otherwise. A request for Anthropic's list without an `x-api-key` is refused with a 401,
    /// as the real API does.
    pub fn serve_models(&self, ids: &[&str]) {
        self.state.lock().unwrap().models = Some(ids.iter().map(|id| id.to_string()).collect());
    }

    /// The questions about the server itself (`/v1/models`, `/props`, `/api/show`) received so
    /// far, with their query strings.
    pub fn questions(&self) -> Vec<Received> {
        self.state.lock().unwrap().questions.clone()
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Waits until at least `n` requests have arrived, and returns them.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Received> {
        let wait = async {
            loop {
                let notified = self.arrived.notified();
                let received = self.received();
                if received.len() >= n {
                    return received;
                }
                notified.await;
            }
        };
        tokio::time::timeout(crate::WAIT, wait)
            .await
            .unwrap_or_else(|_| panic!("the model server did not receive {n} requests"))
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>, arrived: Arc<Notify>) {
    let mut connections = tokio::task::JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        // Small event writes must not wait for delayed acknowledgements.
        let _ = stream.set_nodelay(true);
        connections.spawn(serve(stream, state.clone(), arrived.clone()));
    }
}

async fn serve(stream: TcpStream, state: Arc<Mutex<State>>, arrived: Arc<Notify>) {
    let mut reader = BufReader::new(stream);
    loop {
        let Some(request) = read_request(&mut reader).await else {
            return;
        };
        let (route, query) = request
            .path
            .split_once('?')
            .unwrap_or((request.path.as_str(), ""));
        // Not counted among the requests for replies.
        if about::INFO_PATHS.iter().any(|p| route.ends_with(p)) {
            let reply = {
                let mut state = state.lock().unwrap();
                state.questions.push(request.clone());
                about::about_itself(&state, route, query, &request)
            };
            if !respond(reader.get_mut(), reply).await {
                return;
            }
            continue;
        }
        let reply = {
            let mut state = state.lock().unwrap();
            let first = first_user_text(&request.body);
            let route = state
                .routes
                .iter_mut()
                .find(|(marker, _)| first.contains(marker.as_str()));
            let reply = match route {
                Some((_, replies)) => replies.pop_front(),
                None => state.script.pop_front(),
            };
            state.received.push(request);
            reply
        };
        arrived.notify_waiters();
        let reply = reply.unwrap_or_else(|| Scripted::Status {
            status: 500,
            body: json!({"type": "error", "error": {"type": "api_error", "message": "the test script has no reply left"}}),
            headers: vec![],
        });
        if !respond(reader.get_mut(), reply).await {
            return;
        }
    }
}

/// The text of a request's first user message, in any provider's format (`input` items for
/// the Responses API).
pub fn first_user_text(body: &Value) -> String {
    let list = if body["input"].is_array() {
        &body["input"]
    } else {
        &body["messages"]
    };
    list.as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some(Received {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Writes the reply; false when the connection must close.
async fn respond(stream: &mut TcpStream, reply: Scripted) -> bool {
    match reply {
        Scripted::Status {
            status,
            body,
            headers,
        } => {
            let body = body.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                reason(status),
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await.is_ok()
                && stream.write_all(body.as_bytes()).await.is_ok()
        }
        Scripted::Stream {
            events,
            cut_after,
            hold,
            pace,
        } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for (i, frame) in events.iter().enumerate() {
                if let Some((at, gate)) = &hold
                    && *at == i
                {
                    gate.0.notified().await;
                }
                if let Some(pace) = &pace
                    && let Ok(permit) = pace.0.acquire().await
                {
                    permit.forget();
                }
                if cut_after == Some(i) {
                    let _ = stream.shutdown().await;
                    return false;
                }
                let text = sse_bytes(std::slice::from_ref(frame));
                let chunk = format!("{:x}\r\n{text}\r\n", text.len());
                if stream.write_all(chunk.as_bytes()).await.is_err() {
                    return false;
                }
                let _ = stream.flush().await;
            }
            if let Some((at, gate)) = &hold
                && *at >= events.len()
            {
                gate.0.notified().await;
            }
            stream.write_all(b"0\r\n\r\n").await.is_ok()
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Error",
    }
}

/// Splits `text` into about `n` pieces on character boundaries, as a model streams it.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![];
    }
    let size = chars.len().div_ceil(n).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The bytes of `events` as a server sends them: `event:` when named, `data:` (a string as it
/// is, like `[DONE]`; anything else as JSON), and a blank line.
pub fn sse_bytes(events: &[SseFrame]) -> String {
    let mut out = String::new();
    for frame in events {
        let data = match &frame.data {
            Value::String(raw) => raw.clone(),
            value => value.to_string(),
        };
        if !frame.event.is_empty() {
            out.push_str(&format!("event: {}\n", frame.event));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}

/// A stream recorded from a real server, replayed as it was: the file holds `#` lines (the
/// request and the response's headers), then the raw event stream.
pub fn replay(path: &std::path::Path) -> Scripted {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the transcript {}: {e}", path.display()));
    let mut events = Vec::new();
    let (mut event, mut data) = (String::new(), Vec::new());
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if line.is_empty() {
            if !data.is_empty() {
                let joined = data.join("\n");
                let data = serde_json::from_str(&joined).unwrap_or(Value::String(joined));
                events.push(SseFrame {
                    event: std::mem::take(&mut event),
                    data,
                });
            }
            data.clear();
            event.clear();
        } else if let Some(name) = line.strip_prefix("event:") {
            event = name.trim().to_string();
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.trim_start().to_string());
        }
    }
    if !data.is_empty() {
        let joined = data.join("\n");
        let data = serde_json::from_str(&joined).unwrap_or(Value::String(joined));
        events.push(SseFrame { event, data });
    }
    Scripted::Stream {
        events,
        cut_after: None,
        hold: None,
        pace: None,
    }
}
