//! Subagents (docs/architecture.md#subagents): the `task` tool starts a child session that does one
//! task with its own history and context window, and answers with its final message. This module
//! holds what does not depend on a running session: the settings, the agent definitions and the
//! `task` tool's description, arguments and result texts.

pub(crate) mod definitions;
pub(crate) mod task;

use serde::{Deserialize, Serialize};

pub(crate) use definitions::AgentDef;

/// The name of the tool that starts a subagent.
pub(crate) const TASK_TOOL: &str = "task";

/// `[subagents]` in the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SubagentConfig {
    /// Children of one session that run at once; more wait for a free place.
    pub(crate) max_parallel: usize,
    /// How deep subagents nest: 1 means a child has no `task` tool; 0 turns them off.
    pub(crate) max_depth: u32,
    /// Children of one session that exist and have not finished (running or waiting for a
    /// place); a `task` call beyond it is refused.
    pub(crate) max_children: usize,
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
    pub(crate) fn parallel(&self) -> usize {
        self.max_parallel.clamp(1, 64)
    }

    /// Children of one session not finished, at most (at least one, at most 1,000).
    pub(crate) fn children(&self) -> usize {
        self.max_children.clamp(1, 1000)
    }
}

/// What makes a session a subagent, kept in its `meta.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ChildOf {
    /// The parent session.
    pub(crate) parent: String,
    /// How deep it nests: 1 for a child of a top-level session.
    pub(crate) depth: u32,
    /// The parent's `task` call that started it.
    pub(crate) call: String,
    /// Its agent definition's name.
    pub(crate) agent: String,
    /// The call's description of its task.
    pub(crate) description: String,
    /// Whether its result goes to the parent as a message (the call returned at once).
    pub(crate) background: bool,
    /// The tools it may use; all when `None`.
    #[serde(default)]
    pub(crate) tools: Option<Vec<String>>,
    /// Its definition's instructions, added to its system prompt.
    #[serde(default)]
    pub(crate) instructions: String,
}
