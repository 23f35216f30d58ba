//! The session actor: the single authority for one session. It holds the history, the queues,
//! the running run and its cancellation token, pending permission requests, and the event log
//! with its subscribers. The agent loop runs as a task the actor owns, so every message here is
//! handled while a run is in progress.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::FutureExt;
use kameo::prelude::*;
use protocol::{
    Decision, Delivery, ErrorCode, ErrorInfo, Event, Mode, PermissionRequestId, RunId, RunOptions,
    SessionEvent, SessionId, SessionInfo, SessionState, StopReason, TokenUsage, ToolCallInfo,
};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::ConnectionId;
use crate::files::{FileTracker, FileWatcher, Notice};
use crate::history::{Message as HistoryMessage, ToolResult};
use crate::permission::{self, AlwaysRule, Verdict};
use crate::session::SessionEnv;
use crate::session::events::{EventLog, Subscription};
use crate::session::queue::Queues;
use crate::session::run::{self, RunOutcome, RunSetup};
use crate::store::{Meta, Record, SessionStore};
use crate::supervisor::{SessionChanged, Supervisor};
use crate::tools::Tool;

/// With this variable set, the message [`FAULT_MESSAGE`] makes the session actor panic; the
/// tests use it to check that a failed actor is restarted from its log.
pub const FAULT_ENV: &str = "AGENTD_FAULT_INJECTION";
/// See [`FAULT_ENV`].
pub const FAULT_MESSAGE: &str = "__agentd_fault_panic__";

/// What a session actor starts from: it loads the rest from the session's store.
#[derive(Clone)]
pub struct SessionArgs {
    /// The session's stored settings.
    pub meta: Meta,
    /// Told whenever the session's listing changes.
    pub supervisor: ActorRef<Supervisor>,
    /// What all sessions share.
    pub env: Arc<SessionEnv>,
    /// Whether this start follows a failure of the session's actor (not a daemon start).
    pub restarted: bool,
}

/// The run in progress.
struct ActiveRun {
    id: RunId,
    cancel: CancellationToken,
    options: RunOptions,
    _task: JoinHandle<()>,
}

/// A permission request waiting for an answer.
struct PendingAsk {
    answer: oneshot::Sender<Decision>,
    tool: Tool,
    args: Value,
}

/// One session (SPEC §2).
pub struct SessionActor {
    info: SessionInfo,
    max_turns: Option<u32>,
    log: EventLog,
    supervisor: ActorRef<Supervisor>,
    env: Arc<SessionEnv>,
    history: Vec<HistoryMessage>,
    queues: Queues,
    run: Option<ActiveRun>,
    runs: u64,
    pending: HashMap<PermissionRequestId, PendingAsk>,
    decided: HashMap<PermissionRequestId, String>,
    requests: u64,
    always: Vec<AlwaysRule>,
    store: SessionStore,
    meta: Meta,
    files: Arc<FileTracker>,
    /// A user asked for compaction while a run was going: it runs before the next model call.
    compact_requested: bool,
    /// The options of the last run, for work started without a client (manual compaction).
    last_options: RunOptions,
}

impl Actor for SessionActor {
    type Args = SessionArgs;
    type Error = ErrorInfo;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let id = SessionId(args.meta.id.clone());
        let dir = SessionStore::dir_of(&args.env.paths.sessions_dir(), &id);
        let (store, loaded) = SessionStore::open(&dir).map_err(|e| {
            ErrorInfo::new(
                ErrorCode::Internal,
                format!("cannot load session {id}: {e}"),
            )
        })?;
        let env_files = args.env.files.clone();
        let mut actor = SessionActor {
            log: EventLog::new(id),
            info: args.meta.info(),
            max_turns: args.meta.max_turns,
            supervisor: args.supervisor,
            env: args.env,
            history: Vec::new(),
            queues: Queues::default(),
            run: None,
            runs: 0,
            pending: HashMap::new(),
            decided: HashMap::new(),
            requests: 0,
            always: Vec::new(),
            store,
            meta: args.meta,
            files: Arc::new(tracker(&env_files, &me)),
            compact_requested: false,
            last_options: RunOptions::default(),
        };
        actor.info.turns = 0;
        actor.replay(loaded.records, args.restarted);
        Ok(actor)
    }

    async fn on_panic(
        &mut self,
        _: WeakActorRef<Self>,
        err: PanicError,
    ) -> Result<ControlFlow<ActorStopReason>, Self::Error> {
        // The run cannot go on without the state it belonged to; the restarted actor closes it
        // from the log.
        tracing::error!(session = %self.info.id, "session actor failed: {err}; restarting it from its log");
        if let Some(run) = &self.run {
            run.cancel.cancel();
        }
        Ok(ControlFlow::Break(ActorStopReason::Panicked(err)))
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Self::Error> {
        if let Some(run) = &self.run {
            run.cancel.cancel();
        }
        Ok(())
    }
}

