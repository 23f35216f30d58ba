//! What the daemon sends: the handshake answer, replies to requests, errors, and the frame
//! that carries them and session events.

use serde::{Deserialize, Serialize};

use crate::changes::{RewindReport, RunDiff};
use crate::event::SessionEvent;
use crate::request::RequestId;
use crate::run::RunId;
use crate::session::{ListCursor, SessionId, SessionInfo};
use crate::status::{DaemonStatus, LspServerInfo, McpServerInfo};

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
    /// A subscription's replay is over: every event it replayed came before this frame, every
    /// live one comes after. `last_seq` is the last `seq` the session had given out when the
    /// subscription began (it may lie past the last stored event: numbers reserved for events
    /// never stored).
    ReplayDone {
        /// The session.
        session: SessionId,
        /// Live events have a `seq` above this.
        last_seq: u64,
    },
    /// A session's summary, for `SubscribeSummaries`.
    Summary(Box<crate::SessionSummary>),
    /// Every session's summary has been sent once; what follows are changes.
    SummariesReady {
        /// How many sessions were summarised.
        sessions: u64,
    },
    /// A session was deleted.
    SummaryRemoved {
        /// The session.
        session: SessionId,
    },
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
    /// The subscription is active; replayed events follow, then `ReplayDone`, then live ones.
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
    /// Hooks, skills and commands.
    Extensions(crate::extensions::Extensions),
    /// What a run changed.
    Diff(RunDiff),
    /// What a rewind did.
    Rewound(RewindReport),
    /// The session is deleted; what was kept of its worktree, if anything, and why.
    Deleted {
        /// Lines for the user (a dirty worktree kept, a branch with unmerged commits kept).
        notes: Vec<String>,
    },
    /// Subscribed to the live events and sent the message (`SendSubscribed`).
    SentSubscribed {
        /// The session's listing when the subscription began.
        info: SessionInfo,
        /// The run the message started, or `None` when it was queued for the running run.
        started: Option<RunId>,
    },
    /// The models the session's provider serves, as it lists them.
    Models {
        /// The provider profile asked.
        provider: String,
        /// The model the session uses now, if it is known before a run.
        current: Option<String>,
        /// The model ids.
        models: Vec<String>,
    },
    /// A session's tokens and cost per model.
    Usage(crate::usage::UsageReport),
    /// A session's background shells, in the order they started.
    Shells(Vec<crate::ShellInfo>),
    /// A stored image of a session with its bytes (`GetImage`).
    Image(crate::image::ImageBytes),
    /// The daemon is stopping (`Shutdown`): it exits once the tool calls still running have
    /// finished, or after `grace_ms`.
    Stopping {
        /// Tool calls running when the stop was asked for.
        calls: u64,
        /// The longest the daemon waits for them, in milliseconds (0 when it does not wait).
        grace_ms: u64,
    },
    /// The language servers the daemon runs, one per project root and server (`LspList`).
    LspServers(Vec<LspServerInfo>),
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
    /// The configuration file cannot be used and the daemon has no good one to keep: runs are
    /// refused until it is fixed, unless they ask to ignore it; the message names the file,
    /// line and reason.
    ConfigBroken,
    /// The model provider could not be reached or refused the request; the message says how.
    ProviderFailed,
}
