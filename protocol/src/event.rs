//! What the daemon sends: the handshake answer, replies, and session events.

use serde::{Deserialize, Serialize};

use crate::changes::{RewindReport, RunDiff};
use crate::types::{
    DaemonStatus, Decision, Delivery, HealthKind, ListCursor, McpServerInfo, Mode, ModelStopReason,
    PermissionRequestId, QueuedMessage, RequestId, RunId, SessionId, SessionInfo, StopReason,
    TokenUsage, ToolCallInfo,
};

/// Every frame the daemon sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerFrame {
    /// The answer to a good `Hello`.
    Welcome(Welcome),
    /// The one reply to a request.
    Reply {
        /// The id of the request.
        id: RequestId,
        /// What the daemon did, or why it did not.
        result: Result<Reply, ErrorInfo>,
    },
    /// An event of a subscribed session.
    Event(SessionEvent),
    /// The client read too slowly and its subscription was dropped after `last_seq`; subscribe
    /// again from the last `seq` received to resume without losing anything.
    Lagged {
        /// The session whose events were dropped.
        session: SessionId,
        /// The last `seq` queued for the client before the drop.
        last_seq: u64,
    },
    /// A failure of the connection itself (a malformed frame, a failed handshake); the daemon
    /// closes the connection after sending it.
    Error(ErrorInfo),
}

/// The daemon's answer to `Hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// The daemon's protocol version (equal to the client's).
    pub protocol_version: u32,
    /// The daemon's version.
    pub daemon_version: String,
    /// The daemon's process id.
    pub pid: u32,
}

/// The successful outcome of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// Done, nothing to tell.
    Done,
    /// The new session.
    SessionCreated(SessionInfo),
    /// A page of sessions, newest first.
    Sessions {
        /// The sessions of this page.
        sessions: Vec<SessionInfo>,
        /// Where the next page starts, if there is one.
        next: Option<ListCursor>,
        /// Sessions whose files could not be read (directory and reason), first page only.
        unreadable: Vec<String>,
    },
    /// A page of a session's history (completed messages; deltas folded).
    History {
        /// The session.
        session: SessionInfo,
        /// Its events in order.
        events: Vec<SessionEvent>,
        /// The `seq` to ask from for the next page, if there is one.
        next_seq: Option<u64>,
    },
    /// The subscription is active; replayed events follow, then live ones.
    Subscribed(SessionInfo),
    /// Where a sent message went.
    Sent {
        /// The run it started, or `None` when it was queued for the running run.
        started: Option<RunId>,
    },
    /// The daemon's status.
    Status(DaemonStatus),
    /// The configured MCP servers and their instances.
    McpServers(Vec<McpServerInfo>),
    /// What a run changed.
    Diff(RunDiff),
    /// What a rewind did.
    Rewound(RewindReport),
    /// The session is deleted; what was kept of its worktree, if anything, and why.
    Deleted {
        /// Lines for the user (a dirty worktree kept, a branch with unmerged commits kept).
        notes: Vec<String>,
    },
}

/// Why a request or connection failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ErrorInfo {
    /// What kind of failure it is.
    pub code: ErrorCode,
    /// A message for the user.
    pub message: String,
}

impl ErrorInfo {
    /// An error of `code` with `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorInfo {
            code,
            message: message.into(),
        }
    }
}

/// The kinds of failure a client may want to tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorCode {
    /// Client and daemon speak different protocol versions.
    VersionMismatch,
    /// A frame could not be decoded.
    MalformedFrame,
    /// A frame's length is over the limit.
    FrameTooLarge,
    /// A request came before `Hello`, or `Hello` came twice.
    HandshakeRequired,
    /// No session has that id.
    UnknownSession,
    /// The request is not valid (bad directory, bad argument).
    InvalidRequest,
    /// The session is running and the request needs it idle.
    Busy,
    /// No pending permission request has that id.
    UnknownPermissionRequest,
    /// The permission request was already answered.
    AlreadyDecided,
    /// The daemon is shutting down.
    ShuttingDown,
    /// The daemon failed; the message says how.
    Internal,
}

/// One event of a session, numbered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEvent {
    /// The session.
    pub session: SessionId,
    /// Strictly increasing per session, without gaps, starting at 1.
    pub seq: u64,
    /// Milliseconds since the Unix epoch when the event happened.
    pub time_ms: u64,
    /// What happened.
    pub event: Event,
}