impl SessionActor {
    /// The listing of this session as of now.
    fn info(&self) -> SessionInfo {
        let mut info = self.info.clone();
        info.last_seq = self.log.last_seq();
        if self.log.last_time_ms() > 0 {
            info.last_activity_ms = self.log.last_time_ms();
        }
        (info.steer_queued, info.follow_up_queued) = self.queues.lens();
        info
    }

    /// Stores `event`, then sends it to subscribers, and tells the supervisor the listing
    /// changed.
    fn emit(&mut self, event: Event) {
        let fold = matches!(event, Event::AssistantMessage { .. });
        // Streamed pieces change nothing in the listing; telling the supervisor of each would
        // put work on the hottest path.
        let listed = !matches!(event, Event::TextDelta { .. } | Event::ThinkingDelta { .. });
        let event = self.log.number(event);
        self.record(&Record::Event {
            seq: event.seq,
            time_ms: event.time_ms,
            event: event.event.clone(),
        });
        self.log.publish(event);
        if fold {
            self.log.fold_deltas();
        }
        if listed {
            // The supervisor's mailbox is unbounded, so this never waits.
            let _ = self.supervisor.tell(SessionChanged(self.info())).try_send();
        }
    }

    /// Appends a record to the session's store. A failing disk must not take the session
    /// down: the failure is logged and told to the clients.
    fn record(&mut self, record: &Record) {
        if let Err(err) = self.store.append(record) {
            tracing::error!(session = %self.info.id, "cannot store a record: {err}");
            let event = self.log.number(Event::Error {
                message: format!("the session could not be saved: {err}"),
            });
            self.log.publish(event);
        }
    }

    /// Appends a message to the history, stored first.
    fn push_message(&mut self, message: HistoryMessage) {
        self.record(&Record::Message {
            message: message.clone(),
        });
        if matches!(message, HistoryMessage::Assistant(_)) {
            self.info.turns += 1;
        }
        self.history.push(message);
    }

    /// Replaces the history by `summary` followed by its last `keep_last` messages.
    fn replace_history(&mut self, summary: String, keep_last: usize) {
        let keep_from = self.history.len().saturating_sub(keep_last);
        let kept = self.history.split_off(keep_from);
        self.history = std::iter::once(HistoryMessage::Summary { text: summary })
            .chain(kept)
            .collect();
    }

    /// The input of the next model call.
    fn turn_input(&self) -> TurnInput {
        let last_input = self
            .history
            .iter()
            .rev()
            .find_map(|m| match m {
                HistoryMessage::Assistant(reply) => Some(reply.usage.total_input()),
                _ => None,
            })
            .unwrap_or(0);
        TurnInput {
            system: crate::prompt::system_prompt(&self.cwd(), self.info.mode, &self.plan_file()),
            messages: self.history.clone(),
            compact: self.compact_requested,
            last_input,
        }
    }

    /// Writes `meta.json` with the session's settings and counters as of now.
    fn save_meta(&mut self) {
        let info = self.info();
        self.meta.mode = info.mode.as_str().to_string();
        self.meta.turns = info.turns;
        self.meta.last_activity_ms = info.last_activity_ms;
        if let Err(err) = self.store.write_meta(&self.meta) {
            tracing::error!(session = %self.info.id, "cannot save the session settings: {err}");
        }
    }

