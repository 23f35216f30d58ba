//! The Anthropic wire format's request bodies and stream assembly.

use super::*;
use protocol::Delivery;

fn event(data: Value) -> SseEvent {
    SseEvent {
        event: data["type"].as_str().unwrap().to_string(),
        data: data.to_string(),
    }
}

#[test]
fn a_tool_call_is_assembled_from_json_pieces() {
    let mut builder = ReplyBuilder::default();
    let mut deltas = Vec::new();
    let mut sink = |d| deltas.push(d);
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 2, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Reading."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
    ];
    for e in events {
        assert!(!builder.apply(event(e), &mut sink).unwrap());
    }
    assert!(
        builder
            .apply(event(json!({"type": "message_stop"})), &mut sink)
            .unwrap()
    );
    let reply = builder.build();
    assert_eq!(reply.text(), "Reading.");
    assert_eq!(
        reply.tool_calls()[0].args_json().unwrap(),
        json!({"path": "a"})
    );
    assert_eq!(reply.stop_reason, ModelStopReason::ToolUse);
    assert_eq!(
        reply.usage,
        TokenUsage {
            input: 10,
            output: 20,
            cache_read: 4,
            cache_write: 2
        }
    );
    assert_eq!(deltas, vec![StreamDelta::Text("Reading.".into())]);
}

#[test]
fn tool_results_and_a_steer_merge_into_one_user_message() {
    let call = ToolCall {
        id: "t1".into(),
        name: "read".into(),
        args: "{\"path\":\"a\"}".into(),
    };
    let history = vec![
        Message::User {
            text: "go".into(),
            delivery: Delivery::FollowUp,
            images: Vec::new(),
        },
        Message::Assistant(AssistantReply {
            content: vec![Block::ToolCall(call)],
            stop_reason: ModelStopReason::ToolUse,
            usage: TokenUsage::default(),
        }),
        Message::ToolResults {
            results: vec![crate::conversation::ToolResult {
                call_id: "t1".into(),
                name: "read".into(),
                output: "x".into(),
                is_error: false,
                images: Vec::new(),
            }],
        },
        Message::User {
            text: "also check b".into(),
            delivery: Delivery::Steer,
            images: Vec::new(),
        },
    ];
    let messages = messages_json(&history, &ImageData::none());
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][1]["text"], "also check b");
}

#[test]
fn one_call_per_reply_ends_the_reply_at_a_second_call() {
    let mut builder = ReplyBuilder {
        one_call: true,
        ..ReplyBuilder::default()
    };
    let mut sink = |_| {};
    let call = |i: u64, id: &str| json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": "read", "input": {}}});
    let piece = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"a\"}"}});
    assert!(!builder.apply(event(call(0, "toolu_1")), &mut sink).unwrap());
    assert!(!builder.apply(event(piece), &mut sink).unwrap());
    assert!(builder.apply(event(call(1, "toolu_2")), &mut sink).unwrap());
    let reply = builder.build();
    assert_eq!(reply.tool_calls().len(), 1);
    assert_eq!(reply.stop_reason, ModelStopReason::ToolUse);
}

#[test]
fn images_go_before_the_text_and_into_the_tool_result() {
    use crate::provider::images::tests::{data, image, sent};
    let (shot, gone, read) = (image("shot"), image("gone"), image("read"));
    let history = vec![
        Message::User {
            text: "what is this?".into(),
            delivery: Delivery::FollowUp,
            images: vec![shot.clone(), gone.clone()],
        },
        Message::Assistant(AssistantReply {
            content: vec![Block::ToolCall(ToolCall {
                id: "t1".into(),
                name: "read".into(),
                args: "{\"path\":\"a.png\"}".into(),
            })],
            stop_reason: ModelStopReason::ToolUse,
            usage: TokenUsage::default(),
        }),
        Message::ToolResults {
            results: vec![crate::conversation::ToolResult {
                call_id: "t1".into(),
                name: "read".into(),
                output: "a.png".into(),
                is_error: false,
                images: vec![read.clone()],
            }],
        },
    ];
    let data = data(&[&shot, &read]);
    let messages = sent(messages_json(&history, &data), &data);
    let source = json!({"type": "base64", "media_type": "image/png", "data": "QUJD"});
    assert_eq!(
        messages[0]["content"],
        json!([
            {"type": "image", "source": source},
            {"type": "text", "text": "[image: gone.png 2×1]"},
            {"type": "text", "text": "what is this?"},
        ])
    );
    assert_eq!(
        messages[2]["content"][0]["content"],
        json!([{"type": "text", "text": "a.png"}, {"type": "image", "source": source}])
    );
}
