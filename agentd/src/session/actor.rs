//! The session actor: the single authority for one session. It holds the history, the queues,
//! the running run and its cancellation token, pending permission requests, and the event log
//! with its subscribers. The agent loop runs as a task the actor owns, so every message here is
//! handled while a run is in progress.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{
    Delivery, ErrorCode, ErrorInfo, Event, PermissionRequestId, RunId, RunOptions, SessionId,
    SessionInfo, SessionState,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::conversation::Message as HistoryMessage;
use crate::permission::AlwaysRule;
use crate::session::SessionEnv;
use crate::session::event_log::EventLog;
use crate::session::listing::Listing;
use crate::session::queue::Queues;
use crate::stale_files::FileTracker;
use crate::store::{Meta, Record, SessionStore};

mod asks;
mod changes;
mod children;
mod compaction;
mod confinement;
mod discard;
mod durable;
mod follow;
mod lifecycle;
mod loop_messages;
mod models;
mod outside;
mod parent_link;
mod port;
mod recovery;
mod screening;
mod sending;
mod settings;
mod transcript;
mod window;

pub use follow::{GetHistory, HistorySource, Subscribe, Unsubscribe};
pub use lifecycle::{Cancel, Close, TryUnload};
pub use outside::FileTouched;
use outside::tracker;
pub use port::SessionPort;
pub use sending::SendMessage;
pub use settings::{SetMode, SetResume};
pub use transcript::{HookContext, HookSession};

use asks::PendingAsk;
pub use asks::{Answer, Authorization, Authorize, Expire};
pub use changes::{Diff, Rewind};
pub use children::{AdoptChild, AwaitRun};
pub use compaction::{ApplyCompaction, CompactNow};
pub use durable::Flush;
pub use loop_messages::{BeginTurn, Emit, NextQueued, Push, RunDone, TurnInput};
pub use models::{GetUsage, ListModels, ModelList, SetModel};
pub use parent_link::{ChildNote, FromChild, ParentLink};

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
    /// Where the session publishes its listing whenever it changes.
    pub listing: Listing,
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
    /// When it started (or was resumed).
    started: std::time::Instant,
    _task: JoinHandle<()>,
}

/// One session (SPEC §2).
pub struct SessionActor {
    info: SessionInfo,
    max_turns: Option<u32>,
    log: EventLog,
    listing: Listing,
    /// What the board shows of the session, folded from its events.
    board: crate::session::summary::SummaryTracker,
    /// The tokens of its runs, by model, folded from its events.
    usage: crate::session::usage::UsageTracker,
    env: Arc<SessionEnv>,
    /// The history the model sees, shared with the run's turn input (not copied per turn).
    history: Arc<Vec<HistoryMessage>>,
    /// Goes up with every compaction: a summary of an older history is not applied.
    history_generation: u64,
    queues: Queues,
    run: Option<ActiveRun>,
    runs: u64,
    pending: HashMap<PermissionRequestId, PendingAsk>,
    decided: HashMap<PermissionRequestId, String>,
    requests: u64,
    always: Vec<AlwaysRule>,
    /// A `bash` call that changes which program a name runs (`export PATH=…`, `hash -p`, an
    /// alias) was let run: where deny rules exist, every program found through `PATH` asks
    /// from then on.
    lookup_changed: bool,
    store: SessionStore,
    meta: Meta,
    files: Arc<FileTracker>,
    /// A user asked for compaction while a run was going: it runs before the next model call.
    compact_requested: bool,
    /// The options of the last run, for work started without a client (manual compaction).
    last_options: RunOptions,
    /// The environment of the client that created the session, without secrets.
    client_env: Vec<(String, String)>,
    /// This actor, to send itself a [`Flush`].
    me: WeakActorRef<SessionActor>,
    /// The last `seq` reserved for deltas (see [`Record::Reserved`]).
    reserved_to: u64,
    /// A [`Flush`] is on its way.
    flush_scheduled: bool,
    /// `meta.json` is to be written by the next flush.
    meta_dirty: bool,
    /// This actor's watches on the daemon's file watcher, dropped when it stops.
    watch_owner: u64,
    /// A compaction a client asked for, under way: cancelling it stops it.
    compaction: Option<CancellationToken>,
    /// Whether the session was told that auto mode has no sandbox here.
    sandbox_warned: bool,
    /// Notices said in this session already (each is said once).
    noticed: std::collections::HashSet<String>,
    /// The checkpoints of the session's runs.
    checkpoints: Arc<crate::checkpoint::Checkpoints>,
    /// A run the daemon did not live to finish, to resume once loaded.
    to_resume: Option<recovery::Resume>,
    /// Its subagents, and its parent when it is one.
    family: children::Family,
    /// The system prompt's list of skills, read at each run's start.
    skills: Option<String>,
    /// Messages screened by hooks are stored in the order they came: one at a time.
    screening: Arc<tokio::sync::Mutex<()>>,
    /// The session holds nothing and asked to be deleted.
    discarding: bool,
}