    /// Rebuilds the session from its stored records and closes a run the daemon (or this
    /// actor) did not live to finish.
    fn replay(&mut self, records: Vec<Record>, restarted: bool) {
        let mut open_run: Option<(RunId, u32)> = None;
        let mut asks = Vec::new();
        let mut results_since_reply: Vec<(String, String, bool, String)> = Vec::new();
        for record in records {
            match record {
                Record::Header { .. } => {}
                Record::Message { message } => {
                    if matches!(message, HistoryMessage::Assistant(_)) {
                        self.info.turns += 1;
                    }
                    if matches!(message, HistoryMessage::ToolResults { .. }) {
                        results_since_reply.clear();
                    }
                    self.history.push(message);
                }
                Record::Rule { rule } => self.always.push(rule),
                Record::Compaction { summary, keep_last } => {
                    self.replace_history(summary, keep_last)
                }
                Record::Event {
                    seq,
                    time_ms,
                    event,
                } => {
                    match &event {
                        Event::RunStarted { run, .. } => {
                            self.runs = self.runs.max(run.0);
                            open_run = Some((*run, 0));
                        }
                        Event::AssistantMessage { .. } => {
                            if let Some((_, turns)) = &mut open_run {
                                *turns += 1;
                            }
                            results_since_reply.clear();
                        }
                        Event::ToolResult {
                            id,
                            name,
                            is_error,
                            output,
                            ..
                        } => {
                            results_since_reply.push((
                                id.clone(),
                                name.clone(),
                                *is_error,
                                output.clone(),
                            ));
                        }
                        Event::RunFinished { .. } => open_run = None,
                        Event::ModeChanged { mode } => self.info.mode = *mode,
                        Event::QueueChanged { steer, follow_up } => {
                            self.queues = Queues::default();
                            for text in steer {
                                self.queues.push(text.clone(), Delivery::Steer);
                            }
                            for text in follow_up {
                                self.queues.push(text.clone(), Delivery::FollowUp);
                            }
                        }
                        Event::PermissionRequested { request, .. } => {
                            self.requests = self.requests.max(request.0);
                            asks.push(*request);
                        }
                        Event::PermissionResolved {
                            request, by_client, ..
                        } => {
                            asks.retain(|r| r != request);
                            self.decided.insert(*request, by_client.clone());
                        }
                        _ => {}
                    }
                    self.log.restore(seq, time_ms, event);
                }
            }
        }
        if restarted {
            self.emit(Event::Error {
                message: "the session restarted after an internal error; its history was reloaded from disk".to_string(),
            });
        }
        let Some((run, turns)) = open_run else { return };
        let reason = if restarted {
            "the session restarted after an internal error during this run"
        } else {
            "the daemon stopped during this run"
        };
        // Every tool call of the last reply gets its result: the ones that finished before the
        // stop, and "(interrupted: the daemon stopped)" for the rest.
        if let Some(HistoryMessage::Assistant(reply)) = self.history.last() {
            let calls: Vec<_> = reply.tool_calls().into_iter().cloned().collect();
            if !calls.is_empty() {
                let results = calls
                    .iter()
                    .map(
                        |call| match results_since_reply.iter().find(|r| r.0 == call.id) {
                            Some((id, name, is_error, output)) => ToolResult {
                                call_id: id.clone(),
                                name: name.clone(),
                                output: output.clone(),
                                is_error: *is_error,
                            },
                            None => {
                                let result = ToolResult {
                                    call_id: call.id.clone(),
                                    name: call.name.clone(),
                                    output: "(interrupted: the daemon stopped)".to_string(),
                                    is_error: true,
                                };
                                self.emit(Event::ToolResult {
                                    id: result.call_id.clone(),
                                    name: result.name.clone(),
                                    is_error: true,
                                    output: result.output.clone(),
                                    duration_ms: 0,
                                });
                                result
                            }
                        },
                    )
                    .collect();
                self.push_message(HistoryMessage::ToolResults { results });
            }
        }
        for request in asks {
            self.decided
                .insert(request, "the daemon restart".to_string());
            self.emit(Event::PermissionResolved {
                request,
                decision: Decision::Deny,
                by_client: "the daemon restart".to_string(),
            });
        }
        tracing::info!(session = %self.info.id, run = run.0, "closing a run interrupted by a stop");
        self.emit(Event::RunFinished {
            run,
            stop_reason: StopReason::Error,
            turns,
            truncated: false,
            usage: TokenUsage::default(),
            // The queues are kept: the next message delivers them.
            returned_messages: Vec::new(),
            error: Some(reason.to_string()),
        });
        self.save_meta();
    }

