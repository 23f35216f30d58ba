//! What a client sends: the handshake, then requests that each get exactly one reply.

use serde::{Deserialize, Serialize};

use crate::image::ImageUpload;
use crate::run::{Decision, PermissionRequestId, RunId, RunOptions};
use crate::session::{Delivery, ListCursor, Mode, SessionId};
use crate::status::McpServerSpec;

/// Chosen by the client for each request; the daemon echoes it in the one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestId(pub u64);

/// Every frame a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientFrame {
    /// The first frame of every connection.
    Hello(Hello),
    /// A request; the daemon answers it with exactly one `ServerFrame::Reply` of the same id.
    Request {
        /// Echoed in the reply.
        id: RequestId,
        /// What the client asks for.
        request: Request,
    },
}

/// Opens a connection: the client's protocol version and a name for logs and approvals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol version the client speaks.
    pub protocol_version: u32,
    /// A short name of the client, e.g. `agentctl 0.1.0 (attach)`.
    pub client: String,
}

/// Everything a client can ask of the daemon (docs/architecture.md#protocol).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Create a session; replies `SessionCreated`.
    CreateSession(CreateSession),
    /// List sessions, newest first, a page at a time; replies `Sessions`.
    ListSessions {
        /// Where the previous page ended (`None` for the first page).
        after: Option<ListCursor>,
    },
    /// The session's history so far, a page at a time; replies `History`.
    GetHistory {
        /// The session.
        session: SessionId,
        /// The last `seq` the client already has (0 for the start).
        from_seq: u64,
    },
    /// Receive the session's events after `from_seq` (0 for all), then live ones; replies
    /// `Subscribed` before the first event.
    Subscribe {
        /// The session.
        session: SessionId,
        /// The last `seq` the client already has.
        from_seq: u64,
    },
    /// Stop receiving the session's events; replies `Done`.
    Unsubscribe {
        /// The session.
        session: SessionId,
    },
    /// Send a user message: it steers or follows the running run, or starts a run on an idle
    /// session; replies `Sent`.
    Send {
        /// The session.
        session: SessionId,
        /// The message.
        text: String,
        /// Images that go with it (at most `MAX_MESSAGE_IMAGES`, together at most
        /// `MAX_MESSAGE_IMAGE_BYTES`).
        images: Vec<ImageUpload>,
        /// Where it goes while a run is going.
        delivery: Delivery,
        /// Options for the run, if this message starts one.
        options: RunOptions,
    },
    /// Cancel the session's run; replies `Done` (also when nothing was running).
    Cancel {
        /// The session.
        session: SessionId,
    },
    /// Answer a pending permission request; replies `Done`, or an error naming who already
    /// decided.
    Answer {
        /// The session.
        session: SessionId,
        /// The request being answered.
        request: PermissionRequestId,
        /// The answer.
        decision: Decision,
    },
    /// Change the session's permission mode; replies `Done`.
    SetMode {
        /// The session.
        session: SessionId,
        /// The new mode.
        mode: Mode,
    },
    /// Summarise the older history now; replies `Done` once the compaction ran.
    Compact {
        /// The session.
        session: SessionId,
    },
    /// Delete a session and its stored history; refused while a run is going unless `force`,
    /// which cancels the run first. Replies `Deleted`.
    DeleteSession {
        /// The session.
        session: SessionId,
        /// Cancel a running run first instead of refusing.
        force: bool,
    },
    /// The daemon's status; replies `Status`.
    Status,
    /// The configured MCP servers and their state; replies `McpServers`.
    McpList,
    /// The hooks in force, and the skills and slash commands of directory `cwd`; replies
    /// `Extensions`.
    Extensions {
        /// The directory (a session's), absolute.
        cwd: String,
    },
    /// Use these MCP servers (besides the configured ones) in the session's runs, one process
    /// or HTTP session each for this session; replaces what was given before. Replies `Done`.
    SetSessionMcpServers {
        /// The session.
        session: SessionId,
        /// The servers.
        servers: Vec<McpServerSpec>,
    },
    /// What a run changed in the session directory (the last run that changed anything, when
    /// `run` is `None`); replies `Diff`.
    Diff {
        /// The session.
        session: SessionId,
        /// The run.
        run: Option<RunId>,
    },
    /// Put the session directory back as it was before `run` (the last run that changed
    /// anything, when `None`), undoing that run and every later one; refused while a run is
    /// going. Replies `Rewound`.
    Rewind {
        /// The session.
        session: SessionId,
        /// The run.
        run: Option<RunId>,
        /// Also restore files changed outside the agent since the runs.
        force: bool,
        /// Only say what would be done.
        dry_run: bool,
    },
    /// A new session whose history is a copy of this one's up to turn `turn` (all of it when
    /// `None`), never cutting a tool call from its result; replies `SessionCreated`.
    Fork {
        /// The session.
        session: SessionId,
        /// The last turn (model reply, counted over the whole session from 1) to copy.
        turn: Option<u64>,
    },
    /// Stop the daemon cleanly: from now on no model turn and no tool call starts; the tool
    /// calls already running finish and their results are stored (for at most the daemon's
    /// `[daemon] stop_grace_secs`, unless `now`), then the daemon exits and the next one
    /// resumes its runs. Replies `Stopping` before it goes.
    Shutdown {
        /// Do not wait for running tool calls: they are interrupted, as a crash would.
        now: bool,
    },
    /// Subscribe to the session's live events (no replay), then send a user message, in one
    /// exchange: nothing that follows the message is missed; replies `SentSubscribed`, then
    /// `ReplayDone` comes and the run's events follow.
    SendSubscribed {
        /// The session.
        session: SessionId,
        /// The message.
        text: String,
        /// Images that go with it (at most `MAX_MESSAGE_IMAGES`, together at most
        /// `MAX_MESSAGE_IMAGE_BYTES`).
        images: Vec<ImageUpload>,
        /// Where it goes while a run is going.
        delivery: Delivery,
        /// Options for the run, if this message starts one.
        options: RunOptions,
    },
    /// Whether a run of the session that the daemon did not live to finish goes on in the next
    /// daemon (the configuration's `resume_interrupted` otherwise); replies `Done`.
    SetResume {
        /// The session.
        session: SessionId,
        /// Resume interrupted runs.
        resume: bool,
    },
    /// Follow every session of the daemon through its summary (docs/architecture.md#the-board);
    /// replies `Done`, then a `Summary` frame per session, `SummariesReady`, and from then on a
    /// `Summary` whenever a session's summary changes (at most ten a second per session) and
    /// `SummaryRemoved` when one is deleted.
    SubscribeSummaries,
    /// Stop following the summaries; replies `Done`.
    UnsubscribeSummaries,
    /// The models the session's provider serves, as its `GET /v1/models` lists them; replies
    /// `Models`.
    ListModels {
        /// The session.
        session: SessionId,
        /// Provider settings from the client's environment (`*_API_KEY`, `*_BASE_URL`), which
        /// take precedence over the daemon's own, as for a run.
        env: Vec<(String, String)>,
    },
    /// Use `model` for the session's next runs (a running run keeps its own); replies `Done`
    /// after a `ModelChanged` event.
    SetModel {
        /// The session.
        session: SessionId,
        /// The model, as the provider names it.
        model: String,
    },
    /// The session's tokens and cost per model, for its last run and over all runs; replies
    /// `Usage`.
    Usage {
        /// The session.
        session: SessionId,
    },
    /// The session's background shells, running and ended; replies `Shells`.
    Shells {
        /// The session.
        session: SessionId,
    },
    /// End a background shell of the session and its process group; replies `Done` after a
    /// `ShellEnded` event.
    KillShell {
        /// The session.
        session: SessionId,
        /// The shell's number.
        shell: u32,
    },
    /// A stored image of the session, by its hash; replies `Image`.
    GetImage {
        /// The session.
        session: SessionId,
        /// The image's hash, as its `ImageRef` gives it.
        hash: String,
    },
    /// The language servers and their state; replies `LspServers`.
    LspList,
}

