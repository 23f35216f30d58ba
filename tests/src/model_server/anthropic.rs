//! Replies in the Anthropic Messages API's streaming format.

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
    deltas(&vec![piece.to_string(); n])
}

/// A text reply streamed as one delta per piece.
pub fn deltas(pieces: &[String]) -> Scripted {
    let n = pieces.len();
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
    for piece in pieces {
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
    pub fn usage(mut self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Reply {
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
                    deltas.push(json!({"type": "signature_delta", "signature": "c2lnbmF0dXJl"}));
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
        Scripted::stream(self.events())
    }
}

/// A page of `GET /v1/models` as the Messages API lists models: newest first, `limit` of them
/// (20 unless the query says) after `after_id`, with `has_more`, `first_id` and `last_id`.
pub fn models_page(ids: &[String], query: &str) -> Value {
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    };
    let limit: usize = param("limit").and_then(|l| l.parse().ok()).unwrap_or(20);
    let start = param("after_id")
        .and_then(|after| ids.iter().position(|id| *id == after))
        .map_or(0, |at| at + 1);
    let page: Vec<&String> = ids.iter().skip(start).take(limit).collect();
    let data: Vec<Value> = page
        .iter()
        .map(|id| {
            json!({
                "type": "model",
                "id": id,
                "display_name": id,
                "created_at": "2025-09-29T00:00:00Z",
            })
        })
        .collect();
    json!({
        "data": data,
        "has_more": start + page.len() < ids.len(),
        "first_id": page.first(),
        "last_id": page.last(),
    })
}
