//! The loop's one way to its session (docs/architecture.md#the-agent-loop): the messages a run
//! sends ([`ToSession`]), what comes back, and [`SessionPort`], which the session hands each
//! run. The session provides the other end of the port (a [`Door`]), so the loop never names
//! the session's actor: subagents too are made, started, awaited and cancelled through it.

use std::path::PathBuf;
use std::sync::Arc;

use protocol::{
    Decision, Delivery, ErrorInfo, Event, Mode, PermissionRequestId, RunId, RunOptions, SessionId,
    ToolCallInfo,
};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::conversation::Message;
use crate::permission::ToolRef;
use crate::subagents::ChildOf;
use crate::subagents::task::ChildEnd;

/// Where the answer to a message goes.
pub(crate) type Reply<T> = oneshot::Sender<Result<T, ErrorInfo>>;

/// What a run sends its session. Each message that is answered carries the channel its answer
/// goes back on; a session that is gone drops the channel, and the run hears that it is gone.
pub(crate) enum ToSession {
    /// An event of run `run` (text deltas, tool calls and results, usage): not answered.
    Emit { run: RunId, event: Event },
    /// Deliver queued steering and hand out the next model call's input (`compact_prompt`
    /// when the model's window is small).
    BeginTurn {
        run: RunId,
        compact_prompt: bool,
        reply: Reply<TurnInput>,
    },
    /// Append a message to the history, with the event that announces it.
    Push {
        run: RunId,
        message: Message,
        event: Option<Event>,
        reply: Reply<()>,
    },
    /// The run would complete: deliver queued steering, or else the next follow-up; the answer
    /// is what was delivered.
    NextQueued {
        run: RunId,
        reply: Reply<Option<Delivery>>,
    },
    /// May this call run?
    Authorize {
        run: RunId,
        call: CallToCheck,
        reply: Reply<Authorized>,
    },
    /// Nobody answered permission request `request` in time: deny it.
    Expire {
        request: PermissionRequestId,
        reply: Reply<()>,
    },
    /// Replace the first `cut` messages of the history of `generation` by `summary`; the answer
    /// is the next model call's input. A summary of a history compacted meanwhile is refused.
    ApplyCompaction {
        run: RunId,
        compact_prompt: bool,
        summary: String,
        cut: usize,
        generation: u64,
        reply: Reply<TurnInput>,
    },
    /// What a hook's input says of the session.
    HookContext { reply: Reply<HookSession> },
    /// Answer a pending permission request (a PermissionRequest hook's answer).
    Answer { answer: Answer, reply: Reply<()> },
    /// Make a child session for a `task` call of run `run`; the session adopts it (to cancel
    /// it with itself) and stores its `SubagentStarted` before the answer, its id, comes back.
    MakeChild {
        run: RunId,
        spec: ChildSpec,
        reply: Reply<SessionId>,
    },
    /// Wait for the end of run `run` of the child session `child`; the answer is where that
    /// end arrives.
    AwaitRun {
        child: SessionId,
        run: RunId,
        reply: Reply<oneshot::Receiver<ChildEnd>>,
    },
    /// Cancel the run of the child session `child` (and its children).
    CancelChild { child: SessionId, reply: Reply<()> },
    /// A message to session `to` (a child's prompt, or this session's own follow-up), loaded
    /// again if it was unloaded; the answer is the run it started, if it started one.
    SendMessage {
        to: SessionId,
        text: String,
        delivery: Delivery,
        options: RunOptions,
        reply: Reply<Option<RunId>>,
    },
}

/// The session's end of a port: it takes the run's messages to the session they are for.
pub(crate) trait Door: Send + Sync {
    /// Hands `msg` over without waiting: to this session, or (for a message naming another
    /// session) to that one. A message that cannot be handed over is dropped with its reply
    /// channel.
    fn send(&self, msg: ToSession);
}

/// Why a message got no answer.
#[derive(Debug)]
pub(crate) enum PortError {
    /// The session is gone (deleted, or its actor stopped).
    Gone,
    /// The session refused the message.
    Refused(ErrorInfo),
}

/// The session of a run, as the run sees it; cheap to clone.
#[derive(Clone)]
pub(crate) struct SessionPort(Arc<dyn Door>);

impl SessionPort {
    /// The port whose messages `door` takes.
    pub(crate) fn new(door: Arc<dyn Door>) -> SessionPort {
        SessionPort(door)
    }

    /// Passes an event of run `run` to the session without waiting (deltas, tool output,
    /// retries); dropped if the session is gone.
    pub(crate) fn emit(&self, run: RunId, event: Event) {
        self.0.send(ToSession::Emit { run, event });
    }