    fn emit_queues(&mut self) {
        self.emit(Event::QueueChanged {
            steer: self.queues.steer(),
            follow_up: self.queues.follow_up(),
        });
    }

    fn push_user(&mut self, text: String, delivery: Delivery) {
        self.push_message(HistoryMessage::User {
            text: text.clone(),
            delivery,
        });
        self.emit(Event::UserMessage { text, delivery });
    }

    fn cwd(&self) -> PathBuf {
        PathBuf::from(&self.info.cwd)
    }

    fn plan_file(&self) -> PathBuf {
        self.env
            .paths
            .plans_dir()
            .join(format!("{}.md", self.info.id))
    }

    /// Starts a run whose first message is `text`.
    fn start_run(
        &mut self,
        text: String,
        delivery: Delivery,
        options: RunOptions,
        me: ActorRef<Self>,
    ) -> RunId {
        self.runs += 1;
        let id = RunId(self.runs);
        let config = self.env.config();
        let max_turns = options
            .max_turns
            .or(self.max_turns)
            .unwrap_or(config.max_turns);
        self.emit(Event::RunStarted {
            run: id,
            trigger: delivery,
            max_turns,
        });
        self.push_user(text, delivery);
        self.info.state = SessionState::Running;
        let cancel = CancellationToken::new();
        let provider = config.provider(
            &self.env.http,
            options
                .provider
                .as_deref()
                .or(self.info.provider.as_deref()),
            options.model.as_deref().or(self.info.model.as_deref()),
            &options.env,
        );
        let context_window = config.context_window(
            options
                .provider
                .as_deref()
                .or(self.info.provider.as_deref()),
            provider.as_ref().map_or("", |(_, model)| model.as_str()),
        );
        let setup = RunSetup {
            session: me.clone(),
            run: id,
            cwd: self.cwd(),
            provider,
            tools: self.env.tools.clone(),
            cancel: cancel.clone(),
            max_turns,
            max_tokens: config.max_tokens,
            bash_timeout: config.bash_timeout(),
            permission_timeout: config.permission_timeout(),
            files: self.files.clone(),
            retry: config.retry_policy(),
            context_window,
            compaction: config.compaction,
        };
        let task = tokio::spawn(async move {
            let outcome = AssertUnwindSafe(run::run(setup))
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| {
                    let text = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!("agent loop panicked: {text}");
                    RunOutcome {
                        stop_reason: StopReason::Error,
                        turns: 0,
                        truncated: false,
                        usage: TokenUsage::default(),
                        error: Some(format!("internal error in the agent loop: {text}")),
                    }
                });
            let _ = me.tell(RunDone { run: id, outcome }).await;
        });
        self.last_options = options.clone();
        self.run = Some(ActiveRun {
            id,
            cancel,
            options,
            _task: task,
        });
        tracing::info!(session = %self.info.id, run = id.0, "run started");
        id
    }

    /// Decides a pending permission request; the first answer wins.
    fn resolve(&mut self, msg: Answer) -> Result<(), ErrorInfo> {
        let Some(pending) = self.pending.remove(&msg.request) else {
            return Err(match self.decided.get(&msg.request) {
                Some(by) => ErrorInfo::new(
                    ErrorCode::AlreadyDecided,
                    format!(
                        "permission request {} was already decided by {by}",
                        msg.request
                    ),
                ),
                None => ErrorInfo::new(
                    ErrorCode::UnknownPermissionRequest,
                    format!(
                        "no pending permission request {} in this session",
                        msg.request
                    ),
                ),
            });
        };
        if msg.decision == Decision::AllowAlways {
            let (cwd, plan) = (self.cwd(), self.plan_file());
            let call = permission::Call {
                tool: pending.tool,
                args: &pending.args,
                cwd: &cwd,
                plan_file: &plan,
            };
            if let Some(rule) = permission::rule_for(call) {
                self.record(&Record::Rule { rule: rule.clone() });
                self.always.push(rule);
            }
        }
        let _ = pending.answer.send(msg.decision);
        self.decided.insert(msg.request, msg.by_client.clone());
        self.emit(Event::PermissionResolved {
            request: msg.request,
            decision: msg.decision,
            by_client: msg.by_client,
        });
        if self.pending.is_empty() && self.run.is_some() {
            self.set_state(SessionState::Running);
        }
        Ok(())
    }

    /// The running run, if it is `run`; messages of a run that is gone are refused.
    fn active(&self, run: RunId) -> Result<&ActiveRun, ErrorInfo> {
        self.run.as_ref().filter(|r| r.id == run).ok_or_else(|| {
            ErrorInfo::new(
                ErrorCode::InvalidRequest,
                format!("run {run} is not running"),
            )
        })
    }

    fn set_state(&mut self, state: SessionState) {
        if self.info.state != state {
            self.info.state = state;
            let _ = self.supervisor.tell(SessionChanged(self.info())).try_send();
        }
    }
}

