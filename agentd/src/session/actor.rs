//! The session actor: the single authority for one session. It holds the history, the queues,
//! the running run and its cancellation token, pending permission requests, and the event log
//! with its subscribers. The agent loop runs as a task the actor owns, so every message here is
//! handled while a run is in progress.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{
    Delivery, ErrorCode, ErrorInfo, Event, Mode, PermissionRequestId, RunId, RunOptions,
    SessionEvent, SessionId, SessionInfo, SessionState,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::ConnectionId;
use crate::files::{FileTracker, FileWatcher, Notice};
use crate::history::Message as HistoryMessage;
use crate::permission::AlwaysRule;
use crate::session::SessionEnv;
use crate::session::events::{EventLog, Subscription};
use crate::session::queue::Queues;
use crate::store::{Meta, Record, SessionStore};
use crate::supervisor::{SessionChanged, Supervisor};

mod asks;
mod loop_messages;
mod recovery;

use asks::PendingAsk;
pub use asks::{Answer, Authorization, Authorize, Expire};
pub use loop_messages::{
    ApplyCompaction, BeginTurn, CompactNow, Emit, NextQueued, Push, RunDone, TurnInput,
};

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
    /// The environment of the client that created the session, without secrets.
    client_env: Vec<(String, String)>,
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
            client_env: Vec::new(),
        };
        actor.client_env = actor.store.env();
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
