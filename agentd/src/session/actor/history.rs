//! The session's history: the messages the model sees, their generation (it goes up with every
//! compaction), and compaction asked for or under way.

use std::sync::Arc;

use protocol::{ErrorCode, ErrorInfo};
use tokio_util::sync::CancellationToken;

use crate::conversation::{Message, ToolCall};

/// The messages the model sees, and their compaction.
#[derive(Default)]
pub(super) struct History {
    /// The messages, shared with the run's turn input (not copied per turn).
    messages: Arc<Vec<Message>>,
    /// Goes up with every compaction: a summary of an older history is not applied.
    generation: u64,
    /// A user asked for compaction while a run was going: it runs before the next model call.
    compact_requested: bool,
    /// A compaction a client asked for, under way: cancelling it stops it.
    compaction: Option<CancellationToken>,
}

impl History {
    /// Appends a message.
    pub(super) fn push(&mut self, message: Message) {
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// The messages, shared.
    pub(super) fn shared(&self) -> Arc<Vec<Message>> {
        self.messages.clone()
    }

    /// The messages.
    pub(super) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// How many messages there are.
    pub(super) fn len(&self) -> usize {
        self.messages.len()
    }

    /// The generation of the history as it stands.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// The prompt tokens of the last reply, for the compaction threshold.
    pub(super) fn last_input(&self) -> u64 {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant(reply) => Some(reply.usage.total_input()),
                _ => None,
            })
            .unwrap_or(0)
    }

    /// The text of the last reply (empty when there is none).
    pub(super) fn last_reply_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant(reply) => Some(reply.text()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// The tool calls of the last message, when it is a reply.
    pub(super) fn last_calls(&self) -> Vec<ToolCall> {
        match self.messages.last() {
            Some(Message::Assistant(reply)) => reply.tool_calls().into_iter().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The estimated tokens of the whole history.
    pub(super) fn tokens(&self) -> u64 {
        crate::compact::estimate_all(&self.messages)
    }

    /// How many messages a summary of the first `cut` messages of the history of `generation`
    /// keeps after it; refused when the history was compacted meanwhile.
    pub(super) fn kept_after(&self, cut: usize, generation: u64) -> Result<usize, ErrorInfo> {
        if generation != self.generation || cut > self.messages.len() {
            return Err(ErrorInfo::new(
                ErrorCode::Busy,
                "the history was compacted meanwhile, so this summary is out of date and was dropped",
            ));
        }
        Ok(self.messages.len() - cut)
    }

    /// Replaces the history by `summary` followed by its last `keep_last` messages; a
    /// compaction asked for is done.
    pub(super) fn compacted(&mut self, summary: String, keep_last: usize) {
        let keep_from = self.messages.len().saturating_sub(keep_last);
        let kept = self.messages.get(keep_from..).unwrap_or_default().to_vec();
        self.messages = Arc::new(
            std::iter::once(Message::Summary { text: summary })
                .chain(kept)
                .collect(),
        );
        self.generation += 1;
        self.compact_requested = false;
    }

    /// A user asked for compaction while a run goes: it runs before the run's next model call.
    pub(super) fn request_compaction(&mut self) {
        self.compact_requested = true;
    }

    /// Whether a user asked for compaction.
    pub(super) fn compaction_requested(&self) -> bool {
        self.compact_requested
    }

    /// Whether a compaction a client asked for is under way.
    pub(super) fn compacting(&self) -> bool {
        self.compaction.is_some()
    }

    /// A compaction a client asked for begins; `cancel` stops it.
    pub(super) fn begin_compaction(&mut self, cancel: CancellationToken) {
        self.compaction = Some(cancel);
    }

    /// The compaction a client asked for came to an end.
    pub(super) fn end_compaction(&mut self) {
        self.compaction = None;
    }

    /// Cancels the compaction under way; whether there was one.
    pub(super) fn cancel_compaction(&self) -> bool {
        if let Some(compaction) = &self.compaction {
            compaction.cancel();
        }
        self.compaction.is_some()
    }
}
