//! Fuzz targets for what the daemon decodes from outside: frames from clients, and both
//! providers' event streams with the reply assembled from them. Inputs are built from raw bytes
//! (`arbitrary`): sometimes raw, mostly shaped like the real thing and then bent (wrong types,
//! huge numbers, cut JSON, odd line endings, invalid UTF-8), so the parsers' deep paths are
//! reached. A target passes an input when it returns at all: an error is fine, a panic is not.
//!
//! Used by the bounded fuzz test in `cargo test` and by the long run in `benches/fuzz.rs`.

use arbitrary::{Result, Unstructured};
use serde_json::{Value, json};

use agentctl::client::frames as frame;
use agentd::provider::stream::decode;
use agentd::provider::{anthropic, openai};
use protocol::{
    ClientFrame, CreateSession, Delivery, Hello, Request, RequestId, RunOptions, ServerFrame,
    SessionId,
};

/// A fuzz target: a name, how to build an input, and the code under test.
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// Builds one input.
    pub input: fn(&mut Unstructured<'_>) -> Result<Vec<u8>>,
    /// Runs the code under test on one input.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: [Target; 3] = [
    Target {
        name: "frame decoder",
        input: frame_input,
        run: run_frame,
    },
    Target {
        name: "anthropic stream and reply",
        input: anthropic_input,
        run: run_anthropic,
    },
    Target {
        name: "openai stream and reply",
        input: openai_input,
        run: run_openai,
    },
];

fn run_frame(data: &[u8]) {
    for payload in [Some(data.to_vec()), read_payload(data)]
        .into_iter()
        .flatten()
    {
        if let Ok(value) = frame::decode::<ClientFrame>(&payload) {
            // Whatever decodes encodes back to the same value.
            let bytes = frame::encode(&value).expect("a decoded frame encodes");
            let again = frame::decode::<ClientFrame>(&bytes[frame::PREFIX_LEN..]);
            assert_eq!(again.ok().as_ref(), Some(&value));
        }
        let _ = frame::decode::<ServerFrame>(&payload);
    }
}

/// A whole frame read from `data` as the daemon reads one from a socket.
fn read_payload(data: &[u8]) -> Option<Vec<u8>> {
    futures::executor::block_on(frame::read_payload(&mut &data[..]))
        .ok()
        .flatten()
}

fn run_anthropic(data: &[u8]) {
    let _ = decode(anthropic::ReplyBuilder::default(), data, &mut |_| {});
}

fn run_openai(data: &[u8]) {
    let _ = decode(openai::ReplyBuilder::default(), data, &mut |_| {});
}

fn frame_input(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    if u.ratio(1, 8)? {
        return u.arbitrary();
    }
    let text: String = u.arbitrary()?;
    let request = match u.int_in_range(0..=5)? {
        0 => Request::ListSessions { after: None },
        1 => Request::Status,
        2 => Request::Send {
            session: SessionId(u.arbitrary()?),
            text,
            images: Vec::new(),
            delivery: if u.arbitrary()? {
                Delivery::Steer
            } else {
                Delivery::FollowUp
            },
            options: RunOptions {
                max_turns: u.arbitrary()?,
                env: vec![(u.arbitrary()?, u.arbitrary()?)],
                ..RunOptions::default()
            },
        },
        3 => Request::CreateSession(CreateSession {
            cwd: text,
            model: u.arbitrary()?,
            provider: None,
            mode: None,
            max_turns: u.arbitrary()?,
            title: u.arbitrary()?,
            env: vec![(u.arbitrary()?, u.arbitrary()?)],
            worktree: false,
        }),
        4 => Request::Subscribe {
            session: SessionId(text),
            from_seq: u.arbitrary()?,
        },
        _ => Request::GetHistory {
            session: SessionId(text),
            from_seq: u.arbitrary()?,
        },
    };
    let value = if u.ratio(1, 6)? {
        ClientFrame::Hello(Hello {
            protocol_version: u.arbitrary()?,
            client: u.arbitrary()?,
        })
    } else {
        ClientFrame::Request {
            id: RequestId(u.arbitrary()?),
            request,
        }
    };
    let mut bytes = frame::encode(&value).unwrap_or_default();
    bend_bytes(u, &mut bytes)?;
    Ok(bytes)
}

/// Flips, cuts, inserts and overwrites a few bytes (or none).
fn bend_bytes(u: &mut Unstructured<'_>, bytes: &mut Vec<u8>) -> Result<()> {
    for _ in 0..u.int_in_range(0..=3)? {
        if bytes.is_empty() {
            break;
        }
        let at = u.choose_index(bytes.len())?;
        match u.int_in_range(0..=3)? {
            0 => bytes[at] ^= 1 << u.int_in_range(0..=7)?,
            1 => bytes.truncate(at),
            2 => bytes.insert(at, u.arbitrary()?),
            _ => bytes[at] = u.arbitrary()?,
        }
    }
    Ok(())
}

/// A JSON value that is sometimes of the wrong kind.
fn some_value(u: &mut Unstructured<'_>, usual: Value) -> Result<Value> {
    Ok(match u.int_in_range(0..=11)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<i64>()?),
        2 => json!(u.arbitrary::<u64>()?),
        3 => json!(u.arbitrary::<f64>()?.to_string()),
        4 => json!([usual]),
        5 => json!({"nested": usual}),
        6 => json!(u.arbitrary::<String>()?),
        _ => usual,
    })
}

