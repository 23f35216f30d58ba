//! The status line of the interactive view: state, turn, model, queues, tokens and mode, or
//! the permission request waiting for y/n/a; on a terminal it is drawn above the input line.

use protocol::{Mode, PermissionRequestId, SessionState, TokenUsage};

use crate::format::{dollars, thousands};

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
    /// When the oldest pending request was first shown: keys typed just before it came are
    /// text, not answers.
    pub(super) asked_at: Option<std::time::Instant>,
    /// The session's model (and provider), when the daemon said.
    pub(super) model: Option<String>,
    /// What the current (or last) run cost, when the model's price is known.
    pub(super) cost: Option<u64>,
    /// What its subagents cost (added to `cost`).
    pub(super) children_cost: u64,
    /// Its background shells running, by number.
    pub(super) shells: std::collections::BTreeSet<u32>,
}

impl Status {
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
                .map(|s| format!(" (subagent {})", crate::view::far::id(s)))
                .unwrap_or_default();
            let summary = crate::view::far::line(summary);
            return format!("[approve {request}{whose}: {summary}? {keys}] ");
        }
        let state = self.state.map_or("idle", |s| s.as_str());
        let mut parts = vec![state.to_string()];
        if self.state == Some(SessionState::Running) {
            parts.push(format!("turn {}", self.turn));
        }
        if let Some(model) = &self.model {
            parts.push(crate::view::far::line(model));
        }
        if self.steer + self.follow_up > 0 {
            parts.push(format!("queued {}/{}", self.steer, self.follow_up));
        }
        if !self.shells.is_empty() {
            parts.push(crate::format::count(self.shells.len() as u64, "shell"));
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
        format!("[{}] ", parts.join(" · "))
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn running_background_shells_are_counted() {
        let mut status = Status::default();
        assert!(!status.line().contains("shell"));
        status.shells.extend([1, 3]);
        assert!(
            status.line().contains(" · 2 shells · "),
            "{}",
            status.line()
        );
    }
}
