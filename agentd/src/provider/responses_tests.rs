//! The Responses wire format's request bodies: input items, images, profile options.

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

/// The body of a stateless request: the whole history as input.
fn full_body(request: &ModelRequest<'_>, options: &ResponsesOptions) -> Value {
    let input = input_groups(request.messages, request.images).concat();
    request_body(request, options, input)
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
    let body = full_body(&request(&messages, &[]), &ResponsesOptions::default());
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
        previous_response_id: false,
    };
    let body = full_body(&request(&[], &[]), &options);
    assert_eq!(body["store"], true);
    assert!(body.get("include").is_none());
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
}

#[test]
fn images_go_as_input_image_parts_in_the_message_and_the_call_output() {
    use crate::provider::images::tests::{data, image, sent};
    let (shot, read, gone) = (image("shot"), image("read"), image("gone"));
    let messages = vec![
        Message::User {
            text: "what is this?".into(),
            delivery: Delivery::FollowUp,
            images: vec![shot.clone()],
        },
        Message::ToolResults {
            results: vec![
                ToolResult {
                    call_id: "call_1".into(),
                    name: "read".into(),
                    output: "a.png".into(),
                    is_error: false,
                    images: vec![read.clone(), gone.clone()],
                },
                ToolResult {
                    call_id: "call_2".into(),
                    name: "read".into(),
                    output: "text".into(),
                    is_error: false,
                    images: Vec::new(),
                },
            ],
        },
    ];
    let data = data(&[&shot, &read]);
    let input = sent(input_groups(&messages, &data).concat(), &data);
    let image =
        json!({"type": "input_image", "image_url": "data:image/png;base64,QUJD", "detail": "auto"});
    assert_eq!(
        input[0],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is this?"}, image,
        ]})
    );
    assert_eq!(
        input[1],
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "a.png"},
            image,
            {"type": "input_text", "text": "[image: gone.png 2×1]"},
        ]})
    );
    assert_eq!(input[2]["output"], "text");
}
