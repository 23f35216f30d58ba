//! `previous_response_id` for the Responses API (docs/architecture.md#providers): a request
//! may name the last reply and send only the input items of the messages after it, but only
//! while the history still starts with exactly what that reply covered. Compaction, a rewind, a
//! fork, a restart or another model change that start, and the full input goes again.

use std::sync::Mutex;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::responses_reply::ReplyBuilder;
use super::sse::SseEvent;
use super::stream::StreamParser;
use super::{ProviderError, StreamDelta};
use crate::conversation::AssistantReply;

/// The last reply of a session's Responses calls, in memory only (a restart starts afresh).
#[derive(Debug, Default)]
pub(crate) struct Chain {
    last: Mutex<Option<Link>>,
}

/// What the last reply covered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    /// The id the server gave the reply.
    id: String,
    /// How many history messages its request and the reply itself stand for.
    covered: usize,
    /// The fingerprint of the model and of the input items of those messages.
    fingerprint: [u8; 32],
}

/// How a request continues the last reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Next {
    /// The reply to name as `previous_response_id`.
    pub(crate) id: String,
    /// The first message whose input items are sent.
    pub(crate) from: usize,
}

impl Chain {
    /// How a request of `model` whose messages map to `groups` (input items, one list per
    /// message) continues the last reply: `None` when there is none, or the history no longer
    /// starts with what it covered, or nothing came after it.
    pub(crate) fn next(&self, model: &str, groups: &[Vec<Value>]) -> Option<Next> {
        let last = self.lock().clone()?;
        let covered = groups.get(..last.covered)?;
        let newer = groups.len() > last.covered;
        (newer && fingerprint(model, covered.iter().flatten()) == last.fingerprint).then_some(
            Next {
                id: last.id,
                from: last.covered,
            },
        )
    }

    /// Remembers reply `id` to a request of `model` whose messages map to `groups`; the reply
    /// maps to `reply_items` and becomes the history's next message.
    pub(crate) fn remember(
        &self,
        id: String,
        model: &str,
        groups: &[Vec<Value>],
        reply_items: &[Value],
    ) {
        let items = groups.iter().flatten().chain(reply_items);
        *self.lock() = Some(Link {
            id,
            covered: groups.len() + 1,
            fingerprint: fingerprint(model, items),
        });
    }

    /// Forgets the last reply: the next request sends the full input.
    pub(crate) fn forget(&self) {
        *self.lock() = None;
    }

    /// The last reply, locked (a panic elsewhere leaves it usable: it is only ever replaced).
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Link>> {
        self.last.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A digest of `model` and `items`, each item as its JSON text.
fn fingerprint<'a>(model: &str, items: impl Iterator<Item = &'a Value>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(model.as_bytes());
    for item in items {
        hasher.update([0]);
        hasher.update(item.to_string().as_bytes());
    }
    hasher.finalize().into()
}

/// Whether `error` says the server no longer has the reply a request named.
pub(crate) fn previous_not_found(error: &ProviderError) -> bool {
    let (status, kind, message) = match error {
        ProviderError::Http {
            status,
            error_type,
            message,
            ..
        } => (Some(*status), error_type.as_deref(), message),
        ProviderError::Stream {
            error_type,
            message,
            ..
        } => (None, Some(error_type.as_str()), message),
        _ => return false,
    };
    if kind == Some("previous_response_not_found") {
        return true;
    }
    let message = message.to_ascii_lowercase();
    matches!(status, Some(400 | 404))
        && (message.contains("previous_response_id") || message.contains("previous response"))
}

/// A reply parser that also hands out the id the server gave the reply.
pub(crate) struct WithId<'a> {
    inner: ReplyBuilder,
    id: &'a mut Option<String>,
}

impl<'a> WithId<'a> {
    /// `inner`, putting the reply's id into `id` when the reply is whole.
    pub(crate) fn new(inner: ReplyBuilder, id: &'a mut Option<String>) -> WithId<'a> {
        WithId { inner, id }
    }
}

impl StreamParser for WithId<'_> {
    /// Applies one event to the inner parser.
    fn apply(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ProviderError> {
        self.inner.apply(event, on_delta)
    }

    /// The inner parser's reply, with its id taken.
    fn finish(self, complete: bool) -> Result<AssistantReply, ProviderError> {
        *self.id = self.inner.response_id().map(str::to_string);
        self.inner.finish(complete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn groups(n: usize) -> Vec<Vec<Value>> {
        (0..n).map(|i| vec![json!({"n": i})]).collect()
    }

    fn reply() -> Vec<Value> {
        vec![json!({"reply": 1})]
    }

    /// The groups of a history of `n` messages followed by the reply and `more` messages.
    fn after_reply(n: usize, more: usize) -> Vec<Vec<Value>> {
        let mut all = groups(n);
        all.push(reply());
        all.extend((0..more).map(|i| vec![json!({"more": i})]));
        all
    }

    #[test]
    fn a_request_after_the_reply_sends_only_the_newer_messages() {
        let chain = Chain::default();
        assert_eq!(chain.next("m", &groups(1)), None, "nothing to continue yet");
        chain.remember("resp_1".into(), "m", &groups(1), &reply());
        assert_eq!(
            chain.next("m", &after_reply(1, 1)),
            Some(Next {
                id: "resp_1".into(),
                from: 2
            })
        );
    }

    #[test]
    fn a_changed_history_or_model_sends_the_full_input() {
        let chain = Chain::default();
        chain.remember("resp_1".into(), "m", &groups(3), &reply());
        assert_eq!(
            chain.next("other", &after_reply(3, 1)),
            None,
            "another model"
        );
        assert_eq!(chain.next("m", &after_reply(3, 0)), None, "nothing newer");
        assert_eq!(chain.next("m", &groups(2)), None, "a rewind");
        let mut compacted = after_reply(3, 1);
        compacted[0] = vec![json!({"summary": true})];
        assert_eq!(chain.next("m", &compacted), None, "compaction");
        let mut edited_reply = after_reply(3, 1);
        edited_reply[3] = vec![json!({"reply": 2})];
        assert_eq!(
            chain.next("m", &edited_reply),
            None,
            "a reply kept otherwise"
        );
        chain.forget();
        assert_eq!(chain.next("m", &after_reply(3, 1)), None, "forgotten");
    }

    #[test]
    fn the_server_losing_the_previous_reply_is_recognised() {
        let http = |status, kind: Option<&str>, message: &str| ProviderError::Http {
            provider: "OpenAI Responses",
            status,
            error_type: kind.map(str::to_string),
            message: message.into(),
            retry_after: None,
        };
        assert!(previous_not_found(&http(
            400,
            Some("previous_response_not_found"),
            "Previous response with id 'resp_1' not found."
        )));
        assert!(previous_not_found(&http(
            404,
            None,
            "Previous response with id 'resp_1' not found."
        )));
        assert!(!previous_not_found(&http(
            400,
            Some("invalid_request_error"),
            "bad tools"
        )));
        assert!(!previous_not_found(&http(500, None, "previous response")));
    }
}
