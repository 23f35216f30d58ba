//! Small value types shared by requests and events: ids, modes, stop reasons, usage.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The version of the wire protocol; bumped on every incompatible change.
pub const PROTOCOL_VERSION: u32 = 8;

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

/// Numbers the runs of one session, starting at 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunId(pub u64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Chosen by the client for each request; the daemon echoes it in the one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestId(pub u64);

/// Numbers the permission requests of one session, starting at 1, so a user can type it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PermissionRequestId(pub u64);

impl fmt::Display for PermissionRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An error for text that names no known value of an enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{given}`; expected one of: {expected}")]
pub struct ParseNameError {
    kind: &'static str,
    given: String,
    expected: &'static str,
}

/// Implements `as_str`, `Display` and `FromStr` for a field-less enum with fixed names.
macro_rules! named_enum {
    ($ty:ident, $kind:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The name users type and see.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = ParseNameError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(ParseNameError {
                        kind: $kind,
                        given: s.to_string(),
                        expected: concat!($($name, " "),+),
                    }),
                }
            }
        }
    };
}

/// How much the agent may do without asking (SPEC §6).
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
    /// kernel sandbox (SPEC §12); everything else asks.
    Auto,
}

named_enum!(Mode, "mode", {
    Default => "default",
    AcceptEdits => "accept-edits",
    Plan => "plan",
    Bypass => "bypass",
    Auto => "auto",
});

/// Why a run ended (SPEC §4).
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
    /// The exit code of `agentctl run` for this stop reason (SPEC §1).
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

/// How a message sent to a session is delivered (SPEC §4).
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

/// What kind of effect a tool has, which decides whether it must ask (SPEC §6).
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
}

named_enum!(PermissionClass, "permission class", {
    Read => "read",
    Write => "write",
    Command => "command",
    Mcp => "mcp",
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

/// Signals of a run that makes no progress (SPEC §6).
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
    /// The model the session uses, if not the configured default.
    pub model: Option<String>,
    /// The provider profile the session uses, if not the configured default.
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
}

/// What `Status` tells about the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStatus {
    /// Sessions loaded in memory now (the others wait on disk).
    pub loaded: u64,
    /// The daemon's version.
    pub daemon_version: String,
    /// The daemon's protocol version.
    pub protocol_version: u32,
    /// The daemon's process id.
    pub pid: u32,
    /// Milliseconds since the daemon started.
    pub uptime_ms: u64,
    /// Where the daemon listens.
    pub socket: String,
    /// Sessions the daemon knows of.
    pub sessions: u64,
    /// Sessions with a run going.
    pub running: u64,
    /// Client connections open now.
    pub clients: u64,
    /// Resident memory of the daemon in bytes, where the OS tells it.
    pub rss_bytes: Option<u64>,
    /// The daemon's data directory.
    pub data_dir: String,
    /// The configuration error that keeps the last good configuration in force, if any.
    pub config_error: Option<String>,
    /// How many times the configuration file was read (goes up with every change seen).
    pub config_generation: u64,
    /// The configured MCP servers and their instances.
    pub mcp_servers: Vec<McpServerInfo>,
    /// What the sandbox of `auto` mode can do here, found at start.
    pub sandbox: String,
}

/// An MCP server a client brings for one session (an editor's `mcpServers`): a stdio server
/// (`command`) or a Streamable HTTP one (`url`). Kept in the daemon's memory only, since its
/// environment and headers may hold tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerSpec {
    /// Its name; its tools are `mcp__<name>__<tool>`.
    pub name: String,
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it.
    pub env: Vec<(String, String)>,
    /// The endpoint of an HTTP server.
    pub url: Option<String>,
    /// Headers sent to it.
    pub headers: Vec<(String, String)>,
}

/// One MCP server as `agentctl mcp list` shows it: a configured entry, or one running instance
/// of it (a `session`-scope server has one per session that used it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerInfo {
    /// Its name in the config.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `daemon` or `session`.
    pub scope: String,
    /// The session the instance belongs to (`session` scope).
    pub session: Option<SessionId>,
    /// `idle` (not started yet), `starting`, `ready`, `restarting`, `failed`, `disabled` or
    /// `broken` (its config entry is invalid).
    pub state: String,
    /// The server process, for a running stdio server.
    pub pid: Option<u32>,
    /// Tools it offers.
    pub tools: u32,
    /// The last thing that went wrong, with the tail of its stderr when there is one.
    pub last_error: Option<String>,
}

/// Where a page of the session listing ended: the last session's creation time and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCursor {
    /// When the last listed session was created.
    pub created_ms: u64,
    /// Its id.
    pub id: SessionId,
}
