//! Replies in the OpenAI Chat Completions streaming format (`data:` lines, `[DONE]` at the end),
//! as OpenAI and local servers (llama.cpp, vLLM, Ollama) send them.

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

/// A reply that is one call of tool `name` with `args`, with an id of its own.
pub fn tool(name: &str, args: Value) -> Scripted {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    reply().tool(&format!("call_{n}"), name, args).build()
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
        Scripted::stream(self.events())
    }
}

/// `GET /v1/models` as OpenAI and compatible servers list models: every one at once.
pub fn models_list(ids: &[String]) -> Value {
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "system"}))
        .collect();
    json!({"object": "list", "data": data})
}
