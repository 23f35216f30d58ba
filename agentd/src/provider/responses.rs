//! OpenAI's Responses API, `POST {base}/responses` with `stream: true`
//! (docs/architecture.md#providers). Stateless: every request carries the whole conversation as
//! `input` items, `store: false` unless the profile says otherwise, and the reasoning items of
//! earlier replies go back exactly as they came (with their encrypted content). Only when the
//! profile asks for `previous_response_id` does a request name the reply before it and send
//! what is newer. The server is asked about its models as for Chat Completions.

use std::sync::Arc;

use protocol::ImageRef;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::endpoint::Format;
use super::openai::{self, OpenAi};
use super::responses_chain::{Chain, Next, WithId, previous_not_found};
use super::responses_reply::{NAME, ReplyBuilder};
use super::{ModelRequest, ProviderError, StreamDelta, ToolSpec, images};
use crate::conversation::{AssistantReply, Block, Message, ToolResult};
use crate::images::ImageData;

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
    /// Whether a request names the reply before it (`previous_response_id`) and sends only
    /// what is newer, when the history still starts with what that reply covered.
    pub(crate) previous_response_id: bool,
}

/// A client of a Responses endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Responses {
    /// The server, with its key, as a Chat Completions client knows it: models are listed and
    /// requests posted the same way.
    server: OpenAi,
    options: ResponsesOptions,
    /// The last reply a request may name: the session's, shared by its runs.
    chain: Arc<Chain>,
}

impl Responses {
    /// A client of `server`'s Responses API with the profile's `options`.
    pub(crate) fn new(server: OpenAi, options: ResponsesOptions) -> Responses {
        Responses {
            server,
            options,
            chain: Arc::new(Chain::default()),
        }
    }

    /// Continues the replies of `chain` (the session's, kept from run to run) rather than a
    /// chain of its own.
    pub(crate) fn continue_chain(&mut self, chain: Arc<Chain>) {
        self.chain = chain;
    }

    /// The server, for the questions both of OpenAI's APIs answer alike (its models, whether
    /// it is a local one).
    pub(crate) fn server(&self) -> &OpenAi {
        &self.server
    }

    /// The profile's options.
    #[cfg(test)]
    pub(crate) fn options(&self) -> &ResponsesOptions {
        &self.options
    }

    /// Streams one reply (see [`super::Provider::stream`]). With `previous_response_id`
    /// configured, a request continues the last reply where the history allows, and once more
    /// with the full input when the server no longer has that reply.
    pub(crate) async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let groups = input_groups(request.messages, request.images);
        // A reply cut at its first call differs from what the server kept: no chain then.
        let chaining = self.options.previous_response_id && !request.one_call;
        let next = chaining
            .then(|| self.chain.next(request.model, &groups))
            .flatten();
        let mut answer = self
            .post(&request, &groups, next.as_ref(), on_delta, cancel)
            .await;
        if next.is_some() && answer.as_ref().is_err_and(previous_not_found) {
            self.chain.forget();
            answer = self.post(&request, &groups, None, on_delta, cancel).await;
        }
        let (reply, id) = answer?;
        if chaining {
            let reply_items: Vec<Value> = reply.content.iter().filter_map(reply_item).collect();
            match id {
                Some(id) => self
                    .chain
                    .remember(id, request.model, &groups, &reply_items),
                None => self.chain.forget(),
            }
        }
        Ok(reply)
    }

    /// Posts one request: the input items from `next.from` on, naming `next.id`, or all of
    /// them. The reply and the id the server gave it.
    async fn post(
        &self,
        request: &ModelRequest<'_>,
        groups: &[Vec<Value>],
        next: Option<&Next>,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        cancel: &CancellationToken,
    ) -> Result<(AssistantReply, Option<String>), ProviderError> {
        let from = next.map_or(0, |n| n.from);
        let input = groups.iter().skip(from).flatten().cloned().collect();
        let mut body = request_body(request, &self.options, input);
        if let Some(next) = next {
            body["previous_response_id"] = json!(next.id);
        }
        let mut id = None;
        let parser = WithId::new(ReplyBuilder::new(request.one_call), &mut id);
        let post = openai::Post {
            format: &FORMAT,
            path: "responses",
            body,
            images: request.images,
        };
        let reply = self
            .server
            .post_stream(post, parser, on_delta, cancel)
            .await?;
        Ok((reply, id))
    }
}

/// The JSON body of a request with `input`.
pub(crate) fn request_body(
    request: &ModelRequest<'_>,
    options: &ResponsesOptions,
    input: Vec<Value>,
) -> Value {
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "store": options.store,
        "instructions": request.system,
        "input": input,
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

/// A user message item of `text` and the images `images` holds of `attached`.
fn user_item(text: &str, attached: &[ImageRef], images: &ImageData) -> Value {
    let mut content = images::responses_parts(attached, images);
    // A message of images alone needs no empty text part; otherwise the text comes first.
    if !text.is_empty() || content.is_empty() {
        content.insert(0, json!({"type": "input_text", "text": text}));
    }
    json!({"type": "message", "role": "user", "content": content})
}

/// A tool result as a `function_call_output` item: its output a string, or an array of the
/// text and the images when the result has images.
fn output_item(result: &ToolResult, images: &ImageData) -> Value {
    let text = result.output_or_placeholder();
    let output = if result.images.is_empty() {
        json!(text)
    } else {
        let mut parts = vec![json!({"type": "input_text", "text": text})];
        parts.extend(images::responses_parts(&result.images, images));
        Value::Array(parts)
    };
    json!({"type": "function_call_output", "call_id": result.call_id, "output": output})
}

/// The history as `input` items, one list per message, in order.
pub(crate) fn input_groups(history: &[Message], images: &ImageData) -> Vec<Vec<Value>> {
    images.new_request();
    history
        .iter()
        .map(|message| match message {
            Message::User {
                text,
                images: attached,
                ..
            } => vec![user_item(text, attached, images)],
            Message::Notice { text } => vec![user_item(text, &[], images)],
            Message::Summary { text } => vec![user_item(
                &format!("Summary of the earlier conversation:\n\n{text}"),
                &[],
                images,
            )],
            Message::ToolResults { results } => {
                results.iter().map(|r| output_item(r, images)).collect()
            }
            Message::Assistant(reply) => reply.content.iter().filter_map(reply_item).collect(),
        })
        .collect()
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
#[path = "responses_tests.rs"]
mod tests;
