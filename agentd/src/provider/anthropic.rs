//! Anthropic's Messages API: `POST {base}/v1/messages` with `stream: true`.

use std::collections::BTreeMap;

use protocol::{ModelStopReason, TokenUsage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::endpoint::{Endpoint, Format};
use super::sse::SseEvent;
use super::stream::StreamParser;
use super::{ModelRequest, ProviderError, StreamDelta, ToolSpec, body, images};
use crate::conversation::{AssistantReply, Block, Message, ToolCall, ToolResult};
use crate::images::ImageData;

/// The public API's address.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model used when neither the session nor the configuration names one.
pub(crate) const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The API version header sent with every request.
pub(crate) const API_VERSION: &str = "2023-06-01";
const NAME: &str = "Anthropic";
const FORMAT: Format = Format {
    name: NAME,
    parse_error,
};

/// A client of the Messages API.
#[derive(Debug, Clone)]
pub(crate) struct Anthropic {
    endpoint: Endpoint,
    api_key: String,
}

impl Anthropic {
    /// Whether this is a server other than Anthropic's own.
    pub(crate) fn is_local(&self) -> bool {
        self.endpoint.is_local()
    }

    /// A client for `base_url` with `api_key`.
    pub(crate) fn new(http: reqwest::Client, base_url: &str, api_key: String) -> Self {
        Anthropic {
            endpoint: Endpoint::new(http, base_url, DEFAULT_BASE_URL),
            api_key,
        }
    }

    /// The same provider, treating a reply stream silent for `idle` as broken.
    pub(crate) fn with_idle_timeout(self, idle: std::time::Duration) -> Self {
        Self {
            endpoint: self.endpoint.with_idle_timeout(idle),
            ..self
        }
    }

    /// The models the server serves (`GET {base}/v1/models`), with the headers of a reply.
    pub(crate) async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let url = format!("{}/v1/models", self.endpoint.base_url);
        let mut headers = reqwest::header::HeaderMap::new();
        let key = reqwest::header::HeaderValue::from_str(&self.api_key).map_err(|_| {
            ProviderError::Invalid("the API key is not a valid header value".to_string())
        })?;
        headers.insert("x-api-key", key);
        headers.insert(
            "anthropic-version",
            reqwest::header::HeaderValue::from_static(API_VERSION),
        );
        super::models::list(&self.endpoint.http, &url, headers, true).await
    }

    /// Streams one reply (see [`super::Provider::stream`]).
    pub(crate) async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let url = format!("{}/v1/messages", self.endpoint.base_url);
        // The images' data is written into the bytes alone; the body's value is gone before
        // the reply streams.
        let body = body::to_bytes(&request_body(&request), request.images)?;
        let post = self
            .endpoint
            .http
            .post(&url)
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", API_VERSION)
            .header("accept", "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let parser = ReplyBuilder {
            one_call: request.one_call,
            ..ReplyBuilder::default()
        };
        self.endpoint
            .stream(&FORMAT, &url, post, parser, on_delta, cancel)
            .await
    }
}

/// The error type and message of an Anthropic error body.
pub(crate) fn parse_error(body: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (None, None);
    };
    let error = &value["error"];
    (
        error["type"].as_str().map(str::to_string),
        error["message"].as_str().map(str::to_string),
    )
}

/// The JSON body of a request, with prompt caching on the system prompt, the tools and the last
/// message so that a long session reuses the cache.
pub(crate) fn request_body(request: &ModelRequest<'_>) -> Value {
    let cache = json!({"type": "ephemeral"});
    let mut tools: Vec<Value> = request.tools.iter().map(tool_json).collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = cache.clone();
    }
    let mut messages = messages_json(request.messages, request.images);
    if let Some(block) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|blocks| blocks.last_mut())
    {
        block["cache_control"] = cache.clone();
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "system": [{"type": "text", "text": request.system, "cache_control": cache}],
        "messages": messages,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        if request.one_call {
            body["tool_choice"] = json!({"type": "auto", "disable_parallel_tool_use": true});
        }
    }
    body
}

fn tool_json(tool: &ToolSpec) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
    })
}

