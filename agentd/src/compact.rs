//! Compaction (docs/architecture.md#providers): when a history outgrows the model's context window,
//! its older part is summarised by the model into one message and the recent part (about 20k
//! tokens) is kept verbatim. The cut never separates a tool call from its result.

use tokio_util::sync::CancellationToken;

use crate::conversation::Message;
use crate::provider::{ModelRequest, Provider, ProviderError, ToolSpec};

/// Tokens of recent history kept verbatim.
pub(crate) const KEEP_RECENT_TOKENS: u64 = 20_000;
/// Compaction runs before a model call once the last prompt used this share of the window.
pub(crate) const THRESHOLD: f64 = 0.8;
/// The output limit of a summary.
const SUMMARY_TOKENS: u32 = 4096;

const SUMMARY_PROMPT: &str = "The conversation above is getting too long for the context window. \
Write a summary that lets you continue the work without it: the user's requests and goals, what \
you found (files, functions, facts), what you changed and why, commands run and their outcomes, \
decisions made, open problems and the next steps. Keep exact file paths, names and error \
messages. Do not call any tools; answer with the summary only.";

/// The context window of a model family, for models the configuration does not describe.
pub(crate) fn default_context_window(model: &str) -> u64 {
    // Local models: a common window; set `context_window` in the config for others.
    known_context_window(model).unwrap_or(32_768)
}

/// The context window of a known hosted model family; `None` for others (local models).
pub(crate) fn known_context_window(model: &str) -> Option<u64> {
    let model = model.to_ascii_lowercase();
    if model.contains("claude") {
        Some(200_000)
    } else if model.starts_with("gpt-4.1") {
        Some(1_047_576)
    } else if model.starts_with("gpt-5") {
        Some(400_000)
    } else if model.starts_with("gpt-4o") || model.starts_with("gpt-4-turbo") {
        Some(128_000)
    } else if model
        .strip_prefix('o')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    {
        Some(200_000)
    } else {
        None
    }
}

/// A rough token count of a message: a quarter of its JSON size, and its images by their size.
pub(crate) fn estimate(message: &Message) -> u64 {
    let text = serde_json::to_string(message).map_or(0, |s| s.len() as u64 / 4);
    text + message.images().map(image_tokens).sum::<u64>()
}

/// About what an image costs a model: a token per 750 pixels of at most 1.15 megapixels
/// (Anthropic's rule, which scales larger ones down; OpenAI's tiles come to much the same).
fn image_tokens(image: &protocol::ImageRef) -> u64 {
    (u64::from(image.width) * u64::from(image.height)).min(1_150_000) / 750
}

/// A rough token count of a history.
pub(crate) fn estimate_all(messages: &[Message]) -> u64 {
    messages.iter().map(estimate).sum()
}

/// Where the kept part of `messages` starts: the earliest index whose suffix fits in `keep`
/// tokens, moved back so that tool results stay with the reply that asked for them. `None`
/// when there is nothing older to summarise.
pub(crate) fn cut_point(messages: &[Message], keep: u64) -> Option<usize> {
    let mut kept = 0;
    let mut cut = messages.len();
    while cut > 0 {
        let size = estimate(&messages[cut - 1]);
        // The newest message is always kept, whatever its size.
        if kept + size > keep && cut < messages.len() {
            break;
        }
        kept += size;
        cut -= 1;
    }
    while cut > 0 && matches!(messages[cut], Message::ToolResults { .. }) {
        cut -= 1;
    }
    (cut > 0).then_some(cut)
}

/// Whether a history whose last prompt used `last_input` tokens should be compacted before the
/// next call to a model with a window of `window` tokens whose replies may take `reply` of it:
/// at 80% of the window, or earlier when that would leave no room for a reply (small windows).
pub(crate) fn over_threshold(last_input: u64, window: u64, reply: u64) -> bool {
    let room = window.saturating_sub(reply + REPLY_MARGIN);
    last_input as f64 >= window as f64 * THRESHOLD || last_input >= room
}

/// Tokens kept between the prompt and the reply's room.
const REPLY_MARGIN: u64 = 512;

/// Tokens of recent history kept verbatim with a window of `window` tokens: about 20k, and at
/// most a quarter of a small window.
pub(crate) fn keep_recent(window: u64) -> u64 {
    KEEP_RECENT_TOKENS.min(window / 4)
}

