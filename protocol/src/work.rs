//! What a session keeps besides its history: the model's plan (the `todo` tool) and the shells
//! its commands left running in the background (docs/architecture.md#tools).

use serde::{Deserialize, Serialize};

/// One step of the model's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// What the step is.
    pub text: String,
    /// How far it got.
    pub status: PlanStatus,
}

/// How far a step of the plan got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one step at a time).
    InProgress,
    /// Finished.
    Done,
}

named_enum!(PlanStatus, "plan status", {
    Pending => "pending",
    InProgress => "in_progress",
    Done => "done",
});

/// How many steps of a plan are done, as the board counts them (`3/7`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanCount {
    /// Steps done.
    pub done: u32,
    /// Steps in all.
    pub total: u32,
}

impl PlanCount {
    /// The count of `items`; `None` for an empty plan.
    pub fn of(items: &[PlanItem]) -> Option<PlanCount> {
        if items.is_empty() {
            return None;
        }
        let done = items
            .iter()
            .filter(|item| item.status == PlanStatus::Done)
            .count();
        Some(PlanCount {
            done: u32::try_from(done).unwrap_or(u32::MAX),
            total: u32::try_from(items.len()).unwrap_or(u32::MAX),
        })
    }
}

/// How a background shell ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShellEnd {
    /// Its command exited with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// Its command was ended by a signal it was not sent by agentd.
    Signalled {
        /// The signal.
        signal: i32,
    },
    /// `kill_shell` or a user ended it.
    Killed,
    /// The daemon stopped or the session was deleted while it ran.
    Lost,
}

impl std::fmt::Display for ShellEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShellEnd::Exited { code } => write!(f, "exited with code {code}"),
            ShellEnd::Signalled { signal } => write!(f, "ended by signal {signal}"),
            ShellEnd::Killed => f.write_str("killed"),
            ShellEnd::Lost => f.write_str("lost when the daemon stopped"),
        }
    }
}

/// A background shell of a session, as `agentctl shells` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellInfo {
    /// Its number in the session, from 1.
    pub shell: u32,
    /// The command line.
    pub command: String,
    /// When it started, milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// How it ended; `None` while it runs.
    pub end: Option<ShellEnd>,
    /// The last lines it printed.
    pub tail: String,
    /// Bytes it printed in all.
    pub bytes: u64,
}
