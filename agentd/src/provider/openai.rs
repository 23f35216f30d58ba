//! OpenAI's Chat Completions API, `POST {base}/chat/completions` with `stream: true`; also what
//! local servers speak (llama.cpp's `llama-server`, Ollama, vLLM).

use std::collections::BTreeMap;

use protocol::{ModelStopReason, TokenUsage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::endpoint::{Endpoint, Format};
use super::sse::SseEvent;
use super::stream::StreamParser;
use super::{ModelRequest, ProviderError, StreamDelta, ToolSpec, openai_messages};
use crate::conversation::{AssistantReply, Block, ToolCall};
use crate::images::ImageData;

/// The public API's address.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used when neither the session nor the configuration names one.
pub(crate) const DEFAULT_MODEL: &str = "gpt-4.1";
const NAME: &str = "OpenAI-compatible";
const FORMAT: Format = Format {
    name: NAME,
    parse_error,
};

/// A client of a Chat Completions endpoint.
#[derive(Debug, Clone)]
pub(crate) struct OpenAi {
    endpoint: Endpoint,
    api_key: Option<String>,
}

impl OpenAi {
    /// A client for `base_url`, with `api_key` when the server needs one.
    pub(crate) fn new(http: reqwest::Client, base_url: &str, api_key: Option<String>) -> Self {
        OpenAi {
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

    /// Whether this is a server other than OpenAI's own (a local one).
    pub(crate) fn is_local(&self) -> bool {
        self.endpoint.is_local()
    }

    /// The one model the server serves (see [`super::local::only_model`]).
    pub(crate) async fn only_model(&self) -> Result<String, ProviderError> {
        let Endpoint { http, base_url, .. } = &self.endpoint;
        super::local::only_model(http, base_url, self.api_key.as_deref()).await
    }

    /// The models the server serves (`GET {base}/models`, the base ending in `/v1`).
    pub(crate) async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let url = format!("{}/models", self.endpoint.base_url);
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &self.api_key {
            let bearer =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    ProviderError::Invalid("the API key is not a valid header value".to_string())
                })?;
            headers.insert(reqwest::header::AUTHORIZATION, bearer);
        }
        super::models::list(&self.endpoint.http, &url, headers, false).await
    }

    /// The context window the server runs `model` with, where it says.
    pub(crate) async fn server_context_window(&self, model: &str) -> Option<u64> {
        super::local::context_window(&self.endpoint.http, &self.endpoint.base_url, model).await
    }

    /// Streams one reply (see [`super::Provider::stream`]).
    pub(crate) async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let parser = ReplyBuilder {
            one_call: request.one_call,
            ..ReplyBuilder::default()
        };
        let body = request_body(&request);
        let post = Post {
            format: &FORMAT,
            path: "chat/completions",
            body,
            images: request.images,
        };
        self.post_stream(post, parser, on_delta, cancel).await
    }

    /// Posts `post.body` (the images' data written in) to `{base}/{path}` with the key, and
    /// streams the reply through `parser` (both of OpenAI's APIs are asked this way). The
    /// body's value is gone before the reply streams.
    pub(crate) async fn post_stream<P: StreamParser>(
        &self,
        post: Post<'_>,
        parser: P,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let Post {
            format,
            path,
            body,
            images,
        } = post;
        let body = super::body::to_bytes(&body, images)?;
        let url = format!("{}/{path}", self.endpoint.base_url);
        let mut post = self
            .endpoint
            .http
            .post(&url)
            .header("accept", "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.api_key {
            post = post.bearer_auth(key);
        }
        self.endpoint
            .stream(format, &url, post, parser, on_delta, cancel)
            .await
    }
}

/// One request of either of OpenAI's APIs.
pub(crate) struct Post<'a> {
    /// The API's wire format.
    pub(crate) format: &'a Format,
    /// The path under the base URL.
    pub(crate) path: &'a str,
    /// The JSON body, its image parts carrying placeholders.
    pub(crate) body: Value,
    /// The data of the images the placeholders stand for.
    pub(crate) images: &'a ImageData,
}

/// The error type and message of an OpenAI-style error body (`{"error": {...}}`); some local
/// servers send a bare string or `{"message": ...}`.
pub(crate) fn parse_error(body: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (None, None);
    };
    let error = if value["error"].is_object() {
        &value["error"]
    } else {
        &value
    };
    let message = error["message"]
        .as_str()
        .or_else(|| value["error"].as_str())
        .map(str::to_string);
    let kind = error["code"]
        .as_str()
        .or_else(|| error["type"].as_str())
        .map(str::to_string);
    (kind, message)
}

/// The JSON body of a request.
pub(crate) fn request_body(request: &ModelRequest<'_>) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    messages.extend(openai_messages::messages_json(
        request.messages,
        request.images,
    ));
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": request.max_tokens,
        "messages": messages,
    });
    add_tools(&mut body, request, tool_json);
    body
}

/// Adds the request's tools to `body`, each in the shape `tool_json` gives, and asks for one
/// call at a time when the request wants only one (both of OpenAI's APIs ask alike).
pub(crate) fn add_tools(
    body: &mut Value,
    request: &ModelRequest<'_>,
    tool_json: fn(&ToolSpec) -> Value,
) {
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.iter().map(tool_json).collect());
        if request.one_call {
            body["parallel_tool_calls"] = json!(false);
        }
    }
}

/// A tool in the Chat Completions shape, nested under `function`.
fn tool_json(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
    })
}

/// A tool call being assembled from deltas.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a reply from chat-completion chunks.
#[derive(Default)]
pub struct ReplyBuilder {
    text: String,
    thinking: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: TokenUsage,
    /// The reply ends at its first tool call: a second one starting ends the stream.
    pub(crate) one_call: bool,
}

