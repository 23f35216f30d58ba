//! A session as clients see it: its id, mode, state, listing and queued messages.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Identifies a session: short lowercase hex, safe in paths and shells.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionId(pub String);

impl SessionId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `text` has the shape of a session id (so it can name a directory safely).
    pub fn is_well_formed(text: &str) -> bool {
        !text.is_empty()
            && text.len() <= 64
            && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How much the agent may do without asking (docs/architecture.md#permissions-and-modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Mode {
    /// Reads allowed; writes and commands ask.
    #[default]
    Default,
    /// Writes inside the session directory allowed; commands ask.
    AcceptEdits,
    /// Explore and write the plan file only; everything else asks.
    Plan,
    /// Everything allowed.
    Bypass,
    /// Writes inside the session directory allowed; commands run without asking inside the
    /// kernel sandbox (docs/architecture.md#sandbox); everything else asks.
    Auto,
}

named_enum!(Mode, "mode", {
    Default => "default",
    AcceptEdits => "accept-edits",
    Plan => "plan",
    Bypass => "bypass",
    Auto => "auto",
});

/// What a session is doing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SessionState {
    /// No run is going.
    Idle,
    /// A run is going.
    Running,
    /// A run waits for a permission answer.
    AwaitingApproval,
}

named_enum!(SessionState, "session state", {
    Idle => "idle",
    Running => "running",
    AwaitingApproval => "awaiting approval",
});

/// How a message sent to a session is delivered (docs/architecture.md#the-agent-loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Delivery {
    /// At the next turn boundary of the running run.
    Steer,
    /// When the running run would otherwise complete.
    FollowUp,
}

named_enum!(Delivery, "delivery", {
    Steer => "steer",
    FollowUp => "follow_up",
});

/// A message waiting in one of a session's queues.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedMessage {
    /// The text the user sent.
    pub text: String,
    /// The queue it waits in.
    pub delivery: Delivery,
    /// The images it carries.
    #[serde(default)]
    pub images: Vec<crate::image::ImageRef>,
}

/// What `ListSessions` and other replies tell about one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// The directory the agent works in.
    pub cwd: String,
    /// A short title, if one was given or derived.
    pub title: Option<String>,
    /// The model the session's runs use: its own, or the configured default; `None` when a
    /// local server is asked which one it serves (or in a session's settings as stored, when it
    /// has none of its own).
    pub model: Option<String>,
    /// The provider profile the session's runs use: its own, or the configured default.
    pub provider: Option<String>,
    /// The permission mode.
    pub mode: Mode,
    /// What the session is doing.
    pub state: SessionState,
    /// Complete model replies in the session, over all runs.
    pub turns: u64,
    /// Messages waiting to steer the running run.
    pub steer_queued: u32,
    /// Messages waiting to follow the running run.
    pub follow_up_queued: u32,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Time of the last event, milliseconds since the Unix epoch.
    pub last_activity_ms: u64,
    /// The `seq` of the newest event the session holds.
    pub last_seq: u64,
    /// The git branch of the session's own worktree, for a session started with `--worktree`.
    pub branch: Option<String>,
    /// The session that started this one with its `task` tool (docs/architecture.md#subagents), for
    /// a subagent.
    pub parent: Option<SessionId>,
}

impl SessionInfo {
    /// An idle session `id` in `cwd` with nothing in it yet: no title, model, turns or queue,
    /// times zero. A listing built from it names only the fields that differ.
    pub fn idle(id: SessionId, cwd: impl Into<String>) -> SessionInfo {
        SessionInfo {
            id,
            cwd: cwd.into(),
            title: None,
            model: None,
            provider: None,
            mode: Mode::Default,
            state: SessionState::Idle,
            turns: 0,
            steer_queued: 0,
            follow_up_queued: 0,
            created_ms: 0,
            last_activity_ms: 0,
            last_seq: 0,
            branch: None,
            parent: None,
        }
    }
}

/// Where a page of the session listing ended: the last session's creation time and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCursor {
    /// When the last listed session was created.
    pub created_ms: u64,
    /// Its id.
    pub id: SessionId,
}

/// The most characters of a title a session takes from its first message.
pub const TITLE_CHARS: usize = 60;

/// The title a session takes from its first message: the message's first line that is not
/// blank, trimmed, cut to [`TITLE_CHARS`] characters (the last of them `…` when cut).
pub fn title_of(message: &str) -> String {
    let first = message
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    if first.chars().count() > TITLE_CHARS {
        first.chars().take(TITLE_CHARS - 1).collect::<String>() + "…"
    } else {
        first.to_string()
    }
}

#[cfg(test)]
mod title_tests {
    use super::*;

    #[test]
    fn a_title_is_the_first_line_that_is_not_blank_cut_to_sixty_characters() {
        assert_eq!(
            title_of("\n  \n  fix the tests  \nthen more"),
            "fix the tests"
        );
        let long = "é".repeat(70);
        let title = title_of(&long);
        assert_eq!(title.chars().count(), TITLE_CHARS);
        assert!(title.ends_with('…'));
        assert_eq!(title_of(""), "");
    }
}
