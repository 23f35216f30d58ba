//! The history as Chat Completions messages. A message with images carries its content as an
//! array of parts (`text`, then `image_url` data URLs); one without keeps the plain string. A
//! `tool` message cannot carry images, so the images of a batch's results follow its `tool`
//! messages as one `user` message that names the calls (docs/architecture.md#images).

use serde_json::{Value, json};

use super::images;
use crate::conversation::{Message, ToolResult};
use crate::images::ImageData;

/// Maps the history to Chat Completions messages, with the images `images` holds.
pub(super) fn messages_json(history: &[Message], images: &ImageData) -> Vec<Value> {
    images.new_request();
    let mut out = Vec::new();
    for message in history {
        match message {
            Message::User {
                text,
                images: attached,
                ..
            } => out.push(user_message(text, images::chat_parts(attached, images))),
            Message::Notice { text } => out.push(json!({"role": "user", "content": text})),
            Message::Summary { text } => out.push(json!({
                "role": "user",
                "content": format!("Summary of the earlier conversation:\n\n{text}"),
            })),
            Message::ToolResults { results } => {
                for result in results {
                    let content = result.output_or_placeholder();
                    out.push(
                        json!({"role": "tool", "tool_call_id": result.call_id, "content": content}),
                    );
                }
                if let Some(message) = results_images(results, images) {
                    out.push(message);
                }
            }
            Message::Assistant(reply) => {
                let calls: Vec<Value> = reply
                    .tool_calls()
                    .iter()
                    .map(|call| {
                        let arguments = call.args_object_text();
                        json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
                    })
                    .collect();
                // Some servers reject `null` content, so an answer of only tool calls sends "".
                let mut value = json!({"role": "assistant", "content": reply.text()});
                if !calls.is_empty() {
                    value["tool_calls"] = Value::Array(calls);
                }
                out.push(value);
            }
        }
    }
    out
}

/// A user message of `text` and `parts` (the images): the plain string when there are none.
fn user_message(text: &str, parts: Vec<Value>) -> Value {
    if parts.is_empty() {
        return json!({"role": "user", "content": text});
    }
    // A message of images alone needs no empty text part.
    let mut content: Vec<Value> = (!text.is_empty())
        .then(|| json!({"type": "text", "text": text}))
        .into_iter()
        .collect();
    content.extend(parts);
    json!({"role": "user", "content": content})
}

/// The user message that carries the images of a batch's results, if any has images.
fn results_images(results: &[ToolResult], images: &ImageData) -> Option<Value> {
    let with_images: Vec<&ToolResult> = results.iter().filter(|r| !r.images.is_empty()).collect();
    if with_images.is_empty() {
        return None;
    }
    let calls: Vec<String> = with_images
        .iter()
        .map(|r| format!("{} ({})", r.name, r.call_id))
        .collect();
    let text = format!(
        "The images returned by the tool call{} {}:",
        if calls.len() == 1 { "" } else { "s" },
        calls.join(", ")
    );
    let parts = with_images
        .iter()
        .flat_map(|r| images::chat_parts(&r.images, images))
        .collect();
    Some(user_message(&text, parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{AssistantReply, Block, ToolCall};
    use crate::provider::images::tests::{data, image, sent};
    use protocol::{Delivery, ModelStopReason, TokenUsage};

    fn result(call_id: &str, images: Vec<protocol::ImageRef>) -> ToolResult {
        ToolResult {
            call_id: call_id.into(),
            name: "read".into(),
            output: format!("{call_id} output"),
            is_error: false,
            images,
        }
    }

    #[test]
    fn an_assistant_message_of_only_tool_calls_sends_empty_content() {
        let reply = AssistantReply {
            content: vec![Block::ToolCall(ToolCall {
                id: "c".into(),
                name: "read".into(),
                args: "{}".into(),
            })],
            stop_reason: ModelStopReason::ToolUse,
            usage: TokenUsage::default(),
        };
        let messages = messages_json(&[Message::Assistant(reply)], &ImageData::none());
        assert_eq!(messages[0]["content"], "");
        assert_eq!(messages[0]["tool_calls"][0]["function"]["arguments"], "{}");
    }

    #[test]
    fn a_user_message_with_images_is_an_array_and_one_without_a_string() {
        let shot = image("shot");
        let user = |images| Message::User {
            text: "look".into(),
            delivery: Delivery::FollowUp,
            images,
        };
        let history = [user(vec![shot.clone()]), user(Vec::new())];
        let data = data(&[&shot]);
        let messages = sent(messages_json(&history, &data), &data);
        assert_eq!(
            messages[0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
            ]})
        );
        assert_eq!(messages[1], json!({"role": "user", "content": "look"}));
    }

    #[test]
    fn result_images_follow_the_tool_messages_as_one_user_message() {
        let (a, b) = (image("a"), image("b"));
        let history = [Message::ToolResults {
            results: vec![
                result("call_1", vec![a.clone()]),
                result("call_2", Vec::new()),
                result("call_3", vec![b.clone()]),
            ],
        }];
        let data = data(&[&a]);
        let messages = sent(messages_json(&history, &data), &data);
        assert_eq!(messages.len(), 4);
        assert_eq!(
            messages[0],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "call_1 output"})
        );
        assert_eq!(messages[2]["role"], "tool");
        assert_eq!(
            messages[3],
            json!({"role": "user", "content": [
                {"type": "text", "text": "The images returned by the tool calls read (call_1), read (call_3):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                {"type": "text", "text": "[image: b.png 2×1]"},
            ]})
        );
        let plain = [Message::ToolResults {
            results: vec![result("call_1", Vec::new())],
        }];
        assert_eq!(messages_json(&plain, &ImageData::none()).len(), 1);
    }
}