/// The settings of a new session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateSession {
    /// The directory the agent works in; must exist.
    pub cwd: String,
    /// The model, if not the configured default.
    pub model: Option<String>,
    /// The provider profile, if not the configured default.
    pub provider: Option<String>,
    /// The permission mode; `None` for the configured default.
    pub mode: Option<Mode>,
    /// The turn limit of runs in this session; `None` for the configured default, `Some(0)` for
    /// unlimited.
    pub max_turns: Option<u32>,
    /// A short title.
    pub title: Option<String>,
    /// The client's environment, for the session's commands: the daemon keeps it without
    /// secrets (docs/architecture.md#tools). Empty for the daemon's own environment.
    pub env: Vec<(String, String)>,
    /// Give the session its own git worktree of the repository `cwd` is in, on a new branch
    /// `agentd/<id>` (docs/architecture.md#checkpoints-fork-and-worktrees).
    pub worktree: bool,
}

impl CreateSession {
    /// A session in `cwd` with every other setting the configured default, no title, the
    /// daemon's own environment and no worktree.
    pub fn in_dir(cwd: impl Into<String>) -> CreateSession {
        CreateSession {
            cwd: cwd.into(),
            model: None,
            provider: None,
            mode: None,
            max_turns: None,
            title: None,
            env: Vec::new(),
            worktree: false,
        }
    }
}