/// A tracker whose files the daemon's watcher reports to this session.
fn tracker(watcher: &FileWatcher, session: &ActorRef<SessionActor>) -> FileTracker {
    let (watcher, session) = (watcher.clone(), session.downgrade());
    FileTracker::new(move |path| {
        let session = session.clone();
        let notice: Notice = Box::new(move |changed: &Path| {
            if let Some(session) = session.upgrade() {
                let _ = session.tell(FileTouched(changed.to_path_buf())).try_send();
            }
        });
        watcher.watch(path, Arc::new(notice));
    })
}

/// A file the session read was touched on disk.
pub struct FileTouched(pub PathBuf);

impl Message<FileTouched> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: FileTouched, _: &mut Context<Self, Self::Reply>) {
        if self.files.changed_outside(&msg.0) {
            let path = crate::tools::display(&self.cwd(), &msg.0);
            self.emit(Event::FileChanged { path });
        }
    }
}

/// Subscribe a connection from `from_seq`.
pub struct Subscribe {
    /// The subscribing connection.
    pub conn: ConnectionId,
    /// The last `seq` the client has.
    pub from_seq: u64,
}

impl Message<Subscribe> for SessionActor {
    type Reply = Result<(SessionInfo, Subscription), ErrorInfo>;

    async fn handle(&mut self, msg: Subscribe, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let subscription = self.log.subscribe(msg.conn, msg.from_seq);
        Ok((self.info(), subscription))
    }
}

/// End a connection's subscription.
pub struct Unsubscribe {
    /// The connection.
    pub conn: ConnectionId,
}

impl Message<Unsubscribe> for SessionActor {
    /// The session's full id.
    type Reply = Result<SessionId, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: Unsubscribe,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.log.unsubscribe(msg.conn);
        Ok(self.info.id.clone())
    }
}

/// The session's history: its listing and held events.
pub struct GetHistory;

impl Message<GetHistory> for SessionActor {
    type Reply = Result<(SessionInfo, Vec<SessionEvent>), ErrorInfo>;

    async fn handle(&mut self, _: GetHistory, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        Ok((self.info(), self.log.events_after(0)))
    }
}

/// Change the permission mode.
pub struct SetMode(pub Mode);

impl Message<SetMode> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: SetMode, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.info.mode = msg.0;
        self.emit(Event::ModeChanged { mode: msg.0 });
        self.save_meta();
        Ok(())
    }
}

