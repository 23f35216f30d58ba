//! The status line of the interactive view: state, turn, queues, tokens and mode, or the
//! permission request waiting for y/n/a; on a terminal it is reedline's prompt.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use protocol::{Mode, PermissionRequestId, SessionState, TokenUsage};
use reedline::{Prompt, PromptEditMode, PromptHistorySearch};

use crate::format::{dollars, thousands};
use crate::style::Style;
use crate::tool_progress::Running;

/// What the status line shows.
/// A permission request: the subagent that asks (`None` for the session itself) and its number.
pub(super) type AskKey = (Option<protocol::SessionId>, PermissionRequestId);

#[derive(Debug, Clone, Default)]
pub(super) struct Status {
    pub(super) state: Option<SessionState>,
    pub(super) mode: Mode,
    pub(super) turn: u32,
    pub(super) steer: usize,
    pub(super) follow_up: usize,
    pub(super) tokens: TokenUsage,
    /// Permission requests waiting for an answer, oldest first: they are answered in order.
    pub(super) asks: Vec<(AskKey, String)>,
    /// Running subagents: id, what each does now, and since when it runs.
    pub(super) children: Vec<(protocol::SessionId, String, std::time::Instant)>,
    /// When the oldest pending request was first shown: keys typed just before it came are
    /// text, not answers.
    pub(super) asked_at: Option<std::time::Instant>,
    /// The tool call under way, with its output's last line.
    pub(super) tool: Option<Running>,
    /// What the current (or last) run cost, when the model's price is known.
    pub(super) cost: Option<u64>,
    /// What its subagents cost (added to `cost`).
    pub(super) children_cost: u64,
}

impl Status {
    /// One line per running subagent: its id, what it does now and for how long.
    pub(super) fn child_lines(&self) -> Vec<String> {
        self.children
            .iter()
            .map(|(id, activity, since)| {
                let line = format!(
                    "  ⧉ {id} · {} · {:.0}s",
                    crate::style::one_line(activity),
                    since.elapsed().as_secs_f64()
                );
                line.chars().take(100).collect()
            })
            .collect()
    }

    /// Whether a key pressed now answers a request: one is pending and has been shown long
    /// enough that the key was not typed before it appeared.
    pub(super) fn keys_answer(&self) -> bool {
        self.ask().is_some()
            && self
                .asked_at
                .is_some_and(|at| at.elapsed() >= std::time::Duration::from_millis(300))
    }

    /// The permission request a key answers now.
    pub(super) fn ask(&self) -> Option<&(AskKey, String)> {
        self.asks.first()
    }

    pub(super) fn line(&self) -> String {
        if let Some(((asker, request), summary)) = self.ask() {
            // The keys answer once the question has been on screen a moment.
            let keys = if self.keys_answer() { "y/n/a" } else { "…" };
            let whose = asker
                .as_ref()
                .map(|s| format!(" (subagent {s})"))
                .unwrap_or_default();
            return format!("[approve {request}{whose}: {summary}? {keys}] ");
        }
        let state = self.state.map_or("idle", |s| s.as_str());
        let mut parts = vec![state.to_string()];
        if self.state == Some(SessionState::Running) {
            parts.push(format!("turn {}", self.turn));
        }
        if self.steer + self.follow_up > 0 {
            parts.push(format!("queued {}/{}", self.steer, self.follow_up));
        }
        parts.push(format!(
            "in {} / out {} tok",
            thousands(self.tokens.total_input()),
            thousands(self.tokens.output)
        ));
        let cost = crate::format::with_children_cost(self.cost, self.children_cost);
        if let Some(cost) = cost {
            parts.push(dollars(cost));
        }
        if self.mode != Mode::Default {
            parts.push(self.mode.to_string());
        }
        match &self.tool {
            Some(tool) => {
                let width =
                    crate::tool_progress::terminal_size().map_or(80, |(cols, _)| cols as usize);
                let tool = tool.line(Style::plain(), width.saturating_sub(40).max(20));
                format!("[{}] {tool} ", parts.join(" · "))
            }
            None => format!("[{}] ", parts.join(" · ")),
        }
    }
}

/// reedline's prompt: the reply's unfinished line as it streams (reedline prints only whole
/// lines above the input), then the status line.
pub(super) struct StatusPrompt {
    pub(super) status: Arc<Mutex<Status>>,
    pub(super) partial: Arc<Mutex<String>>,
}

impl Prompt for StatusPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        let (status, children) = {
            let status = self.status.lock().unwrap_or_else(|e| e.into_inner());
            (status.line(), status.child_lines())
        };
        let partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines: Vec<String> = Vec::new();
        if !partial.is_empty() {
            lines.push(partial.clone());
        }
        lines.extend(children);
        lines.push(status);
        Cow::Owned(lines.join("\n"))
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("› ")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }
}
