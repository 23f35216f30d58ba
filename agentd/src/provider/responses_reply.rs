//! Assembling a reply from the Responses API's stream events, by their documented names:
//! output items open and close (`response.output_item.added` / `.done`), text, reasoning
//! summaries and call arguments stream as deltas into them, and `response.completed` (or
//! `response.incomplete`) closes the reply with its usage.

use std::collections::BTreeMap;

use protocol::{ModelStopReason, TokenUsage};
use serde_json::Value;

use super::sse::SseEvent;
use super::stream::StreamParser;
use super::{ProviderError, StreamDelta};
use crate::conversation::{AssistantReply, Block, ToolCall};

/// The provider's name, for messages.
pub(crate) const NAME: &str = "OpenAI Responses";

/// An output item being assembled from deltas.
enum Part {
    /// A message's text.
    Text(String),
    /// A function call.
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// Reasoning: its summary as it streamed, the summary part last seen, and the item whole
    /// once it is done.
    Reasoning {
        summary: String,
        last_index: Option<u64>,
        item: Option<Value>,
    },
}

/// Assembles a reply from Responses stream events, keeping the items in output order.
pub(crate) struct ReplyBuilder {
    parts: BTreeMap<u64, Part>,
    /// How the reply ended: `completed`, or the reason it is incomplete.
    ended: Option<String>,
    usage: TokenUsage,
    /// The reply ends at its first tool call: a second one starting ends the stream.
    one_call: bool,
    /// The id the server gave the reply (`response.id`), once an event named it.
    response_id: Option<String>,
}

impl ReplyBuilder {
    /// A builder for one reply; with `one_call`, the reply ends at its first tool call.
    pub(crate) fn new(one_call: bool) -> ReplyBuilder {
        ReplyBuilder {
            parts: BTreeMap::new(),
            ended: None,
            usage: TokenUsage::default(),
            one_call,
            response_id: None,
        }
    }

    /// The id the server gave the reply, if an event named it.
    pub(crate) fn response_id(&self) -> Option<&str> {
        self.response_id.as_deref()
    }

    /// The reasoning part at `index`, opened empty if it is not yet.
    fn reasoning_at(&mut self, index: u64) -> &mut Part {
        self.parts.entry(index).or_insert(Part::Reasoning {
            summary: String::new(),
            last_index: None,
            item: None,
        })
    }

    /// An output item opened: calls and reasoning get their part. True when it is a second
    /// call of a one-call reply, which ends the reply.
    fn item_added(&mut self, index: u64, item: &Value) -> bool {
        match item["type"].as_str() {
            Some("function_call") => {
                let has_call = self.parts.values().any(|p| matches!(p, Part::Call { .. }));
                if self.one_call && has_call {
                    self.ended = Some("completed".to_string());
                    return true;
                }
                self.parts.insert(index, call_part(item));
            }
            Some("reasoning") => {
                self.reasoning_at(index);
            }
            _ => {}
        }
        false
    }

    /// An output item closed, whole: reasoning is kept as it came; a call's or a message's
    /// final form stands for its deltas.
    fn item_done(&mut self, index: u64, item: &Value) {
        match item["type"].as_str() {
            Some("reasoning") => {
                let part = self.reasoning_at(index);
                if let Part::Reasoning {
                    summary,
                    item: kept,
                    ..
                } = part
                {
                    if summary.is_empty() {
                        *summary = summary_text(item);
                    }
                    *kept = Some(item.clone());
                }
            }
            Some("function_call") => {
                self.parts.insert(index, call_part(item));
            }
            Some("message") if !self.parts.contains_key(&index) => {
                let text: String = item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["text"].as_str())
                    .collect();
                if !text.is_empty() {
                    self.parts.insert(index, Part::Text(text));
                }
            }
            _ => {}
        }
    }

    /// The end of the reply: its status and usage.
    fn completed(&mut self, response: &Value) {
        let usage = &response["usage"];
        let cached = usage["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0);
        self.usage = TokenUsage {
            input: usage["input_tokens"]
                .as_u64()
                .unwrap_or(0)
                .saturating_sub(cached),
            output: usage["output_tokens"].as_u64().unwrap_or(0),
            cache_read: cached,
            cache_write: 0,
        };
        let reason = response["incomplete_details"]["reason"]
            .as_str()
            .or_else(|| response["status"].as_str())
            .unwrap_or("completed");
        self.ended = Some(reason.to_string());
    }
}

/// A call's part from its item.
fn call_part(item: &Value) -> Part {
    let text = |key: &str| item[key].as_str().unwrap_or_default().to_string();
    Part::Call {
        call_id: text("call_id"),
        name: text("name"),
        arguments: text("arguments"),
    }
}