/// A user message: it steers or follows the running run, or starts a run.
pub struct SendMessage {
    /// The message.
    pub text: String,
    /// Where it goes while a run is going.
    pub delivery: Delivery,
    /// Options for the run it may start.
    pub options: RunOptions,
}

impl Message<SendMessage> for SessionActor {
    /// The run it started, if it started one.
    type Reply = Result<Option<RunId>, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: SendMessage,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        if msg.text == FAULT_MESSAGE && std::env::var_os(FAULT_ENV).is_some() {
            panic!("fault injected by a test");
        }
        if msg.text.trim().is_empty() {
            return Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                "the message is empty",
            ));
        }
        if self.run.is_some() {
            self.queues.push(msg.text, msg.delivery);
            self.emit_queues();
            return Ok(None);
        }
        let me = ctx.actor_ref().clone();
        Ok(Some(self.start_run(
            msg.text,
            msg.delivery,
            msg.options,
            me,
        )))
    }
}

/// Cancel the running run, if any.
pub struct Cancel;

impl Message<Cancel> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, _: Cancel, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if let Some(run) = &self.run {
            tracing::info!(session = %self.info.id, run = run.id.0, "run cancelled");
            run.cancel.cancel();
        }
        Ok(())
    }
}

/// Answer a pending permission request.
pub struct Answer {
    /// The request.
    pub request: PermissionRequestId,
    /// The answer.
    pub decision: Decision,
    /// Who answered.
    pub by_client: String,
}

impl Message<Answer> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Answer, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.resolve(msg)
    }
}

/// Close the session for deletion: refuse while running unless `force`, tell subscribers,
/// and stop the actor.
pub struct Close {
    /// Cancel a running run instead of refusing.
    pub force: bool,
}

impl Message<Close> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Close, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if let Some(run) = &self.run {
            if !msg.force {
                return Err(ErrorInfo::new(
                    ErrorCode::Busy,
                    format!(
                        "session {} is running; cancel it first or delete with --force",
                        self.info.id
                    ),
                ));
            }
            run.cancel.cancel();
        }
        self.log.emit(Event::SessionDeleted);
        self.log.close_all();
        ctx.stop();
        Ok(())
    }
}

// Messages from the run task.

/// Emit an event of the run (text deltas, tool calls and results, usage).
pub struct Emit {
    /// The run sending it.
    pub run: RunId,
    /// The event.
    pub event: Event,
}

impl Message<Emit> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: Emit, _: &mut Context<Self, Self::Reply>) {
        if self.active(msg.run).is_ok() {
            self.emit(msg.event);
        }
    }
}

/// Append a message to the history, with the event that announces it.
pub struct Push {
    /// The run sending it.
    pub run: RunId,
    /// The message.
    pub message: HistoryMessage,
    /// Its event, if it has one.
    pub event: Option<Event>,
}

impl Message<Push> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Push, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.active(msg.run)?;
        self.push_message(msg.message);
        if let Some(event) = msg.event {
            self.emit(event);
        }
        Ok(())
    }
}

/// What the next model call sees.
pub struct TurnInput {
    /// The system prompt as of now (the mode may have changed).
    pub system: String,
    /// The history, queued steering included.
    pub messages: Vec<HistoryMessage>,
    /// Whether a user asked for compaction.
    pub compact: bool,
    /// The prompt tokens of the last reply, for the compaction threshold.
    pub last_input: u64,
}

/// Replace the older history by a summary (compaction).
pub struct ApplyCompaction {
    /// The run that compacted, or `None` for a compaction asked for on an idle session.
    pub run: Option<RunId>,
    /// The summary.
    pub summary: String,
    /// Messages kept verbatim at the end.
    pub keep_last: usize,
}