    /// Sends the message `make` builds around its reply channel, and waits for the answer.
    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> ToSession) -> Result<T, PortError> {
        let (reply, answer) = oneshot::channel();
        self.0.send(make(reply));
        match answer.await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(refused)) => Err(PortError::Refused(refused)),
            Err(_) => Err(PortError::Gone),
        }
    }

    /// See [`ToSession::BeginTurn`].
    pub(crate) async fn begin_turn(
        &self,
        run: RunId,
        compact_prompt: bool,
    ) -> Result<TurnInput, PortError> {
        self.ask(|reply| ToSession::BeginTurn {
            run,
            compact_prompt,
            reply,
        })
        .await
    }

    /// See [`ToSession::Push`].
    pub(crate) async fn push(
        &self,
        run: RunId,
        message: Message,
        event: Option<Event>,
    ) -> Result<(), PortError> {
        self.ask(|reply| ToSession::Push {
            run,
            message,
            event,
            reply,
        })
        .await
    }

    /// See [`ToSession::NextQueued`].
    pub(crate) async fn next_queued(&self, run: RunId) -> Result<Option<Delivery>, PortError> {
        self.ask(|reply| ToSession::NextQueued { run, reply }).await
    }

    /// See [`ToSession::Authorize`].
    pub(crate) async fn authorize(
        &self,
        run: RunId,
        call: CallToCheck,
    ) -> Result<Authorized, PortError> {
        self.ask(|reply| ToSession::Authorize { run, call, reply })
            .await
    }

    /// See [`ToSession::Expire`].
    pub(crate) async fn expire(&self, request: PermissionRequestId) -> Result<(), PortError> {
        self.ask(|reply| ToSession::Expire { request, reply }).await
    }

    /// See [`ToSession::ApplyCompaction`].
    pub(crate) async fn apply_compaction(
        &self,
        run: RunId,
        compact_prompt: bool,
        summary: String,
        cut: usize,
        generation: u64,
    ) -> Result<TurnInput, PortError> {
        self.ask(|reply| ToSession::ApplyCompaction {
            run,
            compact_prompt,
            summary,
            cut,
            generation,
            reply,
        })
        .await
    }

    /// See [`ToSession::HookContext`].
    pub(crate) async fn hook_context(&self) -> Result<HookSession, PortError> {
        self.ask(|reply| ToSession::HookContext { reply }).await
    }

    /// See [`ToSession::Answer`].
    pub(crate) async fn answer(&self, answer: Answer) -> Result<(), PortError> {
        self.ask(|reply| ToSession::Answer { answer, reply }).await
    }

    /// See [`ToSession::MakeChild`].
    pub(crate) async fn make_child(
        &self,
        run: RunId,
        spec: ChildSpec,
    ) -> Result<SessionId, PortError> {
        self.ask(|reply| ToSession::MakeChild { run, spec, reply })
            .await
    }

    /// See [`ToSession::AwaitRun`].
    pub(crate) async fn await_run(
        &self,
        child: SessionId,
        run: RunId,
    ) -> Result<oneshot::Receiver<ChildEnd>, PortError> {
        self.ask(|reply| ToSession::AwaitRun { child, run, reply })
            .await
    }

    /// See [`ToSession::CancelChild`].
    pub(crate) async fn cancel_child(&self, child: SessionId) -> Result<(), PortError> {
        self.ask(|reply| ToSession::CancelChild { child, reply })
            .await
    }

    /// See [`ToSession::SendMessage`].
    pub(crate) async fn send_message(
        &self,
        to: SessionId,
        text: String,
        delivery: Delivery,
        options: RunOptions,
    ) -> Result<Option<RunId>, PortError> {
        self.ask(|reply| ToSession::SendMessage {
            to,
            text,
            delivery,
            options,
            reply,
        })
        .await
    }
}

/// What the next model call sees.
pub(crate) struct TurnInput {
    /// The system prompt as of now (the mode may have changed).
    pub(crate) system: String,
    /// The history, queued steering included, shared with the session.
    pub(crate) messages: Arc<Vec<Message>>,
    /// The history's generation (see [`ToSession::ApplyCompaction`]).
    pub(crate) generation: u64,
    /// Whether a user asked for compaction.
    pub(crate) compact: bool,
    /// The prompt tokens of the last reply, for the compaction threshold.
    pub(crate) last_input: u64,
}

/// A call the loop asks about ([`ToSession::Authorize`]).
pub(crate) struct CallToCheck {
    /// The tool.
    pub(crate) tool: ToolRef,
    /// Its arguments.
    pub(crate) args: Value,
    /// The call as the model made it.
    pub(crate) call: ToolCallInfo,
    /// What the call's PreToolUse hooks answered, if they did.
    pub(crate) hook: Option<crate::hooks::output::Permission>,
}

/// The answer to [`ToSession::Authorize`], and the sandbox a command runs in when it runs.
pub(crate) struct Authorized {
    /// Whether it may run.
    pub(crate) authorization: Authorization,
    /// The sandbox of a `bash` call in auto mode (not asked to leave it), and what the call
    /// may not look at.
    pub(crate) confinement: crate::sandbox::Confinement,
}

/// Whether a call may run.
pub(crate) enum Authorization {
    /// Run it.
    Allowed,
    /// Do not; the model gets this reason.
    Denied(String),
    /// Wait for a user's answer to this request; `true` when it is only the mode's question
    /// (a PermissionRequest hook may answer it), `false` when a rule or a protected path asks.
    Pending(PermissionRequestId, oneshot::Receiver<Decision>, bool),
}

/// An answer to a pending permission request, from a client or a hook.
pub(crate) struct Answer {
    /// The request.
    pub(crate) request: PermissionRequestId,
    /// The answer.
    pub(crate) decision: Decision,
    /// Who answered.
    pub(crate) by_client: String,
}

/// What a hook's input says of the session: its transcript's path and its mode.
pub(crate) struct HookSession {
    /// The transcript, written just now.
    pub(crate) transcript: PathBuf,
    /// The session's mode now.
    pub(crate) mode: Mode,
}

/// A child session to make.
#[derive(Debug, Clone)]
pub(crate) struct ChildSpec {
    /// Its directory: its parent's (a worktree of it when `worktree`).
    pub(crate) cwd: String,
    /// Its mode: never more than its parent's.
    pub(crate) mode: Mode,
    /// Its model, if not the configured default.
    pub(crate) model: Option<String>,
    /// Its provider profile, if not the configured default.
    pub(crate) provider: Option<String>,
    /// Its parent's environment, without secrets.
    pub(crate) env: Vec<(String, String)>,
    /// Its turn limit.
    pub(crate) max_turns: Option<u32>,
    /// Whether it works in a git worktree of its own.
    pub(crate) worktree: bool,
    /// Its parent and task.
    pub(crate) child: ChildOf,
}