/// What can happen in a session (SPEC §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// A run began.
    RunStarted {
        /// The run.
        run: RunId,
        /// The kind of message that started it.
        trigger: Delivery,
        /// The run's turn limit; 0 for unlimited.
        max_turns: u32,
    },
    /// A user message entered the history.
    UserMessage {
        /// The message.
        text: String,
        /// How it was delivered.
        delivery: Delivery,
    },
    /// A model call began.
    TurnStarted {
        /// The number of this turn in the run, from 1.
        turn: u32,
    },
    /// A piece of the reply's text as it streams.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of the reply's reasoning as it streams.
    ThinkingDelta {
        /// The reasoning text.
        text: String,
    },
    /// A complete model reply, once received whole and saved.
    AssistantMessage {
        /// The turn it answered.
        turn: u32,
        /// The reply's text.
        text: String,
        /// The reply's reasoning, if the model showed it.
        thinking: String,
        /// The tools it asked for, in order.
        tool_calls: Vec<ToolCallInfo>,
        /// Why the reply ended.
        stop_reason: ModelStopReason,
        /// The first and last `seq` of the text and thinking deltas this message completes:
        /// they are not kept once it is, so a replay skips them.
        folds: Option<(u64, u64)>,
    },
    /// A tool call begins (after any permission answer).
    ToolCall(ToolCallInfo),
    /// A piece of a running tool's output (`bash`), at most ten a second; not stored: the
    /// result that follows holds the whole output.
    ToolOutput {
        /// The call's id.
        id: String,
        /// The output since the previous piece (its end, when more came).
        text: String,
        /// Bytes of output left out before `text`.
        omitted: u64,
    },
    /// A tool call's result.
    ToolResult {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Whether the tool failed, was refused or was not run.
        is_error: bool,
        /// What the model receives.
        output: String,
        /// How long the tool ran.
        duration_ms: u64,
    },
    /// A tool call waits for a user's decision.
    PermissionRequested {
        /// The request, to answer with `Answer`.
        request: PermissionRequestId,
        /// The tool.
        tool: String,
        /// The call's arguments, a JSON object as text.
        args: String,
        /// One line saying what would happen.
        summary: String,
    },
    /// A permission request was decided.
    PermissionResolved {
        /// The request.
        request: PermissionRequestId,
        /// The decision.
        decision: Decision,
        /// Who decided: a client's name, or the daemon's policy.
        by_client: String,
    },
    /// The queues changed; both are given whole.
    QueueChanged {
        /// Messages waiting to steer.
        steer: Vec<String>,
        /// Messages waiting to follow.
        follow_up: Vec<String>,
    },
    /// Token use after a reply.
    Usage {
        /// This reply's tokens.
        turn: TokenUsage,
        /// The run's tokens so far.
        cumulative: TokenUsage,
        /// What the run's tokens cost so far, in millionths of a US dollar, when the model's
        /// price is known.
        cost_micros: Option<u64>,
    },
    /// A provider call failed in a way worth retrying; the next attempt follows after `wait_ms`.
    Retrying {
        /// The retry's number, from 1.
        attempt: u32,
        /// The wait before it.
        wait_ms: u64,
        /// What failed.
        reason: String,
    },
    /// The older history was summarised.
    Compacted {
        /// Estimated tokens of the history before.
        before_tokens: u64,
        /// Estimated tokens of the history after.
        after_tokens: u64,
    },
    /// A sign that the run makes no progress.
    Health {
        /// The kind of sign.
        kind: HealthKind,
        /// What was seen.
        detail: String,
    },
    /// Something the daemon did on the run's behalf that the user should know of (tool calls
    /// the model wrote as text were read as calls).
    Notice {
        /// What happened.
        text: String,
    },
    /// A file the agent read was changed by someone else.
    FileChanged {
        /// The file, relative to the session directory where it is inside it.
        path: String,
    },
    /// The permission mode changed.
    ModeChanged {
        /// The new mode.
        mode: Mode,
    },
    /// The session directory was put back as it was before `run` (SPEC §13).
    Rewound {
        /// The run.
        run: RunId,
        /// Files restored.
        restored: Vec<String>,
        /// Files removed.
        removed: Vec<String>,
        /// Files changed outside the agent, left alone.
        kept: Vec<String>,
    },
    /// A run ended.
    RunFinished {
        /// The run.
        run: RunId,
        /// Why it ended.
        stop_reason: StopReason,
        /// Complete model replies in the run.
        turns: u32,
        /// Whether the last reply was cut off at the output limit.
        truncated: bool,
        /// The run's tokens.
        usage: TokenUsage,
        /// Queued messages that were not delivered, in order (after a cancel or an error).
        returned_messages: Vec<QueuedMessage>,
        /// What went wrong, for `Error` and `Health` stops.
        error: Option<String>,
    },
    /// A failure worth telling every client (the run itself may go on).
    Error {
        /// What failed.
        message: String,
    },
    /// The session was deleted; no more events follow.
    SessionDeleted,
}

impl Event {
    /// The event's name in snake case, as the JSON view prints it.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::RunStarted { .. } => "run_started",
            Event::UserMessage { .. } => "user_message",
            Event::TurnStarted { .. } => "turn_started",
            Event::TextDelta { .. } => "text_delta",
            Event::ThinkingDelta { .. } => "thinking_delta",
            Event::AssistantMessage { .. } => "assistant_message",
            Event::ToolCall(_) => "tool_call",
            Event::ToolOutput { .. } => "tool_output",
            Event::ToolResult { .. } => "tool_result",
            Event::PermissionRequested { .. } => "permission_requested",
            Event::PermissionResolved { .. } => "permission_resolved",
            Event::QueueChanged { .. } => "queue_changed",
            Event::Usage { .. } => "usage",
            Event::Retrying { .. } => "retrying",
            Event::Compacted { .. } => "compacted",
            Event::Health { .. } => "health",
            Event::Notice { .. } => "notice",
            Event::FileChanged { .. } => "file_changed",
            Event::ModeChanged { .. } => "mode_changed",
            Event::Rewound { .. } => "rewound",
            Event::RunFinished { .. } => "run_finished",
            Event::Error { .. } => "error",
            Event::SessionDeleted => "session_deleted",
        }
    }
}