/// Asks the model to summarise `older`.
pub(crate) async fn summarize(
    provider: &Provider,
    model: &str,
    system: &str,
    tools: &[ToolSpec],
    older: &[Message],
    cancel: &CancellationToken,
) -> Result<String, ProviderError> {
    let mut messages = older.to_vec();
    messages.push(Message::User {
        text: SUMMARY_PROMPT.to_string(),
        delivery: protocol::Delivery::FollowUp,
        images: Vec::new(),
    });
    let request = ModelRequest {
        model,
        system,
        messages: &messages,
        // The summary is of what was said: images go as their labels.
        images: &crate::images::ImageData::none(),
        tools,
        max_tokens: SUMMARY_TOKENS,
        one_call: false,
    };
    let reply = provider.stream(request, &mut |_| {}, cancel).await?;
    let text = reply.text();
    if text.trim().is_empty() {
        return Err(ProviderError::Invalid(
            "the model gave an empty summary".to_string(),
        ));
    }
    Ok(text)
}

/// Whether a reply's tool calls are all answered within `messages` (for checks).
#[cfg(test)]
pub(crate) fn calls_answered(messages: &[Message]) -> bool {
    let mut open: Vec<&crate::conversation::ToolCall> = Vec::new();
    for message in messages {
        match message {
            Message::Assistant(reply) => {
                if !open.is_empty() {
                    return false;
                }
                open = reply.tool_calls();
            }
            Message::ToolResults { results } => {
                if results.len() != open.len()
                    || !open
                        .iter()
                        .all(|c| results.iter().any(|r| r.call_id == c.id))
                {
                    return false;
                }
                open.clear();
            }
            Message::User { .. } | Message::Summary { .. } | Message::Notice { .. } => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{AssistantReply, Block, ToolCall, ToolResult};
    use protocol::{Delivery, ModelStopReason, TokenUsage};

    fn user(text: &str) -> Message {
        Message::User {
            text: text.into(),
            delivery: Delivery::FollowUp,
            images: Vec::new(),
        }
    }

    fn call(id: &str) -> Message {
        Message::Assistant(AssistantReply {
            content: vec![Block::ToolCall(ToolCall {
                id: id.into(),
                name: "read".into(),
                args: "{}".into(),
            })],
            stop_reason: ModelStopReason::ToolUse,
            usage: TokenUsage::default(),
        })
    }

    #[test]
    fn an_image_counts_by_its_pixels() {
        let mut message = user("look");
        let plain = estimate(&message);
        if let Message::User { images, .. } = &mut message {
            images.push(protocol::ImageRef {
                hash: "0".repeat(64),
                media_type: "image/png".into(),
                size: 1,
                width: 1500,
                height: 1000,
                name: "shot.png".into(),
            });
        }
        // Its pixels, capped at 1.15 megapixels, and its ref in the JSON.
        assert!((plain + 1533..plain + 1633).contains(&estimate(&message)));
    }

    fn result(id: &str, size: usize) -> Message {
        Message::ToolResults {
            results: vec![ToolResult {
                call_id: id.into(),
                name: "read".into(),
                output: "x".repeat(size),
                is_error: false,
                images: Vec::new(),
            }],
        }
    }

    #[test]
    fn the_cut_never_separates_a_call_from_its_result() {
        let history = vec![
            user("start"),
            call("a"),
            result("a", 4000),
            call("b"),
            result("b", 400),
            user("next"),
        ];
        // A budget that would start the kept part at b's result moves back to b's call.
        let cut = cut_point(&history, 150).unwrap();
        assert!(
            matches!(history[cut], Message::Assistant(_)),
            "cut at {cut}"
        );
        assert!(calls_answered(&history[cut..]));
    }

    #[test]
    fn nothing_to_cut_when_everything_fits() {
        let history = vec![user("a"), call("a"), result("a", 10)];
        assert_eq!(cut_point(&history, 20_000), None);
    }

    #[test]
    fn model_families_have_windows() {
        assert_eq!(default_context_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(default_context_window("gpt-4o-mini"), 128_000);
        assert_eq!(default_context_window("o3"), 200_000);
        assert_eq!(default_context_window("qwen2.5-coder"), 32_768);
        assert!(over_threshold(160_000, 200_000, 8192));
        assert!(!over_threshold(100_000, 200_000, 8192));
    }

    #[test]
    fn a_small_window_compacts_before_a_reply_no_longer_fits() {
        // 80% of 8k is 6,553 tokens, but a 4k reply leaves room for only 3,584.
        assert!(over_threshold(3_600, 8_192, 4_096));
        assert!(!over_threshold(3_000, 8_192, 4_096));
        assert_eq!(keep_recent(8_192), 2_048);
        assert_eq!(keep_recent(200_000), KEEP_RECENT_TOKENS);
    }
}