/// Maps the history to Messages API messages, with the images `images` holds. Consecutive
/// messages of one role are merged (tool results followed by a steering message become one user
/// message, results first).
fn messages_json(history: &[Message], images: &ImageData) -> Vec<Value> {
    images.new_request();
    let mut out: Vec<Value> = Vec::new();
    for message in history {
        let (role, blocks) = match message {
            // Images before the text, as Anthropic advises.
            Message::User {
                text,
                images: attached,
                ..
            } => {
                let mut blocks = images::anthropic_blocks(attached, images);
                // The API refuses an empty text block; a message of images alone needs none.
                if !text.is_empty() || blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                ("user", blocks)
            }
            Message::Notice { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Summary { text } => (
                "user",
                vec![
                    json!({"type": "text", "text": format!("Summary of the earlier conversation:\n\n{text}")}),
                ],
            ),
            Message::ToolResults { results } => (
                "user",
                results.iter().map(|r| tool_result(r, images)).collect(),
            ),
            Message::Assistant(reply) => ("assistant", assistant_blocks(reply)),
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(existing) = last["content"].as_array_mut() {
                    existing.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}

/// A `tool_result` block: its content a string, or an array of the text and the images when the
/// result has images.
fn tool_result(result: &ToolResult, images: &ImageData) -> Value {
    let output = result.output_or_placeholder();
    let content = if result.images.is_empty() {
        json!(output)
    } else {
        let mut blocks = vec![json!({"type": "text", "text": output})];
        blocks.extend(images::anthropic_blocks(&result.images, images));
        Value::Array(blocks)
    };
    json!({
        "type": "tool_result",
        "tool_use_id": result.call_id,
        "content": content,
        "is_error": result.is_error,
    })
}

fn assistant_blocks(reply: &AssistantReply) -> Vec<Value> {
    let mut blocks = Vec::new();
    for block in &reply.content {
        match block {
            Block::Text { text } if !text.is_empty() => {
                blocks.push(json!({"type": "text", "text": text}));
            }
            Block::Text { .. } => {}
            // Unsigned reasoning cannot be verified by the API, so it is not sent back.
            Block::Thinking {
                thinking,
                signature: Some(signature),
            } => blocks
                .push(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
            Block::Thinking { .. } => {}
            Block::RedactedThinking { data } => {
                blocks.push(json!({"type": "redacted_thinking", "data": data}));
            }
            Block::ProviderItem { .. } => {}
            Block::ToolCall(call) => {
                // Arguments the model cut off are not valid JSON; the API needs an object.
                let input = call
                    .args_json()
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                blocks.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
        }
    }
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": "(empty reply)"}));
    }
    blocks
}

/// A content block being assembled from deltas.
enum Partial {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// Assembles a reply from stream events.
#[derive(Default)]
pub struct ReplyBuilder {
    blocks: BTreeMap<u64, Partial>,
    stop_reason: Option<String>,
    usage: TokenUsage,
    /// The reply ends at its first tool call: a second one starting ends the stream.
    pub(crate) one_call: bool,
}

impl StreamParser for ReplyBuilder {
    /// Applies one event; true at `message_stop`.
    fn apply(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ProviderError> {
        let value: Value = serde_json::from_str(&event.data).map_err(|e| {
            ProviderError::Invalid(format!("`{}` event is not JSON: {e}", event.event))
        })?;
        let kind = value["type"]
            .as_str()
            .unwrap_or(event.event.as_str())
            .to_string();
        match kind.as_str() {
            "message_start" => self.read_usage(&value["message"]["usage"]),
            "content_block_start" => {
                let index = index_of(&value)?;
                let block = &value["content_block"];
                let partial = match block["type"].as_str() {
                    Some("text") => Partial::Text(str_of(&block["text"])),
                    Some("thinking") => Partial::Thinking {
                        thinking: str_of(&block["thinking"]),
                        signature: str_of(&block["signature"]),
                    },
                    Some("redacted_thinking") => Partial::Redacted(str_of(&block["data"])),
                    Some("tool_use") if self.one_call && self.has_call() => {
                        self.stop_reason = Some("tool_use".to_string());
                        return Ok(true);
                    }
                    Some("tool_use") => Partial::ToolUse {
                        id: str_of(&block["id"]),
                        name: str_of(&block["name"]),
                        // The start carries `input: {}`; the real input follows as JSON pieces.
                        json: String::new(),
                    },
                    // Block kinds this client does not use (server tools) are skipped.
                    _ => return Ok(false),
                };
                self.blocks.insert(index, partial);
            }
            "content_block_delta" => {
                let index = index_of(&value)?;
                let delta = &value["delta"];
                let Some(block) = self.blocks.get_mut(&index) else {
                    return Ok(false);
                };
                match (delta["type"].as_str(), block) {
                    (Some("text_delta"), Partial::Text(text)) => {
                        let piece = str_of(&delta["text"]);
                        text.push_str(&piece);
                        on_delta(StreamDelta::Text(piece));
                    }
                    (Some("thinking_delta"), Partial::Thinking { thinking, .. }) => {
                        let piece = str_of(&delta["thinking"]);
                        thinking.push_str(&piece);
                        on_delta(StreamDelta::Thinking(piece));
                    }
                    (Some("signature_delta"), Partial::Thinking { signature, .. }) => {
                        signature.push_str(&str_of(&delta["signature"]));
                    }
                    (Some("input_json_delta"), Partial::ToolUse { json, .. }) => {
                        json.push_str(&str_of(&delta["partial_json"]));
                    }
                    _ => {}
                }
            }
            "content_block_stop" | "ping" => {}
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_string());
                }
                self.read_usage(&value["usage"]);
            }
            "message_stop" => return Ok(true),
            "error" => {
                return Err(ProviderError::Stream {
                    provider: NAME,
                    error_type: value["error"]["type"]
                        .as_str()
                        .unwrap_or("error")
                        .to_string(),
                    message: value["error"]["message"]
                        .as_str()
                        .unwrap_or("no message")
                        .to_string(),
                });
            }
            _ => {}
        }
        Ok(false)
    }

    fn finish(self, complete: bool) -> Result<AssistantReply, ProviderError> {
        if !complete {
            return Err(ProviderError::Broken(
                "the stream ended without message_stop".to_string(),
            ));
        }
        Ok(self.build())
    }
}

impl ReplyBuilder {
    /// Takes the counts present in a usage object; later events carry the final numbers.
    /// Whether a tool call has begun.
    fn has_call(&self) -> bool {
        self.blocks
            .values()
            .any(|b| matches!(b, Partial::ToolUse { .. }))
    }

    fn read_usage(&mut self, usage: &Value) {
        let count = |key: &str| usage[key].as_u64();
        if let Some(n) = count("input_tokens") {
            self.usage.input = n;
        }
        if let Some(n) = count("output_tokens") {
            self.usage.output = n;
        }
        if let Some(n) = count("cache_read_input_tokens") {
            self.usage.cache_read = n;
        }
        if let Some(n) = count("cache_creation_input_tokens") {
            self.usage.cache_write = n;
        }
    }

    fn build(self) -> AssistantReply {
        let content = self
            .blocks
            .into_values()
            .map(|partial| match partial {
                Partial::Text(text) => Block::Text { text },
                Partial::Thinking {
                    thinking,
                    signature,
                } => Block::Thinking {
                    thinking,
                    signature: (!signature.is_empty()).then_some(signature),
                },
                Partial::Redacted(data) => Block::RedactedThinking { data },
                Partial::ToolUse { id, name, json } => Block::ToolCall(ToolCall {
                    id,
                    name,
                    args: json,
                }),
            })
            .collect();
        AssistantReply {
            content,
            stop_reason: match self.stop_reason.as_deref() {
                Some("end_turn") | None => ModelStopReason::EndTurn,
                Some("tool_use") => ModelStopReason::ToolUse,
                Some("max_tokens") => ModelStopReason::MaxTokens,
                Some("stop_sequence") => ModelStopReason::StopSequence,
                Some(other) => ModelStopReason::Other(other.to_string()),
            },
            usage: self.usage,
        }
    }
}

fn index_of(value: &Value) -> Result<u64, ProviderError> {
    value["index"]
        .as_u64()
        .ok_or_else(|| ProviderError::Invalid("content block event without an index".to_string()))
}

fn str_of(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