impl Actor for SessionActor {
    type Args = SessionArgs;
    type Error = ErrorInfo;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let id = SessionId(args.meta.id.clone());
        let dir = SessionStore::dir_of(&args.env.paths.sessions_dir(), &id);
        let failed = |e: String| {
            ErrorInfo::new(
                ErrorCode::Internal,
                format!("cannot load session {id}: {e}"),
            )
        };
        let store = SessionStore::open(&dir).map_err(|e| failed(e.to_string()))?;
        let env_files = args.env.files.clone();
        let checkpoints = crate::checkpoint::Checkpoints::new(
            &args.env.paths.checkpoints_dir(),
            &id.0,
            PathBuf::from(&args.meta.cwd),
        )
        .with_legacy(dir.join("checkpoints"));
        static OWNERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let watch_owner = OWNERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let family = children::Family::new(
            &args.env.config().subagents,
            args.meta.child.as_ref().map(|c| {
                ParentLink::start(
                    args.env.directory.clone(),
                    SessionId(c.parent.clone()),
                    id.clone(),
                    me.downgrade(),
                )
            }),
        );
        let mut actor = SessionActor {
            log: EventLog::new(id.clone()),
            info: args.meta.info(),
            max_turns: args.meta.max_turns,
            listing: args.listing,
            board: Default::default(),
            usage: Default::default(),
            env: args.env,
            history: Arc::default(),
            history_generation: 0,
            queues: Queues::default(),
            run: None,
            runs: 0,
            pending: HashMap::new(),
            decided: HashMap::new(),
            requests: 0,
            always: Vec::new(),
            lookup_changed: false,
            store,
            meta: args.meta,
            files: Arc::new(tracker(&env_files, watch_owner, &me)),
            watch_owner,
            compact_requested: false,
            last_options: RunOptions::default(),
            client_env: Vec::new(),
            me: me.downgrade(),
            reserved_to: 0,
            flush_scheduled: false,
            meta_dirty: false,
            compaction: None,
            sandbox_warned: false,
            noticed: std::collections::HashSet::new(),
            checkpoints: Arc::new(checkpoints),
            to_resume: None,
            family,
            skills: None,
            screening: Arc::default(),
            discarding: false,
        };
        actor.info.turns = 0;
        // A large log takes a while to read: not on the runtime's threads, and a record at a
        // time, never all of it in memory.
        let restarted = args.restarted;
        let actor = tokio::task::spawn_blocking(move || {
            actor.client_env = actor.store.env();
            let mut replayer = recovery::Replayer::default();
            let read = crate::store::read_log(&actor.store.log_path(), |record| {
                replayer.apply(&mut actor, record)
            })
            .map_err(|e| e.to_string())?;
            actor.store.adopt(read).map_err(|e| e.to_string())?;
            replayer.finish(&mut actor, restarted);
            // What loading wrote (a closed run, a gap) is synced before anyone hears of it.
            actor.flush_now();
            Ok::<_, String>(actor)
        })
        .await
        .map_err(|e| failed(e.to_string()))?
        .map_err(failed)?;
        let mut actor = actor;
        if let Some(resume) = actor.to_resume.take() {
            actor.resume_run(resume, me);
        }
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
            // The daemon stops on purpose (a restart): the next one resumes the run and says
            // why it stopped.
            let run = run.id;
            self.record(&crate::store::Record::Stopped { run });
        }
        if let Some(compaction) = &self.compaction {
            compaction.cancel();
        }
        self.flush_now();
        self.env.files.forget(self.watch_owner);
        // Its `session`-scope MCP servers go with it.
        self.env.mcp.end_session(&self.info.id).await;
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

    /// The board's summary of this session as of now.
    fn summary(&self) -> protocol::SessionSummary {
        self.board.summary(self.info())
    }

    /// Appends a message to the history, stored first.
    fn push_message(&mut self, message: HistoryMessage) {
        self.record(&Record::Message {
            message: message.clone(),
        });
        if matches!(message, HistoryMessage::Assistant(_)) {
            self.info.turns += 1;
        }
        // A batch of tool results ends a unit of work: it is synced.
        if matches!(message, HistoryMessage::ToolResults { .. }) {
            self.request_sync();
        }
        Arc::make_mut(&mut self.history).push(message);
    }

    /// Replaces the history by `summary` followed by its last `keep_last` messages.
    fn replace_history(&mut self, summary: String, keep_last: usize) {
        let keep_from = self.history.len().saturating_sub(keep_last);
        let kept = self.history.get(keep_from..).unwrap_or_default().to_vec();
        self.history = Arc::new(
            std::iter::once(HistoryMessage::Summary { text: summary })
                .chain(kept)
                .collect(),
        );
        self.history_generation += 1;
    }

    /// The input of the next model call.
    fn turn_input(&self, compact_prompt: bool) -> TurnInput {
        let last_input = self
            .history
            .iter()
            .rev()
            .find_map(|m| match m {
                HistoryMessage::Assistant(reply) => Some(reply.usage.total_input()),
                _ => None,
            })
            .unwrap_or(0);
        let mut system = crate::prompt::system_prompt(
            &self.cwd(),
            self.info.mode,
            &self.plan_file(),
            compact_prompt,
        );
        if let Some(part) = &self.skills {
            system.push_str("\n\n");
            system.push_str(part);
        }
        if let Some(part) = self.subagent_prompt() {
            system.push_str("\n\n");
            system.push_str(&part);
        }
        TurnInput {
            system,
            messages: self.history.clone(),
            generation: self.history_generation,
            compact: self.compact_requested,
            last_input,
        }
    }

    /// Tells the clients what is queued.
    fn emit_queues(&mut self) {
        self.emit(Event::QueueChanged {
            steer: self.queues.steer(),
            follow_up: self.queues.follow_up(),
        });
    }

    /// A session without a title takes one from its first message (its first line); whether
    /// it did.
    fn take_title(&mut self, message: &str) -> bool {
        if self.info.title.is_some() {
            return false;
        }
        let title = protocol::title_of(message);
        if title.is_empty() {
            return false;
        }
        self.info.title = Some(title.clone());
        self.meta.title = Some(title);
        true
    }

    /// A user message joins the history, and the clients are told.
    fn push_user(&mut self, text: String, delivery: Delivery) {
        // The listing shows the title from the event below on; `meta.json` keeps it.
        if self.take_title(&text) {
            self.save_meta();
        }
        self.push_message(HistoryMessage::User {
            text: text.clone(),
            delivery,
        });
        self.emit(Event::UserMessage { text, delivery });
    }

    /// The environment of the session's commands: its client's, or (for a session created
    /// without one) the daemon's, without secrets.
    pub(super) fn command_env(&self, config: &crate::config::Config) -> Vec<(String, String)> {
        if self.client_env.is_empty() {
            config.shell_env.for_commands(&crate::shell_env::current())
        } else {
            config.shell_env.for_commands(&self.client_env)
        }
    }

    /// The session directory.
    fn cwd(&self) -> PathBuf {
        PathBuf::from(&self.info.cwd)
    }

    /// Where plan mode keeps its plan.
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
            self.listing.publish(self.summary());
        }
    }
}