/// The summary texts of a reasoning item, joined by blank lines.
fn summary_text(item: &Value) -> String {
    let texts: Vec<&str> = item["summary"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["text"].as_str())
        .collect();
    texts.join("\n\n")
}

/// A provider error from an error object (`{code, message}` or `{type, message}`).
fn stream_error(error: &Value) -> ProviderError {
    let kind = error["code"]
        .as_str()
        .or_else(|| error["type"].as_str())
        .unwrap_or("error");
    ProviderError::Stream {
        provider: NAME,
        error_type: kind.to_string(),
        message: error["message"]
            .as_str()
            .unwrap_or("no message")
            .to_string(),
    }
}

impl StreamParser for ReplyBuilder {
    /// Applies one event; true at `response.completed` or `response.incomplete`.
    fn apply(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ProviderError> {
        let value: Value = serde_json::from_str(event.data.trim())
            .map_err(|e| ProviderError::Invalid(format!("an event is not JSON: {e}")))?;
        let kind = value["type"].as_str().unwrap_or(event.event.as_str());
        let index = value["output_index"].as_u64().unwrap_or(0);
        let delta = value["delta"].as_str().unwrap_or_default();
        // An id past any real one is not kept: it could not be sent back anyway.
        let id = value["response"]["id"].as_str();
        if let Some(id) = id.filter(|id| !id.is_empty() && id.len() <= 256) {
            self.response_id = Some(id.to_string());
        }
        match kind {
            "response.output_item.added" => return Ok(self.item_added(index, &value["item"])),
            "response.output_item.done" => self.item_done(index, &value["item"]),
            "response.output_text.delta" if !delta.is_empty() => {
                let part = self
                    .parts
                    .entry(index)
                    .or_insert_with(|| Part::Text(String::new()));
                if let Part::Text(text) = part {
                    text.push_str(delta);
                    on_delta(StreamDelta::Text(delta.to_string()));
                }
            }
            "response.reasoning_summary_text.delta" if !delta.is_empty() => {
                let part = self.reasoning_at(index);
                if let Part::Reasoning {
                    summary,
                    last_index,
                    ..
                } = part
                {
                    let at = value["summary_index"].as_u64();
                    // A new summary part starts a new paragraph.
                    let mut piece = String::new();
                    if !summary.is_empty() && *last_index != at {
                        piece.push_str("\n\n");
                    }
                    piece.push_str(delta);
                    *last_index = at;
                    summary.push_str(&piece);
                    on_delta(StreamDelta::Thinking(piece));
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(Part::Call { arguments, .. }) = self.parts.get_mut(&index) {
                    arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(Part::Call { arguments, .. }), Some(done)) =
                    (self.parts.get_mut(&index), value["arguments"].as_str())
                {
                    *arguments = done.to_string();
                }
            }
            "response.completed" | "response.incomplete" => {
                self.completed(&value["response"]);
                return Ok(true);
            }
            "response.failed" => return Err(stream_error(&value["response"]["error"])),
            "error" => {
                let error = if value["error"].is_object() {
                    &value["error"]
                } else {
                    &value
                };
                return Err(stream_error(error));
            }
            _ => {}
        }
        Ok(false)
    }

    /// Complete only at `response.completed` or `response.incomplete`: a stream that simply
    /// ends was cut.
    fn finish(self, complete: bool) -> Result<AssistantReply, ProviderError> {
        let Some(ended) = self.ended.filter(|_| complete) else {
            return Err(ProviderError::Broken(
                "the stream ended before response.completed".to_string(),
            ));
        };
        let mut content = Vec::new();
        for part in self.parts.into_values() {
            match part {
                Part::Text(text) if !text.is_empty() => content.push(Block::Text { text }),
                Part::Text(_) => {}
                Part::Call {
                    call_id,
                    name,
                    arguments,
                } => content.push(Block::ToolCall(ToolCall {
                    id: call_id,
                    name,
                    args: arguments,
                })),
                Part::Reasoning { summary, item, .. } => {
                    if !summary.is_empty() {
                        content.push(Block::Thinking {
                            thinking: summary,
                            signature: None,
                        });
                    }
                    // Reasoning that did not arrive whole cannot be passed back.
                    if let Some(item) = item {
                        content.push(Block::ProviderItem { item });
                    }
                }
            }
        }
        let has_calls = content.iter().any(|b| matches!(b, Block::ToolCall(_)));
        let stop_reason = match ended.as_str() {
            "max_output_tokens" => ModelStopReason::MaxTokens,
            "completed" if has_calls => ModelStopReason::ToolUse,
            "completed" => ModelStopReason::EndTurn,
            other => ModelStopReason::Other(other.to_string()),
        };
        Ok(AssistantReply {
            content,
            stop_reason,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
#[path = "responses_reply_tests.rs"]
mod tests;
