//! A run and what happens in it: ids, options, tool calls, permission answers, usage and how
//! it stopped.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Numbers the runs of one session, starting at 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunId(pub u64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Options for the run a `Send` may start; ignored when the message joins a running run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunOptions {
    /// Overrides the session's turn limit for this run; `Some(0)` means unlimited.
    pub max_turns: Option<u32>,
    /// Permission classes granted for this run without asking.
    pub grants: Vec<PermissionClass>,
    /// Whether asks not covered by `grants` are denied at once instead of waiting for an answer
    /// (a `run` without a terminal).
    pub deny_unanswered: bool,
    /// The model for this run, overriding the session's.
    pub model: Option<String>,
    /// The provider profile for this run, overriding the session's.
    pub provider: Option<String>,
    /// Provider settings from the client's environment (`*_API_KEY`, `*_BASE_URL`), which take
    /// precedence over the daemon's own environment: the daemon may have been started from
    /// another shell.
    pub env: Vec<(String, String)>,
    /// Whether the run may go on with the defaults while the daemon has no usable
    /// configuration (it started with a broken `config.toml`); such a run is refused otherwise.
    /// It changes nothing while a configuration read from the file is in force. (A default for
    /// runs recorded before it existed.)
    #[serde(default)]
    pub ignore_config: bool,
}

/// One tool call the model asked for. `args` is the JSON object as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallInfo {
    /// The provider's id of the call, echoed by its result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object as text.
    pub args: String,
}

/// Numbers the permission requests of one session, starting at 1, so a user can type it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PermissionRequestId(pub u64);

impl fmt::Display for PermissionRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A user's answer to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Decision {
    /// Allow this one call.
    Allow,
    /// Allow this call and remember it for the session (tool and path or command prefix).
    AllowAlways,
    /// Refuse the call; the model is told the user denied it.
    Deny,
}

named_enum!(Decision, "decision", {
    Allow => "allow",
    AllowAlways => "allow_always",
    Deny => "deny",
});

/// What kind of effect a tool has, which decides whether it must ask
/// (docs/architecture.md#permissions-and-modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PermissionClass {
    /// Reads files; always allowed.
    Read,
    /// Changes files.
    Write,
    /// Runs commands.
    Command,
    /// Calls a tool of an MCP server.
    Mcp,
    /// Reaches the network from the daemon (`fetch`, `web_search`).
    Network,
}

named_enum!(PermissionClass, "permission class", {
    Read => "read",
    Write => "write",
    Command => "command",
    Mcp => "mcp",
    Network => "network",
});

/// Token counts of one reply or of a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens that were not read from or written to the cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write: u64,
}

impl TokenUsage {
    /// Adds another count to this one.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }

    /// All input tokens the model saw, cached or not.
    pub fn total_input(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

/// Why a run stopped before it was resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResumeReason {
    /// The daemon died (a crash, `kill -9`, the machine going down).
    Crash,
    /// The daemon was restarted on purpose (`agentctl daemon restart`).
    Restart,
}

named_enum!(ResumeReason, "resume reason", {
    Crash => "crash",
    Restart => "restart",
});

/// Why a run ended (docs/architecture.md#the-agent-loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StopReason {
    /// The model answered without asking for tools and nothing was queued.
    Completed,
    /// The user cancelled.
    Aborted,
    /// The model still asked for tools after `max_turns` replies.
    MaxTurns,
    /// The provider, the configuration or the daemon failed.
    Error,
    /// The health guard stopped a run that made no progress.
    Health,
}

named_enum!(StopReason, "stop reason", {
    Completed => "completed",
    Aborted => "aborted",
    MaxTurns => "max_turns",
    Error => "error",
    Health => "health",
});

impl StopReason {
    /// The exit code of `agentctl run` for this stop reason
    /// (docs/architecture.md#what-a-user-does).
    pub fn exit_code(self) -> i32 {
        match self {
            StopReason::Completed => 0,
            StopReason::Error => 1,
            StopReason::MaxTurns => 3,
            StopReason::Health => 4,
            StopReason::Aborted => 130,
        }
    }
}

/// Why the model ended one reply, as the provider reported it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ModelStopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tools to run.
    ToolUse,
    /// The reply hit the output token limit and may be cut off.
    MaxTokens,
    /// A stop sequence ended the reply.
    StopSequence,
    /// Any other reason the provider named.
    Other(String),
}

impl ModelStopReason {
    /// The provider-neutral name of the reason.
    pub fn as_str(&self) -> &str {
        match self {
            ModelStopReason::EndTurn => "end_turn",
            ModelStopReason::ToolUse => "tool_use",
            ModelStopReason::MaxTokens => "max_tokens",
            ModelStopReason::StopSequence => "stop_sequence",
            ModelStopReason::Other(other) => other,
        }
    }
}

/// Signals of a run that makes no progress (docs/architecture.md#permissions-and-modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HealthKind {
    /// The same tool calls in several consecutive replies.
    RepeatedCalls,
    /// Several failed edits or writes in a row.
    EditFailures,
    /// Several consecutive replies that asked only for unknown tools.
    UnknownTools,
    /// A reply that repeated the same text over and over (cut).
    RepeatedText,
}

named_enum!(HealthKind, "health signal", {
    RepeatedCalls => "repeated_calls",
    EditFailures => "edit_failures",
    UnknownTools => "unknown_tools",
    RepeatedText => "repeated_text",
});