impl Message<ApplyCompaction> for SessionActor {
    /// The next model call's input after compaction.
    type Reply = Result<TurnInput, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: ApplyCompaction,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        match msg.run {
            Some(run) => {
                self.active(run)?;
            }
            None if self.run.is_some() => {
                return Err(ErrorInfo::new(
                    ErrorCode::Busy,
                    "a run started while compacting; compact again later",
                ));
            }
            None => {}
        }
        let before_tokens = crate::compact::estimate_all(&self.history);
        self.record(&Record::Compaction {
            summary: msg.summary.clone(),
            keep_last: msg.keep_last,
        });
        self.replace_history(msg.summary, msg.keep_last);
        self.compact_requested = false;
        let after_tokens = crate::compact::estimate_all(&self.history);
        self.emit(Event::Compacted {
            before_tokens,
            after_tokens,
        });
        Ok(self.turn_input())
    }
}

/// Compact the history now (or, while a run is going, before its next model call).
pub struct CompactNow;

impl Message<CompactNow> for SessionActor {
    type Reply = DelegatedReply<Result<(), ErrorInfo>>;

    async fn handle(&mut self, _: CompactNow, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self.run.is_some() {
            self.compact_requested = true;
            return ctx.reply(Ok(()));
        }
        let input = self.turn_input();
        let Some(cut) =
            crate::compact::cut_point(&input.messages, crate::compact::KEEP_RECENT_TOKENS)
        else {
            return ctx.reply(Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                "the history is short enough; there is nothing to compact",
            )));
        };
        let config = self.env.config();
        let provider = config.provider(
            &self.env.http,
            self.last_options
                .provider
                .as_deref()
                .or(self.info.provider.as_deref()),
            self.last_options
                .model
                .as_deref()
                .or(self.info.model.as_deref()),
            &self.last_options.env,
        );
        let me = ctx.actor_ref().clone();
        ctx.spawn(async move {
            let (provider, model) =
                provider.map_err(|e| ErrorInfo::new(ErrorCode::InvalidRequest, e.to_string()))?;
            let specs = crate::tools::specs();
            let summary = crate::compact::summarize(
                &provider,
                &model,
                &input.system,
                &specs,
                &input.messages[..cut],
                &CancellationToken::new(),
            )
            .await
            .map_err(|e| ErrorInfo::new(ErrorCode::Internal, format!("compaction failed: {e}")))?;
            let apply = ApplyCompaction {
                run: None,
                summary,
                keep_last: input.messages.len() - cut,
            };
            match me.ask(apply).await {
                Ok(_) => Ok(()),
                Err(SendError::HandlerError(err)) => Err(err),
                Err(err) => Err(ErrorInfo::new(ErrorCode::Internal, err.to_string())),
            }
        })
    }
}

/// Deliver queued steering and hand out the next model call's input.
pub struct BeginTurn(pub RunId);

impl Message<BeginTurn> for SessionActor {
    type Reply = Result<TurnInput, ErrorInfo>;

    async fn handle(&mut self, msg: BeginTurn, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.active(msg.0)?;
        let steer = self.queues.take_steer();
        if !steer.is_empty() {
            for text in steer {
                self.push_user(text, Delivery::Steer);
            }
            self.emit_queues();
        }
        Ok(self.turn_input())
    }
}

/// The run would complete: deliver queued steering, or else the next follow-up.
pub struct NextQueued(pub RunId);

impl Message<NextQueued> for SessionActor {
    /// What was delivered, if anything.
    type Reply = Result<Option<Delivery>, ErrorInfo>;

    async fn handle(&mut self, msg: NextQueued, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.active(msg.0)?;
        let steer = self.queues.take_steer();
        let delivered = if !steer.is_empty() {
            for text in steer {
                self.push_user(text, Delivery::Steer);
            }
            Some(Delivery::Steer)
        } else if let Some(text) = self.queues.take_follow_up() {
            self.push_user(text, Delivery::FollowUp);
            Some(Delivery::FollowUp)
        } else {
            None
        };
        if delivered.is_some() {
            self.emit_queues();
        }
        Ok(delivered)
    }
}

/// May this call run?
pub struct Authorize {
    /// The run asking.
    pub run: RunId,
    /// The tool.
    pub tool: Tool,
    /// Its arguments.
    pub args: Value,
    /// The call as the model made it.
    pub call: ToolCallInfo,
}