fn small_index(u: &mut Unstructured<'_>) -> Result<Value> {
    let index = if u.ratio(1, 10)? {
        u.arbitrary::<u64>()?
    } else {
        u.int_in_range(0..=3)?
    };
    some_value(u, json!(index))
}

fn text(u: &mut Unstructured<'_>) -> Result<Value> {
    let text: String = u.arbitrary()?;
    some_value(u, json!(text))
}

/// Server-sent events with `event:` names and data, in odd but legal shapes, sometimes bent.
fn sse(u: &mut Unstructured<'_>, events: Vec<(Option<&str>, String)>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let newline: &[u8] = match u.int_in_range(0..=3)? {
        0 => b"\r\n",
        1 => b"\r",
        _ => b"\n",
    };
    for (name, data) in events {
        if u.ratio(1, 20)? {
            out.extend_from_slice(b": keep-alive");
            out.extend_from_slice(newline);
        }
        if let Some(name) = name {
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(newline);
        }
        let mut data = data.into_bytes();
        if u.ratio(1, 25)? && !data.is_empty() {
            // A JSON document cut short, or a stray byte in it.
            let at = u.choose_index(data.len())?;
            if u.arbitrary()? {
                data.truncate(at);
            } else {
                data.insert(at, u.arbitrary()?);
            }
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&data);
        out.extend_from_slice(newline);
        out.extend_from_slice(newline);
    }
    if u.ratio(1, 10)? {
        let junk: Vec<u8> = u.arbitrary()?;
        out.extend_from_slice(&junk);
    }
    Ok(out)
}

fn anthropic_input(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    if u.ratio(1, 10)? {
        return u.arbitrary();
    }
    let mut events = Vec::new();
    for _ in 0..u.int_in_range(0..=24)? {
        let (name, data) = match u.int_in_range(0..=9)? {
            0 => (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": some_value(u, json!(10))?, "output_tokens": some_value(u, json!(1))?, "cache_read_input_tokens": some_value(u, json!(5))?}}}),
            ),
            1 => {
                let kind = *u.choose(&[
                    "text",
                    "thinking",
                    "tool_use",
                    "redacted_thinking",
                    "server_tool_use",
                    "x",
                ])?;
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": small_index(u)?, "content_block": {"type": some_value(u, json!(kind))?, "text": text(u)?, "thinking": text(u)?, "id": text(u)?, "name": text(u)?, "data": text(u)?, "input": {}}}),
                )
            }
            2..=4 => {
                let kind = *u.choose(&[
                    "text_delta",
                    "thinking_delta",
                    "input_json_delta",
                    "signature_delta",
                    "citations_delta",
                ])?;
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": small_index(u)?, "delta": {"type": some_value(u, json!(kind))?, "text": text(u)?, "thinking": text(u)?, "partial_json": text(u)?, "signature": text(u)?}}),
                )
            }
            5 => (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": small_index(u)?}),
            ),
            6 => {
                let reason = *u.choose(&[
                    "end_turn",
                    "tool_use",
                    "max_tokens",
                    "stop_sequence",
                    "refusal",
                ])?;
                (
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": some_value(u, json!(reason))?}, "usage": {"output_tokens": some_value(u, json!(7))?}}),
                )
            }
            7 => ("message_stop", json!({"type": "message_stop"})),
            8 => ("ping", json!({"type": "ping"})),
            _ => (
                "error",
                json!({"type": "error", "error": {"type": text(u)?, "message": text(u)?}}),
            ),
        };
        let name = if u.ratio(1, 15)? { None } else { Some(name) };
        events.push((name, data.to_string()));
    }
    sse(u, events)
}

fn openai_input(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    if u.ratio(1, 10)? {
        return u.arbitrary();
    }
    let mut events = Vec::new();
    for _ in 0..u.int_in_range(0..=24)? {
        let data = match u.int_in_range(0..=9)? {
            0 => "[DONE]".to_string(),
            1 => json!({"error": {"type": text(u)?, "message": text(u)?, "code": text(u)?}}).to_string(),
            2 => json!({"choices": [], "usage": {"prompt_tokens": some_value(u, json!(10))?, "completion_tokens": some_value(u, json!(3))?, "prompt_tokens_details": {"cached_tokens": some_value(u, json!(4))?}}}).to_string(),
            3..=5 => json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": small_index(u)?, "id": text(u)?, "type": "function", "function": {"name": text(u)?, "arguments": text(u)?}}]}, "finish_reason": null}]}).to_string(),
            6 => {
                let reason = *u.choose(&["stop", "length", "tool_calls", "function_call", "content_filter"])?;
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": some_value(u, json!(reason))?}]}).to_string()
            }
            _ => {
                let choices = json!([{"index": 0, "delta": {"role": "assistant", "content": text(u)?, "reasoning_content": text(u)?}}]);
                json!({"choices": some_value(u, choices)?}).to_string()
            }
        };
        events.push((None, data));
    }
    sse(u, events)
}
