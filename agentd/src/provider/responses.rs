//! OpenAI's Responses API, `POST {base}/responses` with `stream: true`
//! (docs/architecture.md#providers). Stateless: every request carries the whole conversation as
//! `input` items, `store: false` unless the profile says otherwise, and the reasoning items of
//! earlier replies go back exactly as they came (with their encrypted content). The server is
//! asked about its models as for Chat Completions.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::endpoint::Format;
use super::openai::{self, OpenAi};
use super::responses_reply::{NAME, ReplyBuilder};
use super::{ModelRequest, ProviderError, StreamDelta, ToolSpec};
use crate::conversation::{AssistantReply, Block, Message};

const FORMAT: Format = Format {
    name: NAME,
    parse_error: openai::parse_error,
};

/// What a profile sets of the Responses API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResponsesOptions {
    /// Whether the server keeps the replies (`store`); when not, reasoning comes back encrypted.
    pub(crate) store: bool,
    /// The reasoning effort asked for, if any (`reasoning.effort`).
    pub(crate) reasoning_effort: Option<String>,
}

/// A client of a Responses endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Responses {
    /// The server, with its key, as a Chat Completions client knows it: models are listed and
    /// requests posted the same way.
    server: OpenAi,
    options: ResponsesOptions,
}

impl Responses {
    /// A client of `server`'s Responses API with the profile's `options`.
    pub(crate) fn new(server: OpenAi, options: ResponsesOptions) -> Responses {
        Responses { server, options }
    }

    /// The server, for the questions both of OpenAI's APIs answer alike (its models, whether
    /// it is a local one).
    pub(crate) fn server(&self) -> &OpenAi {
        &self.server
    }

    /// Streams one reply (see [`super::Provider::stream`]).
    pub(crate) async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let parser = ReplyBuilder::new(request.one_call);
        let body = request_body(&request, &self.options);
        self.server
            .post_stream(&FORMAT, "responses", &body, parser, on_delta, cancel)
            .await
    }
}

/// The JSON body of a request.
pub(crate) fn request_body(request: &ModelRequest<'_>, options: &ResponsesOptions) -> Value {
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "store": options.store,
        "instructions": request.system,
        "input": input_items(request.messages),
        "max_output_tokens": request.max_tokens,
    });
    // Unstored reasoning can only be passed back in its encrypted form.
    if !options.store {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(effort) = &options.reasoning_effort {
        body["reasoning"] = json!({"effort": effort, "summary": "auto"});
    }
    openai::add_tools(&mut body, request, tool_json);
    body
}

/// A tool in the Responses shape: flat, not nested under `function`.
fn tool_json(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.input_schema,
    })
}

/// A user message item of `text`.
// Images join the content here as `input_image` parts when they are supported.
fn user_item(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// The history as `input` items, in order.
fn input_items(history: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for message in history {
        match message {
            Message::User { text, .. } | Message::Notice { text } => out.push(user_item(text)),
            Message::Summary { text } => out.push(user_item(&format!(
                "Summary of the earlier conversation:\n\n{text}"
            ))),
            Message::ToolResults { results } => {
                for result in results {
                    let output = result.output_or_placeholder();
                    out.push(json!({"type": "function_call_output", "call_id": result.call_id, "output": output}));
                }
            }
            Message::Assistant(reply) => out.extend(reply.content.iter().filter_map(reply_item)),
        }
    }
    out
}

/// One part of an earlier reply as an input item; `None` for what is not sent back.
fn reply_item(block: &Block) -> Option<Value> {
    match block {
        Block::Text { text } if !text.is_empty() => Some(json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        })),
        Block::ToolCall(call) => {
            let arguments = call.args_object_text();
            Some(
                json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments}),
            )
        }
        // Reasoning goes back as the item it came in, exactly.
        Block::ProviderItem { item } => Some(item.clone()),
        // The visible summary is part of that item; other providers' reasoning cannot be
        // verified here.
        Block::Text { .. } | Block::Thinking { .. } | Block::RedactedThinking { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ToolCall, ToolResult};
    use protocol::{Delivery, ModelStopReason, TokenUsage};

    static NO_IMAGES: std::sync::LazyLock<crate::images::ImageData> =
        std::sync::LazyLock::new(crate::images::ImageData::none);

    fn request<'a>(messages: &'a [Message], tools: &'a [ToolSpec]) -> ModelRequest<'a> {
        ModelRequest {
            model: "gpt-5",
            system: "Be brief.",
            messages,
            images: &NO_IMAGES,
            tools,
            max_tokens: 100,
            one_call: false,
        }
    }

    #[test]
    fn the_history_maps_to_input_items_with_reasoning_passed_back_exactly() {
        let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look."}], "encrypted_content": "gAAA"});
        let messages = vec![
            Message::User {
                text: "hi".into(),
                delivery: Delivery::FollowUp,
                images: Vec::new(),
            },
            Message::Assistant(AssistantReply {
                content: vec![
                    Block::Thinking {
                        thinking: "Look.".into(),
                        signature: None,
                    },
                    Block::ProviderItem {
                        item: reasoning.clone(),
                    },
                    Block::Text {
                        text: "Reading.".into(),
                    },
                    Block::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        args: "{\"path\":\"a\"".into(),
                    }),
                ],
                stop_reason: ModelStopReason::ToolUse,
                usage: TokenUsage::default(),
            }),
            Message::ToolResults {
                results: vec![ToolResult {
                    call_id: "call_1".into(),
                    name: "read".into(),
                    output: String::new(),
                    is_error: false,
                    images: Vec::new(),
                }],
            },
        ];
        let body = request_body(&request(&messages, &[]), &ResponsesOptions::default());
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert!(body.get("reasoning").is_none());
        let input = body["input"].as_array().unwrap();
        assert_eq!(
            input[0],
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})
        );
        assert_eq!(input[1], reasoning);
        assert_eq!(input[2]["content"][0]["type"], "output_text");
        assert_eq!(
            input[3],
            json!({"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"})
        );
        assert_eq!(
            input[4],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "(no output)"})
        );
        assert_eq!(input.len(), 5);
    }

    #[test]
    fn effort_and_store_come_from_the_profile() {
        let options = ResponsesOptions {
            store: true,
            reasoning_effort: Some("high".into()),
        };
        let body = request_body(&request(&[], &[]), &options);
        assert_eq!(body["store"], true);
        assert!(body.get("include").is_none());
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
    }
}
