use serde_json::json;

use super::*;
use crate::provider::stream;

fn event(value: Value) -> String {
    format!(
        "event: {}\ndata: {value}\n\n",
        value["type"].as_str().unwrap()
    )
}

fn completed(usage: Value) -> String {
    event(
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": usage}}),
    )
}

fn decode(body: &str, one_call: bool) -> (Result<AssistantReply, ProviderError>, Vec<StreamDelta>) {
    let mut deltas = Vec::new();
    let reply = stream::decode(ReplyBuilder::new(one_call), body.as_bytes(), &mut |d| {
        deltas.push(d)
    });
    (reply, deltas)
}

/// A reply with reasoning, text and two calls, as the API streams it.
fn reasoning_text_and_calls() -> String {
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan. Then read."}], "encrypted_content": "gAAAA"});
    let mut body = event(json!({"type": "response.created", "response": {"id": "resp_1"}}));
    body += &event(
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
    );
    body += &event(
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Plan."}),
    );
    body += &event(
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "Then read."}),
    );
    body +=
        &event(json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}));
    body += &event(
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "role": "assistant", "content": []}}),
    );
    for piece in ["Let me ", "look."] {
        body += &event(
            json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": piece}),
        );
    }
    for (index, id, name, args) in [
        (2, "call_a", "read", ["{\"pa", "th\":\"a\"}"]),
        (3, "call_b", "glob", ["{\"pattern\"", ":\"*\"}"]),
    ] {
        body += &event(
            json!({"type": "response.output_item.added", "output_index": index, "item": {"type": "function_call", "id": "fc", "call_id": id, "name": name, "arguments": ""}}),
        );
        for piece in args {
            body += &event(
                json!({"type": "response.function_call_arguments.delta", "output_index": index, "delta": piece}),
            );
        }
        let whole = args.concat();
        body += &event(
            json!({"type": "response.function_call_arguments.done", "output_index": index, "arguments": whole}),
        );
        body += &event(
            json!({"type": "response.output_item.done", "output_index": index, "item": {"type": "function_call", "id": "fc", "call_id": id, "name": name, "arguments": whole}}),
        );
    }
    body += &completed(
        json!({"input_tokens": 120, "output_tokens": 30, "input_tokens_details": {"cached_tokens": 100}}),
    );
    body
}

#[test]
fn reasoning_text_and_calls_are_assembled_in_output_order() {
    let (reply, deltas) = decode(&reasoning_text_and_calls(), false);
    let reply = reply.unwrap();
    assert_eq!(reply.thinking(), "Plan.\n\nThen read.");
    assert_eq!(reply.text(), "Let me look.");
    let calls = reply.tool_calls();
    let read = ToolCall {
        id: "call_a".into(),
        name: "read".into(),
        args: "{\"path\":\"a\"}".into(),
    };
    assert_eq!(*calls[0], read);
    assert_eq!(calls[1].args, "{\"pattern\":\"*\"}");
    assert_eq!(reply.stop_reason, ModelStopReason::ToolUse);
    assert_eq!(
        reply.content[1],
        Block::ProviderItem {
            item: json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan. Then read."}], "encrypted_content": "gAAAA"})
        }
    );
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Plan.".into()),
            StreamDelta::Thinking("\n\nThen read.".into()),
            StreamDelta::Text("Let me ".into()),
            StreamDelta::Text("look.".into()),
        ]
    );
}

#[test]
fn usage_counts_cached_input_apart() {
    let (reply, _) = decode(&reasoning_text_and_calls(), false);
    assert_eq!(
        reply.unwrap().usage,
        TokenUsage {
            input: 20,
            output: 30,
            cache_read: 100,
            cache_write: 0
        }
    );
}

#[test]
fn a_one_call_reply_ends_at_its_second_call() {
    let (reply, _) = decode(&reasoning_text_and_calls(), true);
    let reply = reply.unwrap();
    assert_eq!(reply.tool_calls().len(), 1);
    assert_eq!(reply.tool_calls()[0].args, "{\"path\":\"a\"}");
    assert_eq!(reply.stop_reason, ModelStopReason::ToolUse);
}

#[test]
fn a_stream_without_completion_is_broken() {
    let body =
        event(json!({"type": "response.output_text.delta", "output_index": 0, "delta": "par"}));
    let (reply, _) = decode(&body, false);
    assert!(matches!(reply, Err(ProviderError::Broken(_))));
}

#[test]
fn an_incomplete_reply_at_the_output_limit_is_truncated() {
    let mut body =
        event(json!({"type": "response.output_text.delta", "output_index": 0, "delta": "cut"}));
    body += &event(
        json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 5, "output_tokens": 9}}}),
    );
    let (reply, _) = decode(&body, false);
    let reply = reply.unwrap();
    assert_eq!(reply.stop_reason, ModelStopReason::MaxTokens);
    assert_eq!(reply.text(), "cut");
}

#[test]
fn failures_in_the_stream_are_provider_errors() {
    let failed = event(
        json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}}}),
    );
    let (reply, _) = decode(&failed, false);
    let error = reply.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Stream {
            provider: NAME,
            error_type: "server_error".into(),
            message: "boom".into()
        }
    );
    assert!(error.is_transient());
    let refused = event(
        json!({"type": "error", "code": "invalid_prompt", "message": "bad input", "param": null}),
    );
    let (reply, _) = decode(&refused, false);
    let error = reply.unwrap_err();
    assert!(
        matches!(&error, ProviderError::Stream { error_type, .. } if error_type == "invalid_prompt")
    );
    assert!(!error.is_transient());
}

#[test]
fn a_message_that_arrived_only_whole_keeps_its_text() {
    let mut body = event(
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All at once."}]}}),
    );
    body += &completed(json!({"input_tokens": 1, "output_tokens": 1}));
    let (reply, _) = decode(&body, false);
    let reply = reply.unwrap();
    assert_eq!(reply.text(), "All at once.");
    assert_eq!(reply.stop_reason, ModelStopReason::EndTurn);
}
