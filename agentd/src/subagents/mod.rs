//! Subagents (SPEC §14): the `task` tool starts a child session that does one task with its
//! own history and context window, and answers with its final message. This module holds what
//! does not depend on a running session: the settings, the agent definitions and the `task`
//! tool's description, arguments and result texts.

pub mod definitions;
pub mod task;

use serde::{Deserialize, Serialize};

pub use definitions::AgentDef;

/// The name of the tool that starts a subagent.
pub const TASK_TOOL: &str = "task";

/// `[subagents]` in the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubagentConfig {
    /// Children of one session that run at once; more wait for a free place.
    pub max_parallel: usize,
    /// How deep subagents nest: 1 means a child has no `task` tool; 0 turns them off.
    pub max_depth: u32,
    /// Children of one session that exist and have not finished (running or waiting for a
    /// place); a `task` call beyond it is refused.
    pub max_children: usize,
}

impl Default for SubagentConfig {
    fn default() -> Self {
        SubagentConfig {
            max_parallel: 4,
            max_depth: 1,
            max_children: 32,
        }
    }
}

impl SubagentConfig {
    /// Children of one session that run at once (at least one).
    pub fn parallel(&self) -> usize {
        self.max_parallel.clamp(1, 64)
    }

    /// Children of one session not finished, at most (at least one, at most 1,000).
    pub fn children(&self) -> usize {
        self.max_children.clamp(1, 1000)
    }
}

/// What makes a session a subagent, kept in its `meta.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ChildOf {
    /// The parent session.
    pub parent: String,
    /// How deep it nests: 1 for a child of a top-level session.
    pub depth: u32,
    /// The parent's `task` call that started it.
    pub call: String,
    /// Its agent definition's name.
    pub agent: String,
    /// The call's description of its task.
    pub description: String,
    /// Whether its result goes to the parent as a message (the call returned at once).
    pub background: bool,
    /// The tools it may use; all when `None`.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Its definition's instructions, added to its system prompt.
    #[serde(default)]
    pub instructions: String,
}
