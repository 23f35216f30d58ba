//! Replies in the OpenAI Responses streaming format: named events (`response.created`,
//! `response.output_item.added`, the deltas, `response.output_item.done`, `response.completed`),
//! each with its `type` and `sequence_number` in the data, as the API documents them.

use super::*;

enum Part {
    Reasoning {
        item: Value,
    },
    Text(String),
    Tool {
        id: String,
        name: String,
        args: String,
    },
}

/// Builds one streamed reply.
pub struct Reply {
    parts: Vec<Part>,
    usage: (u64, u64, u64),
    incomplete: Option<String>,
    id: String,
}

/// A reply to build.
pub fn reply() -> Reply {
    Reply {
        parts: Vec::new(),
        usage: (100, 20, 0),
        incomplete: None,
        id: "resp_1".into(),
    }
}

/// A reply that is just `text`.
pub fn text(text: &str) -> Scripted {
    reply().text(text).build()
}

/// A stream that fails with `response.failed` and `code`.
pub fn failed(code: &str, message: &str) -> Scripted {
    let events = vec![
        frame(
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        ),
        frame(
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                     "error": {"code": code, "message": message}}}),
        ),
    ];
    Scripted::stream(events)
}

/// The 400 the API answers when a request names a reply it does not keep
/// (`previous_response_not_found`).
pub fn previous_not_found(id: &str) -> Scripted {
    Scripted::Status {
        status: 400,
        body: json!({"error": {"message": format!("Previous response with id '{id}' not found."),
                                "type": "invalid_request_error", "param": "previous_response_id",
                                "code": "previous_response_not_found"}}),
        headers: Vec::new(),
    }
}

/// The reasoning item a reply with `reasoning(id, summary)` sends whole, encrypted content and
/// all: what the next request must carry back exactly.
pub fn reasoning_item(id: &str, summary: &str) -> Value {
    json!({"type": "reasoning", "id": id,
           "summary": [{"type": "summary_text", "text": summary}],
           "encrypted_content": format!("gAAAA-{id}-opaque")})
}

fn frame(data: Value) -> SseFrame {
    SseFrame {
        event: data["type"].as_str().unwrap_or_default().to_string(),
        data,
    }
}

impl Reply {
    /// Adds text.
    pub fn text(mut self, text: &str) -> Reply {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Adds a reasoning item `id` whose summary streams as `summary` (see [`reasoning_item`]).
    pub fn reasoning(mut self, id: &str, summary: &str) -> Reply {
        self.parts.push(Part::Reasoning {
            item: reasoning_item(id, summary),
        });
        self
    }

    /// Adds a function call.
    pub fn tool(mut self, call_id: &str, name: &str, args: Value) -> Reply {
        self.parts.push(Part::Tool {
            id: call_id.into(),
            name: name.into(),
            args: args.to_string(),
        });
        self
    }

    /// Sets the id the server gives the reply (`resp_1` unless set).
    pub fn id(mut self, id: &str) -> Reply {
        self.id = id.into();
        self
    }

    /// Sets input, output and cached input tokens.
    pub fn usage(mut self, input: u64, output: u64, cached: u64) -> Reply {
        self.usage = (input, output, cached);
        self
    }

    /// Ends with `response.incomplete` for `reason` (e.g. `max_output_tokens`).
    pub fn incomplete(mut self, reason: &str) -> Reply {
        self.incomplete = Some(reason.into());
        self
    }

    /// The stream's events.
    pub fn events(&self) -> Vec<SseFrame> {
        let id = &self.id;
        let mut events = vec![
            json!({"type": "response.created", "response": {"id": id, "status": "in_progress"}}),
        ];
        for (index, part) in self.parts.iter().enumerate() {
            match part {
                Part::Reasoning { item } => {
                    events.push(json!({"type": "response.output_item.added", "output_index": index,
                                       "item": {"type": "reasoning", "id": item["id"], "summary": []}}));
                    let summary = item["summary"][0]["text"].as_str().unwrap_or_default();
                    for piece in pieces(summary, 2) {
                        events.push(json!({"type": "response.reasoning_summary_text.delta", "item_id": item["id"],
                                           "output_index": index, "summary_index": 0, "delta": piece}));
                    }
                    events.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
                }
                Part::Text(text) => {
                    events.push(json!({"type": "response.output_item.added", "output_index": index,
                                       "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}}));
                    for piece in pieces(text, 3) {
                        events.push(json!({"type": "response.output_text.delta", "item_id": "msg_1",
                                           "output_index": index, "content_index": 0, "delta": piece}));
                    }
                    events.push(json!({"type": "response.output_item.done", "output_index": index,
                                       "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                                                "content": [{"type": "output_text", "text": text, "annotations": []}]}}));
                }
                Part::Tool { id, name, args } => {
                    let item = |arguments: &str| json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name, "arguments": arguments});
                    events.push(json!({"type": "response.output_item.added", "output_index": index, "item": item("")}));
                    for piece in pieces(args, 3) {
                        events.push(json!({"type": "response.function_call_arguments.delta", "item_id": format!("fc_{id}"),
                                           "output_index": index, "delta": piece}));
                    }
                    events.push(json!({"type": "response.function_call_arguments.done", "item_id": format!("fc_{id}"),
                                       "output_index": index, "arguments": args}));
                    events.push(json!({"type": "response.output_item.done", "output_index": index, "item": item(args)}));
                }
            }
        }
        let (input, output, cached) = self.usage;
        let usage = json!({"input_tokens": input, "output_tokens": output, "total_tokens": input + output,
                           "input_tokens_details": {"cached_tokens": cached}, "output_tokens_details": {"reasoning_tokens": 0}});
        events.push(match &self.incomplete {
            Some(reason) => json!({"type": "response.incomplete", "response": {"id": id, "status": "incomplete",
                                   "incomplete_details": {"reason": reason}, "usage": usage}}),
            None => json!({"type": "response.completed", "response": {"id": id, "status": "completed", "usage": usage}}),
        });
        events
            .into_iter()
            .enumerate()
            .map(|(n, mut data)| {
                data["sequence_number"] = json!(n);
                frame(data)
            })
            .collect()
    }

    /// The scripted stream.
    pub fn build(self) -> Scripted {
        Scripted::stream(self.events())
    }
}