/// The answer to [`Authorize`].
pub enum Authorization {
    /// Run it.
    Allowed,
    /// Do not; the model gets this reason.
    Denied(String),
    /// Wait for a user's answer to this request.
    Pending(PermissionRequestId, oneshot::Receiver<Decision>),
}

impl Message<Authorize> for SessionActor {
    type Reply = Result<Authorization, ErrorInfo>;

    async fn handle(&mut self, msg: Authorize, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let run = self.active(msg.run)?;
        let (cwd, plan) = (self.cwd(), self.plan_file());
        let call = permission::Call {
            tool: msg.tool,
            args: &msg.args,
            cwd: &cwd,
            plan_file: &plan,
        };
        let rules = self.env.config().permissions.clone();
        match permission::check(
            call,
            self.info.mode,
            &run.options.grants,
            &self.always,
            &rules,
        ) {
            Verdict::Allow => Ok(Authorization::Allowed),
            Verdict::Deny(reason) => Ok(Authorization::Denied(reason)),
            Verdict::Ask if run.options.deny_unanswered => Ok(Authorization::Denied(
                permission::unattended_denial(msg.tool.class()),
            )),
            Verdict::Ask => {
                self.requests += 1;
                let request = PermissionRequestId(self.requests);
                let summary = permission::summary(call);
                let (answer, receiver) = oneshot::channel();
                self.pending.insert(
                    request,
                    PendingAsk {
                        answer,
                        tool: msg.tool,
                        args: msg.args.clone(),
                    },
                );
                self.info.state = SessionState::AwaitingApproval;
                self.emit(Event::PermissionRequested {
                    request,
                    tool: msg.call.name,
                    args: msg.call.args,
                    summary,
                });
                Ok(Authorization::Pending(request, receiver))
            }
        }
    }
}

/// Nobody answered a permission request in time: deny it.
pub struct Expire(pub PermissionRequestId);

impl Message<Expire> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Expire, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if !self.pending.contains_key(&msg.0) {
            return Ok(());
        }
        let answer = Answer {
            request: msg.0,
            decision: Decision::Deny,
            by_client: "the permission timeout".to_string(),
        };
        self.resolve(answer)
    }
}

/// The run task ended.
pub struct RunDone {
    /// The run.
    pub run: RunId,
    /// How it ended.
    pub outcome: RunOutcome,
}

impl Message<RunDone> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: RunDone, ctx: &mut Context<Self, Self::Reply>) {
        if self.run.as_ref().map(|r| r.id) != Some(msg.run) {
            return;
        }
        let Some(finished) = self.run.take() else {
            return;
        };
        let outcome = msg.outcome;
        for (request, _) in self.pending.drain() {
            self.decided
                .insert(request, "the end of the run".to_string());
            self.log.emit(Event::PermissionResolved {
                request,
                decision: Decision::Deny,
                by_client: "the end of the run".to_string(),
            });
        }
        // A completed run leaves nothing queued except what arrived after its last look at
        // the queues; that starts the next run below. Any other end returns the queue.
        let returned = if outcome.stop_reason == StopReason::Completed {
            Vec::new()
        } else {
            self.queues.drain()
        };
        if !returned.is_empty() {
            self.emit_queues();
        }
        self.info.state = SessionState::Idle;
        tracing::info!(session = %self.info.id, run = msg.run.0, stop = %outcome.stop_reason, "run finished");
        self.emit(Event::RunFinished {
            run: msg.run,
            stop_reason: outcome.stop_reason,
            turns: outcome.turns,
            truncated: outcome.truncated,
            usage: outcome.usage,
            returned_messages: returned,
            error: outcome.error,
        });
        self.save_meta();
        if let Some((text, delivery)) = self.queues.take_next() {
            self.emit_queues();
            let me = ctx.actor_ref().clone();
            // The next run goes on with the same options (grants, provider settings).
            self.start_run(text, delivery, finished.options, me);
        }
    }
}