impl StreamParser for ReplyBuilder {
    /// Applies one chunk; true at `[DONE]`.
    fn apply(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::Invalid(format!("a chunk is not JSON: {e}")))?;
        if value["error"].is_object() {
            let (kind, message) = parse_error(data);
            return Err(ProviderError::Stream {
                provider: NAME,
                error_type: kind.unwrap_or_else(|| "error".to_string()),
                message: message.unwrap_or_else(|| "no message".to_string()),
            });
        }
        if value["usage"].is_object() {
            let usage = &value["usage"];
            let cached = usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0);
            let prompt = usage["prompt_tokens"].as_u64().unwrap_or(0);
            self.usage = TokenUsage {
                input: prompt.saturating_sub(cached),
                output: usage["completion_tokens"].as_u64().unwrap_or(0),
                cache_read: cached,
                cache_write: 0,
            };
        }
        let Some(choice) = value["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(false);
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            on_delta(StreamDelta::Text(text.to_string()));
        }
        let reasoning = delta["reasoning_content"]
            .as_str()
            .or_else(|| delta["reasoning"].as_str());
        if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
            self.thinking.push_str(text);
            on_delta(StreamDelta::Thinking(text.to_string()));
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(self.calls.len() as u64);
            if self.one_call && !self.calls.is_empty() && !self.calls.contains_key(&index) {
                self.finish_reason = Some("tool_calls".to_string());
                return Ok(true);
            }
            let partial = self.calls.entry(index).or_default();
            // Some servers repeat the id and name in every delta; they are set, not appended.
            if let Some(id) = call["id"].as_str().filter(|s| !s.is_empty()) {
                partial.id = id.to_string();
            }
            if let Some(name) = call["function"]["name"].as_str().filter(|s| !s.is_empty()) {
                partial.name = name.to_string();
            }
            if let Some(arguments) = call["function"]["arguments"].as_str() {
                partial.arguments.push_str(arguments);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(false)
    }

    /// Complete at `[DONE]`, or at the end of a stream that gave a finish reason (some servers
    /// leave `[DONE]` out).
    fn finish(self, complete: bool) -> Result<AssistantReply, ProviderError> {
        if !complete && self.finish_reason.is_none() {
            return Err(ProviderError::Broken(
                "the stream ended before a finish_reason".to_string(),
            ));
        }
        let mut content = Vec::new();
        if !self.thinking.is_empty() {
            content.push(Block::Thinking {
                thinking: self.thinking,
                signature: None,
            });
        }
        if !self.text.is_empty() {
            content.push(Block::Text { text: self.text });
        }
        for (index, call) in self.calls {
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            content.push(Block::ToolCall(ToolCall {
                id,
                name: call.name,
                args: call.arguments,
            }));
        }
        let has_calls = content.iter().any(|b| matches!(b, Block::ToolCall(_)));
        Ok(AssistantReply {
            content,
            stop_reason: match self.finish_reason.as_deref() {
                Some("length") => ModelStopReason::MaxTokens,
                Some("tool_calls") | Some("function_call") => ModelStopReason::ToolUse,
                // Some servers say "stop" after tool calls.
                Some("stop") | None if has_calls => ModelStopReason::ToolUse,
                Some("stop") | None => ModelStopReason::EndTurn,
                Some(other) => ModelStopReason::Other(other.to_string()),
            },
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::stream;

    fn chunk(value: Value) -> String {
        format!("data: {value}\n\n")
    }

    #[test]
    fn tool_calls_are_assembled_by_index_with_repeated_ids_and_names() {
        let mut body = String::new();
        body += &chunk(
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me look."}}]}),
        );
        body += &chunk(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{\"pa"}}]}}]}),
        );
        body += &chunk(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read", "arguments": "th\":\"a\"}"}}]}}]}),
        );
        body += &chunk(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "glob", "arguments": "{}"}}]}}]}),
        );
        body +=
            &chunk(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
        body += &chunk(
            json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 20}}}),
        );
        body += "data: [DONE]\n\n";
        let mut deltas = Vec::new();
        let reply = stream::decode(ReplyBuilder::default(), body.as_bytes(), &mut |d| {
            deltas.push(d)
        })
        .unwrap();
        assert_eq!(reply.text(), "Let me look.");
        let calls = reply.tool_calls();
        assert_eq!(
            (
                calls[0].id.as_str(),
                calls[0].name.as_str(),
                calls[0].args.as_str()
            ),
            ("call_a", "read", "{\"path\":\"a\"}")
        );
        assert_eq!(calls[1].name, "glob");
        assert_eq!(reply.stop_reason, ModelStopReason::ToolUse);
        // One call per reply: the second call's start ends the reply.
        let one = ReplyBuilder {
            one_call: true,
            ..ReplyBuilder::default()
        };
        let first = stream::decode(one, body.as_bytes(), &mut |_| {}).unwrap();
        assert_eq!(first.tool_calls().len(), 1);
        assert_eq!(first.tool_calls()[0].args, "{\"path\":\"a\"}");
        assert_eq!(first.stop_reason, ModelStopReason::ToolUse);
        assert_eq!(
            reply.usage,
            TokenUsage {
                input: 30,
                output: 7,
                cache_read: 20,
                cache_write: 0
            }
        );
    }

    #[test]
    fn a_stream_without_a_finish_reason_is_broken() {
        let body = chunk(json!({"choices": [{"index": 0, "delta": {"content": "par"}}]}));
        let result = stream::decode(ReplyBuilder::default(), body.as_bytes(), &mut |_| {});
        assert!(matches!(result, Err(ProviderError::Broken(_))));
    }
}
