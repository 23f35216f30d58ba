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
    received: Vec<Received>,
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
            received: Vec::new(),
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

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: Vec<Scripted>) {
        self.state.lock().unwrap().script.extend(replies);
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
        let reply = {
            let mut state = state.lock().unwrap();
            state.received.push(request);
            state.script.pop_front()
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

/// Replies in the OpenAI Chat Completions streaming format (`data:` lines, `[DONE]` at the end),
/// as OpenAI and local servers (llama.cpp, vLLM, Ollama) send them.
pub mod openai {
    use super::*;

    enum Part {
        Text(String),
        Reasoning(String),
        Tool {
            id: String,
            name: String,
            args: String,
        },
    }

    /// Builds one streamed reply.
    pub struct Reply {
        parts: Vec<Part>,
        finish: Option<String>,
        usage: (u64, u64, u64),
        repeat_ids: bool,
    }

    /// A reply to build.
    pub fn reply() -> Reply {
        Reply {
            parts: Vec::new(),
            finish: None,
            usage: (100, 20, 0),
            repeat_ids: false,
        }
    }

    /// A reply that is just `text`.
    pub fn text(text: &str) -> Scripted {
        reply().text(text).build()
    }

    /// An HTTP error with OpenAI's error body.
    pub fn error(status: u16, code: &str, message: &str) -> Scripted {
        Scripted::Status {
            status,
            body: json!({"error": {"message": message, "type": "invalid_request_error", "code": code}}),
            headers: vec![],
        }
    }

    impl Reply {
        /// Adds text.
        pub fn text(mut self, text: &str) -> Reply {
            self.parts.push(Part::Text(text.into()));
            self
        }

        /// Adds reasoning (`reasoning_content`, as llama.cpp and vLLM send it).
        pub fn reasoning(mut self, text: &str) -> Reply {
            self.parts.push(Part::Reasoning(text.into()));
            self
        }

        /// Adds a tool call.
        pub fn tool(mut self, id: &str, name: &str, args: Value) -> Reply {
            self.parts.push(Part::Tool {
                id: id.into(),
                name: name.into(),
                args: args.to_string(),
            });
            self
        }

        /// Repeats each tool call's id and name in every delta (as some servers do).
        pub fn repeat_ids(mut self) -> Reply {
            self.repeat_ids = true;
            self
        }

        /// Sets the finish reason (default `tool_calls` with tools, else `stop`).
        pub fn finish(mut self, reason: &str) -> Reply {
            self.finish = Some(reason.into());
            self
        }

        /// Sets prompt, completion and cached tokens.
        pub fn usage(mut self, prompt: u64, completion: u64, cached: u64) -> Reply {
            self.usage = (prompt, completion, cached);
            self
        }

        /// The stream's chunks.
        pub fn events(&self) -> Vec<SseFrame> {
            let chunk = |delta: Value, finish: Value| SseFrame {
                event: String::new(),
                data: json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
            };
            let mut events = vec![chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
            )];
            let mut tool_index = 0;
            for part in &self.parts {
                match part {
                    Part::Text(text) => {
                        for piece in pieces(text, 3) {
                            events.push(chunk(json!({"content": piece}), Value::Null));
                        }
                    }
                    Part::Reasoning(text) => {
                        for piece in pieces(text, 2) {
                            events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
                        }
                    }
                    Part::Tool { id, name, args } => {
                        for (i, piece) in pieces(args, 3).into_iter().enumerate() {
                            let mut call =
                                json!({"index": tool_index, "function": {"arguments": piece}});
                            if i == 0 || self.repeat_ids {
                                call["id"] = json!(id);
                                call["type"] = json!("function");
                                call["function"]["name"] = json!(name);
                            }
                            events.push(chunk(json!({"tool_calls": [call]}), Value::Null));
                        }
                        tool_index += 1;
                    }
                }
            }
            let finish = self
                .finish
                .clone()
                .unwrap_or_else(|| if tool_index > 0 { "tool_calls" } else { "stop" }.into());
            events.push(chunk(json!({}), json!(finish)));
            let (prompt, completion, cached) = self.usage;
            events.push(SseFrame {
                event: String::new(),
                data: json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                             "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                                       "prompt_tokens_details": {"cached_tokens": cached}}}),
            });
            events.push(SseFrame {
                event: String::new(),
                data: Value::String("[DONE]".into()),
            });
            events
        }

        /// The scripted stream.
        pub fn build(self) -> Scripted {
            Scripted::Stream {
                events: self.events(),
                cut_after: None,
                hold: None,
                pace: None,
            }
        }
    }
}

/// Replies in the Anthropic Messages API's streaming format.
pub mod anthropic {
    use super::*;

    enum Part {
        Text(String),
        Thinking(String),
        Tool {
            id: String,
            name: String,
            input: Value,
        },
    }

    /// Builds one streamed reply.
    pub struct Reply {
        parts: Vec<Part>,
        stop_reason: Option<String>,
        usage: (u64, u64, u64, u64),
    }

    /// A reply to build.
    pub fn reply() -> Reply {
        Reply {
            parts: Vec::new(),
            stop_reason: None,
            usage: (100, 20, 0, 0),
        }
    }

    /// A reply that is just `text`.
    pub fn text(text: &str) -> Scripted {
        reply().text(text).build()
    }

    /// A reply that calls one tool.
    pub fn tool(name: &str, input: Value) -> Scripted {
        reply().tool(name, input).build()
    }

    /// An HTTP error with Anthropic's error body.
    pub fn error(status: u16, error_type: &str, message: &str) -> Scripted {
        Scripted::Status {
            status,
            body: json!({"type": "error", "error": {"type": error_type, "message": message}}),
            headers: vec![],
        }
    }

    /// A text reply streamed as `n` deltas of `piece` each.
    pub fn many_deltas(n: usize, piece: &str) -> Scripted {
        let frame = |event: &str, data: Value| SseFrame {
            event: event.to_string(),
            data,
        };
        let mut events = vec![
            frame(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant", "content": [], "model": "m", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ),
            frame(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
        ];
        for _ in 0..n {
            events.push(frame("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})));
        }
        events.push(frame(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        events.push(frame("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": n}})));
        events.push(frame("message_stop", json!({"type": "message_stop"})));
        Scripted::Stream {
            events,
            cut_after: None,
            hold: None,
            pace: None,
        }
    }

    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

    impl Reply {
        /// Adds a text block.
        pub fn text(mut self, text: &str) -> Reply {
            self.parts.push(Part::Text(text.to_string()));
            self
        }

        /// Adds a thinking block.
        pub fn thinking(mut self, text: &str) -> Reply {
            self.parts.push(Part::Thinking(text.to_string()));
            self
        }

        /// Adds a tool call with a fresh id.
        pub fn tool(self, name: &str, input: Value) -> Reply {
            let n = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.tool_with_id(&format!("toolu_{n:04}"), name, input)
        }

        /// Adds a tool call with the given id.
        pub fn tool_with_id(mut self, id: &str, name: &str, input: Value) -> Reply {
            self.parts.push(Part::Tool {
                id: id.to_string(),
                name: name.to_string(),
                input,
            });
            self
        }

        /// Sets the stop reason (default `tool_use` with tools, else `end_turn`).
        pub fn stop(mut self, reason: &str) -> Reply {
            self.stop_reason = Some(reason.to_string());
            self
        }

        /// Sets input, output, cache-read and cache-write tokens.
        pub fn usage(
            mut self,
            input: u64,
            output: u64,
            cache_read: u64,
            cache_write: u64,
        ) -> Reply {
            self.usage = (input, output, cache_read, cache_write);
            self
        }

        /// The stream's events, as the API sends them.
        pub fn events(&self) -> Vec<SseFrame> {
            let frame = |event: &str, data: Value| SseFrame {
                event: event.to_string(),
                data,
            };
            let (input, output, cache_read, cache_write) = self.usage;
            let mut events = vec![frame(
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": "msg_01scripted", "type": "message", "role": "assistant", "content": [],
                    "model": "claude-scripted", "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write,
                              "cache_read_input_tokens": cache_read, "output_tokens": 1}}}),
            )];
            for (index, part) in self.parts.iter().enumerate() {
                let (start, deltas) = match part {
                    Part::Text(text) => (
                        json!({"type": "text", "text": ""}),
                        pieces(text, 3)
                            .into_iter()
                            .map(|p| json!({"type": "text_delta", "text": p}))
                            .collect::<Vec<_>>(),
                    ),
                    Part::Thinking(text) => {
                        let mut deltas: Vec<Value> = pieces(text, 2)
                            .into_iter()
                            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                            .collect();
                        deltas
                            .push(json!({"type": "signature_delta", "signature": "c2lnbmF0dXJl"}));
                        (
                            json!({"type": "thinking", "thinking": "", "signature": ""}),
                            deltas,
                        )
                    }
                    Part::Tool { id, name, input } => (
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                        pieces(&input.to_string(), 3)
                            .into_iter()
                            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                            .collect(),
                    ),
                };
                events.push(frame(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": start}),
                ));
                if index == 0 {
                    events.push(frame("ping", json!({"type": "ping"})));
                }
                for delta in deltas {
                    events.push(frame(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": index, "delta": delta}),
                    ));
                }
                events.push(frame(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": index}),
                ));
            }
            let has_tools = self.parts.iter().any(|p| matches!(p, Part::Tool { .. }));
            let stop = self
                .stop_reason
                .clone()
                .unwrap_or_else(|| if has_tools { "tool_use" } else { "end_turn" }.to_string());
            events.push(frame(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                       "usage": {"output_tokens": output}}),
            ));
            events.push(frame("message_stop", json!({"type": "message_stop"})));
            events
        }

        /// The scripted stream.
        pub fn build(self) -> Scripted {
            Scripted::Stream {
                events: self.events(),
                cut_after: None,
                hold: None,
                pace: None,
            }
        }
    }
}
