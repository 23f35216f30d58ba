//! Per-session summaries for the board (docs/architecture.md#the-board): what each session of the
//! daemon is doing and what it waits for, small enough that one subscription can follow every
//! session.

use serde::{Deserialize, Serialize};

use crate::{PermissionRequestId, RunId, SessionId, SessionInfo, StopReason, TokenUsage};

/// The most characters of any text a summary carries (a command, a path, an error).
pub const SUMMARY_TEXT_CHARS: usize = 200;

/// One session as the board shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session's listing.
    pub info: SessionInfo,
    /// What its run does now (`Idle` without a run).
    pub activity: Activity,
    /// Since when it does that, milliseconds since the Unix epoch.
    pub activity_since_ms: u64,
    /// The run going, or the last one when none is.
    pub run: Option<RunSummary>,
    /// Permission requests waiting for an answer, oldest first; those of its subagents too.
    pub pending: Vec<PendingSummary>,
    /// How far the model's plan got, when it keeps one.
    pub plan: Option<crate::PlanCount>,
    /// Background shells still running.
    pub shells: u32,
}

/// What a session's run is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activity {
    /// No run is going.
    Idle,
    /// Waiting for the model.
    Thinking,
    /// Running a tool.
    Tool {
        /// The tool.
        name: String,
        /// What it works on: the command, the path, the pattern.
        detail: String,
    },
    /// Waiting before retrying the provider.
    Retrying {
        /// The attempt that comes next, from 1.
        attempt: u32,
    },
}

/// The run a summary is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run.
    pub run: RunId,
    /// When it started, milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// Its current (or last) turn.
    pub turn: u32,
    /// Its tokens so far.
    pub usage: TokenUsage,
    /// What its tokens cost, in millionths of a US dollar, when the price is known.
    pub cost_micros: Option<u64>,
    /// How it ended; `None` while it goes.
    pub end: Option<RunEnd>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEnd {
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// What failed, for `error`.
    pub error: Option<String>,
    /// When, milliseconds since the Unix epoch.
    pub finished_ms: u64,
}

/// A permission request waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingSummary {
    /// The subagent that asks, when it is not the session summarised.
    pub session: Option<SessionId>,
    /// The request, to answer with `Answer`.
    pub request: PermissionRequestId,
    /// The tool.
    pub tool: String,
    /// What would happen: the command, the file, the MCP tool.
    pub summary: String,
    /// When it was asked, milliseconds since the Unix epoch.
    pub since_ms: u64,
}

/// Where a board puts a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Group {
    /// A permission request waits for a person.
    NeedsYou,
    /// A run is going.
    Working,
    /// Its last run ended well, was cancelled, or it never ran.
    Done,
    /// Its last run failed (an error or the health guard).
    Failed,
}

named_enum!(Group, "group", {
    NeedsYou => "needs_you",
    Working => "working",
    Done => "done",
    Failed => "failed",
});

impl SessionSummary {
    /// The summary of a session that is not loaded: its listing and how its last run ended.
    pub fn idle(info: SessionInfo, run: Option<RunSummary>) -> SessionSummary {
        SessionSummary {
            activity_since_ms: info.last_activity_ms,
            info,
            activity: Activity::Idle,
            run,
            pending: Vec::new(),
            plan: None,
            shells: 0,
        }
    }

    /// The board group the session belongs in.
    pub fn group(&self) -> Group {
        if !self.pending.is_empty() {
            return Group::NeedsYou;
        }
        if self.info.state != crate::SessionState::Idle || self.activity != Activity::Idle {
            return Group::Working;
        }
        match self.run.as_ref().and_then(|run| run.end.as_ref()) {
            Some(end) if matches!(end.stop_reason, StopReason::Error | StopReason::Health) => {
                Group::Failed
            }
            _ => Group::Done,
        }
    }
}

/// `text` cut to [`SUMMARY_TEXT_CHARS`] characters on one line.
pub fn summary_text(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(SUMMARY_TEXT_CHARS + 1)
        .collect();
    if line.chars().count() > SUMMARY_TEXT_CHARS {
        let mut cut: String = line.chars().take(SUMMARY_TEXT_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        line
    }
}
