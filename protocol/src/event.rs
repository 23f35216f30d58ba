//! Session events: everything that happens in a session, in order, each with its `seq`.

use serde::{Deserialize, Serialize};

use crate::image::ImageRef;
use crate::run::{
    Decision, HealthKind, ModelStopReason, PermissionRequestId, ResumeReason, RunId, StopReason,
    TokenUsage, ToolCallInfo,
};
use crate::session::{Delivery, Mode, QueuedMessage, SessionId};

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

/// What can happen in a session (docs/architecture.md#protocol).
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
        /// The model the run uses; empty when a local server is asked which one it serves.
        #[serde(default)]
        model: String,
        /// The provider profile the run uses.
        #[serde(default)]
        provider: String,
    },
    /// A user message entered the history.
    UserMessage {
        /// The message.
        text: String,
        /// How it was delivered.
        delivery: Delivery,
        /// The images it carries.
        #[serde(default)]
        images: Vec<ImageRef>,
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
        /// Images the model receives with the result (`read` of an image).
        #[serde(default)]
        images: Vec<ImageRef>,
    },
    /// A tool call waits for a user's decision.
    PermissionRequested {
        /// The subagent session whose request this is (answer it there); `None` for this
        /// session's own (docs/architecture.md#subagents).
        session: Option<SessionId>,
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
        /// The subagent session whose request this was; `None` for this session's own.
        session: Option<SessionId>,
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
        /// The images of the messages waiting to steer, one list per message (empty lists
        /// left out at the end).
        #[serde(default)]
        steer_images: Vec<Vec<ImageRef>>,
        /// The images of the messages waiting to follow, likewise.
        #[serde(default)]
        follow_up_images: Vec<Vec<ImageRef>>,
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
    /// The session's model changed: its next runs use this one.
    ModelChanged {
        /// The new model.
        model: String,
    },
    /// The session directory was put back as it was before `run`
    /// (docs/architecture.md#checkpoints-fork-and-worktrees).
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
        /// The user's message asked for a change, yet the run completed without changing a
        /// file or running a command: the work was not done.
        #[serde(default)]
        nothing_changed: bool,
    },
    /// A failure worth telling every client (the run itself may go on).
    Error {
        /// What failed.
        message: String,
    },
    /// The session was deleted; no more events follow.
    SessionDeleted,
    /// A run the daemon did not live to finish goes on in the daemon that came up after it
    /// (docs/architecture.md#resume): same run, same turn count, same limits.
    RunResumed {
        /// The run.
        run: RunId,
        /// Why it had stopped.
        reason: ResumeReason,
    },
    /// A `task` call started a subagent: a child session of this one
    /// (docs/architecture.md#subagents).
    SubagentStarted {
        /// The `task` call.
        call: String,
        /// The child session.
        child: SessionId,
        /// The call's short description of the task.
        description: String,
        /// The agent definition the child follows.
        agent: String,
        /// Whether its result comes later, as a message (the call returned at once).
        background: bool,
    },
    /// What a running subagent is doing now: a tool and its argument, or "thinking".
    SubagentActivity {
        /// The child session.
        child: SessionId,
        /// One line.
        activity: String,
    },
    /// A hook ran (docs/architecture.md#hooks).
    HookRan {
        /// Its event (`PreToolUse`, `Stop`, …).
        event: String,
        /// Its command.
        command: String,
        /// Its exit code; `None` when it was killed or could not start.
        exit: Option<i32>,
        /// How long it ran.
        duration_ms: u64,
        /// What it decided (`block`, `allow`, `deny`, `ask`, `error`, `updated input`), if
        /// anything.
        decision: Option<String>,
    },
    /// A subagent's run ended; its usage counts in this session's run.
    SubagentFinished {
        /// The child session.
        child: SessionId,
        /// Why it ended.
        stop_reason: StopReason,
        /// Its model replies.
        turns: u32,
        /// Its tokens.
        usage: TokenUsage,
        /// What they cost, when the model's price is known.
        cost_micros: Option<u64>,
        /// How long it ran.
        duration_ms: u64,
    },
    /// The model replaced its plan (the `todo` tool); the whole plan is given.
    PlanUpdated {
        /// The steps, in order.
        items: Vec<crate::PlanItem>,
    },
    /// A command started in the background (`bash` with `"background": true`).
    ShellStarted {
        /// The shell's number in the session, from 1.
        shell: u32,
        /// The command line.
        command: String,
    },
    /// A background shell ended.
    ShellEnded {
        /// The shell's number.
        shell: u32,
        /// How it ended.
        end: crate::ShellEnd,
    },
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
            Event::ModelChanged { .. } => "model_changed",
            Event::Rewound { .. } => "rewound",
            Event::RunFinished { .. } => "run_finished",
            Event::Error { .. } => "error",
            Event::SessionDeleted => "session_deleted",
            Event::RunResumed { .. } => "run_resumed",
            Event::SubagentStarted { .. } => "subagent_started",
            Event::SubagentActivity { .. } => "subagent_activity",
            Event::SubagentFinished { .. } => "subagent_finished",
            Event::HookRan { .. } => "hook_ran",
            Event::PlanUpdated { .. } => "plan_updated",
            Event::ShellStarted { .. } => "shell_started",
            Event::ShellEnded { .. } => "shell_ended",
        }
    }
}
