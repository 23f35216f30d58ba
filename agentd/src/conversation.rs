//! The conversation a session keeps: user messages, complete model replies, and tool results.
//! Every provider turns this one shape into its own wire format.

use protocol::{Delivery, ImageRef, ModelStopReason, TokenUsage, ToolCallInfo};
use serde::{Deserialize, Serialize};

/// One message of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Something the user said.
    User {
        /// The text.
        text: String,
        /// How it arrived.
        delivery: Delivery,
        /// The images it carries, stored next to the log (docs/architecture.md#images).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// A complete model reply.
    Assistant(AssistantReply),
    /// The results of every tool call of the previous reply, in call order.
    ToolResults {
        /// The results.
        results: Vec<ToolResult>,
    },
    /// A summary that stands for the older history it replaced.
    Summary {
        /// The summary text.
        text: String,
    },
    /// Something the daemon tells the model about (a rewind of the work tree), as user text.
    Notice {
        /// The text.
        text: String,
    },
}

/// A model reply received whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantReply {
    /// The reply's parts in the order the model produced them.
    pub content: Vec<Block>,
    /// Why the reply ended.
    pub stop_reason: ModelStopReason,
    /// The tokens of this reply.
    pub usage: TokenUsage,
}

/// A part of a model reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text for the user.
    Text {
        /// The text.
        text: String,
    },
    /// Visible reasoning; the signature lets the provider verify it when sent back.
    Thinking {
        /// The reasoning.
        thinking: String,
        /// The provider's signature, if any.
        signature: Option<String>,
    },
    /// Reasoning the provider keeps encrypted.
    RedactedThinking {
        /// The opaque data.
        data: String,
    },
    /// A tool call.
    ToolCall(ToolCall),
    /// An item of one provider's own wire format that must go back to it exactly as received
    /// (a Responses reasoning item with its encrypted content); other providers skip it.
    ProviderItem {
        /// The item as the provider sent it.
        item: serde_json::Value,
    },
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id of the call.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments exactly as the model sent them (a JSON object as text, possibly invalid
    /// when the reply was cut off).
    pub args: String,
}

impl ToolCall {
    /// The arguments as a JSON value; an empty text counts as `{}`.
    pub fn args_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        if self.args.trim().is_empty() {
            return Ok(serde_json::Value::Object(Default::default()));
        }
        serde_json::from_str(&self.args)
    }

    /// The arguments as the text of a JSON object, `{}` when they are not one (cut off by the
    /// output limit): APIs that parse the calls of the history would refuse the whole request.
    pub fn args_object_text(&self) -> String {
        match self.args_json() {
            Ok(value) if value.is_object() => value.to_string(),
            _ => "{}".to_string(),
        }
    }

    /// The wire form of the call.
    pub fn info(&self) -> ToolCallInfo {
        ToolCallInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            args: self.args.clone(),
        }
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// What the model receives.
    pub output: String,
    /// Whether the call failed, was refused or did not run.
    pub is_error: bool,
    /// Images the model receives with the result (`read` of an image).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
}

impl Message {
    /// The images the message carries, in order: a user message's, or its tool results'.
    pub fn images(&self) -> impl Iterator<Item = &ImageRef> {
        let (user, results): (&[ImageRef], &[ToolResult]) = match self {
            Message::User { images, .. } => (images, &[]),
            Message::ToolResults { results } => (&[], results),
            _ => (&[], &[]),
        };
        user.iter().chain(results.iter().flat_map(|r| &r.images))
    }
}

impl ToolResult {
    /// What the model receives, or `(no output)` for nothing: some APIs refuse empty content.
    pub fn output_or_placeholder(&self) -> &str {
        if self.output.is_empty() {
            "(no output)"
        } else {
            &self.output
        }
    }
}

impl AssistantReply {
    /// The reply's text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The reply's visible reasoning joined.
    pub fn thinking(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Thinking { thinking, .. } => Some(thinking.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> Vec<&ToolCall> {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect()
    }
}
