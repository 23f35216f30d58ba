//! The session actor: the single authority for one session
//! (docs/architecture.md#processes-and-actors). It holds the session's parts, each owning its
//! state: what the session shows ([`shown`]), its log, store and settings ([`durable`]), its
//! history ([`history`]), its queues, its permission asks ([`asks`]), its run slot ([`run_slot`]),
//! its subagents and parent ([`family`]) and its directory ([`workspace`]). The actor routes each
//! message to the parts it concerns. The agent loop runs as a task the actor owns, so every message
//! here is handled while a run is in progress; the loop reaches the actor only through its port.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{
    Delivery, ErrorCode, ErrorInfo, Event, SessionId, SessionInfo, SessionState, SessionSummary,
};

use crate::config::DurabilityMode;
use crate::conversation::Message as HistoryMessage;
use crate::session::SessionEnv;
use crate::session::event_log::Durability;
use crate::session::listing::Listing;
use crate::session::queue::{Prompt, Queues};
use crate::session::run::TurnInput;
use crate::store::{Meta, Record, SessionStore};

mod asks;
mod changes;
mod children;
mod compaction;
mod confinement;
mod discard;
mod door;
mod durable;
mod family;
mod follow;
mod from_run;
mod history;
mod images;
mod lifecycle;
mod models;
mod outside;
mod parent_link;
mod permissions;
mod recovery;
mod run_end;
mod run_slot;
mod run_start;
mod screening;
mod sending;
mod settings;
mod shells;
mod shown;
mod transcript;
mod window;
mod workspace;

pub(crate) use crate::session::run::Answer;
pub(crate) use changes::{Diff, Rewind};
pub(crate) use compaction::CompactNow;
pub(crate) use durable::Flush;
pub(crate) use follow::{GetHistory, HistorySource, Subscribe, Unsubscribe};
pub(crate) use images::{ImagesFor, StoredImages};
pub(crate) use lifecycle::{Cancel, Close, TryUnload};
pub(crate) use models::{GetUsage, ListModels, SetModel};
pub(crate) use sending::SendMessage;
pub(crate) use settings::{SetMode, SetResume};
pub(crate) use shells::{KillShell, ListShells};

/// With this variable set, the message [`FAULT_MESSAGE`] makes the session actor panic; the
/// tests use it to check that a failed actor is restarted from its log.
const FAULT_ENV: &str = "AGENTD_FAULT_INJECTION";
/// See [`FAULT_ENV`].
const FAULT_MESSAGE: &str = "__agentd_fault_panic__";

/// What a session actor starts from: it loads the rest from the session's store.
#[derive(Clone)]
pub struct SessionArgs {
    /// The session's stored settings.
    pub(crate) meta: Meta,
    /// Where the session publishes its listing whenever it changes.
    pub(crate) listing: Listing,
    /// What all sessions share.
    pub(crate) env: Arc<SessionEnv>,
    /// Whether this start follows a failure of the session's actor (not a daemon start).
    pub(crate) restarted: bool,
}

/// One session (docs/architecture.md#processes-and-actors). It is `pub` because the
/// supervisor's messages answer with its actor's reference.
pub struct SessionActor {
    /// What every session shares.
    env: Arc<SessionEnv>,
    /// What the daemon and the clients see of the session.
    shown: shown::Shown,
    /// The event log, the store and the stored settings.
    durable: durable::Durable,
    /// The messages the model sees, and their compaction.
    history: history::History,
    /// Messages waiting to steer or follow the run in progress.
    queues: Queues,
    /// Permission requests, answers and rules.
    asks: asks::Asks,
    /// The run in progress, and what the session keeps of its runs.
    runs: run_slot::RunSlot,
    /// Its subagents, and its parent when it is one.
    family: family::Family,
    /// Its directory, the files it read, its checkpoints and environment.
    workspace: workspace::Workspace,
    /// Its background shells, which outlive its runs.
    shells: shells::SessionShells,
    /// The last Responses reply its next run may continue (`previous_response_id`).
    responses_chain: Arc<crate::provider::ResponsesChain>,
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
        let cwd = PathBuf::from(&args.meta.cwd);
        let checkpoints = crate::checkpoint::Checkpoints::new(
            &args.env.paths.checkpoints_dir(),
            &id.0,
            cwd.clone(),
        )
        .with_legacy(dir.join("checkpoints"));
        static OWNERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let watch_owner = OWNERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let family = family::Family::new(
            &args.env.config().subagents,
            args.meta.child.as_ref().map(|c| {
                parent_link::ParentLink::start(
                    args.env.directory.clone(),
                    SessionId(c.parent.clone()),
                    id.clone(),
                    me.downgrade(),
                )
            }),
        );
        let plan_file = args.env.paths.plans_dir().join(format!("{id}.md"));
        let files = outside::tracker(&args.env.files, watch_owner, &me);
        let actor = SessionActor {
            shown: shown::Shown::new(args.meta.info(), args.listing),
            durable: durable::Durable::new(store, args.meta, me.downgrade()),
            history: history::History::default(),
            queues: Queues::default(),
            asks: asks::Asks::default(),
            runs: run_slot::RunSlot::default(),
            family,
            workspace: workspace::Workspace::new(cwd, plan_file, files, watch_owner, checkpoints),
            shells: shells::SessionShells::new(&me),
            responses_chain: Arc::default(),
            env: args.env,
            screening: Arc::default(),
            discarding: false,
        };
        // A large log takes a while to read: not on the runtime's threads, and a record at a
        // time, never all of it in memory.
        let restarted = args.restarted;
        let mut actor = tokio::task::spawn_blocking(move || {
            let mut actor = actor;
            let client_env = actor.durable.stored_client_env();
            actor.workspace.restore_client_env(client_env);
            let mut replayer = recovery::Replayer::default();
            let read = crate::store::read_log(&actor.durable.log_path(), |record| {
                replayer.apply(&mut actor, record)
            })?;
            actor.durable.adopt(read)?;
            replayer.finish(&mut actor, restarted);
            // What loading wrote (a closed run, a gap) is synced before anyone hears of it.
            actor.durable.flush_now();
            Ok::<_, crate::store::StoreError>(actor)
        })
        .await
        .map_err(|e| failed(e.to_string()))?
        .map_err(|e| failed(e.to_string()))?;
        if let Some(resume) = actor.runs.take_resume() {
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
        tracing::error!(session = %self.shown.id(), "session actor failed: {err}; restarting it from its log");
        self.runs.cancel();
        Ok(ControlFlow::Break(ActorStopReason::Panicked(err)))
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Self::Error> {
        // The daemon stops on purpose (a restart): the next one resumes the run and says why
        // it stopped.
        if let Some(run) = self.runs.cancel() {
            self.durable.record(&Record::Stopped { run });
        }
        self.history.cancel_compaction();
        // No shell outlives its session's actor; the next load says they were lost.
        self.shells.end_all().await;
        self.durable.flush_now();
        self.workspace.forget_watches(&self.env.files);
        // Its `session`-scope MCP servers go with it.
        self.env.mcp.end_session(self.shown.id()).await;
        // Its language servers stay for the other sessions; they no longer list it.
        self.env.lsp.end_session(self.shown.id());
        Ok(())
    }
}

impl SessionActor {
    /// The listing of this session as of now.
    fn info(&self) -> SessionInfo {
        let (last_seq, last_time_ms) = self.durable.last();
        self.shown.listing(shown::Now {
            last_seq,
            last_time_ms,
            queued: self.queues.lens(),
        })
    }

    /// The board's summary of this session as of now.
    fn summary(&self) -> SessionSummary {
        self.shown.summary(self.info())
    }

    /// Tells the daemon's registry of the listing as it stands.
    fn publish_listing(&self) {
        self.shown.publish(self.summary());
    }

    /// Sets the session's state, and publishes the listing if it changed.
    fn set_state(&mut self, state: SessionState) {
        if self.shown.set_state(state) {
            self.publish_listing();
        }
    }

    /// How the configuration in force wants records synced.
    fn durability_mode(&self) -> DurabilityMode {
        self.env.config().durability
    }

    /// The one path every event takes: a child's parent hears what concerns it; the event is
    /// numbered, folded into what the session shows, stored and sent as its [`Durability`]
    /// says; the registry hears of the listing when the event was stored.
    fn emit(&mut self, event: Event) {
        let durability = Durability::of(&event);
        self.family.tell_parent(&event, self.shown.id());
        let event = self.durable.number(event);
        self.shown.fold(&event.event, event.time_ms);
        let wait_for_sync =
            durability == Durability::Synced && self.durability_mode() == DurabilityMode::Fsync;
        // Streamed pieces change nothing in the listing; telling the supervisor of each would
        // put work on the hottest path. Its mailbox is unbounded.
        if self.durable.keep(event, durability, wait_for_sync) {
            self.publish_listing();
        }
    }

    /// Asks for what was stored so far to be synced (a unit of work ended).
    fn request_sync(&mut self) {
        let mode = self.durability_mode();
        self.durable.request_sync(mode);
    }

    /// Writes `meta.json` with the session's settings and counters as of now.
    fn save_meta(&mut self) {
        self.save_meta_with(|_| {});
    }

    /// Writes `meta.json` with `change` and the session's settings and counters as of now:
    /// with the next flush, or at once when records are not synced.
    fn save_meta_with(&mut self, change: impl FnOnce(&mut Meta)) {
        let info = self.info();
        let last_run = self.shown.finished_run();
        let plan = protocol::PlanCount::of(self.shown.plan());
        let mode = self.durability_mode();
        self.durable.save_meta(mode, |meta| {
            change(meta);
            meta.title = info.title;
            meta.mode = info.mode.as_str().to_string();
            meta.turns = info.turns;
            meta.last_activity_ms = info.last_activity_ms;
            meta.last_run = last_run;
            meta.plan = plan;
        });
    }

    /// Appends a message to the history, stored first.
    fn push_message(&mut self, message: HistoryMessage) {
        self.durable.record(&Record::Message {
            message: message.clone(),
        });
        if matches!(message, HistoryMessage::Assistant(_)) {
            self.shown.count_turn();
        }
        // A batch of tool results ends a unit of work: it is synced.
        if matches!(message, HistoryMessage::ToolResults { .. }) {
            self.request_sync();
        }
        self.history.push(message);
    }

    /// A user message joins the history, and the clients are told.
    fn push_user(&mut self, prompt: Prompt, delivery: Delivery) {
        let Prompt { text, images } = prompt;
        // The listing shows the title from the event below on; `meta.json` keeps it.
        if self.shown.take_title(&text) {
            self.save_meta();
        }
        self.push_message(HistoryMessage::User {
            text: text.clone(),
            delivery,
            images: images.clone(),
        });
        self.emit(Event::UserMessage {
            text,
            delivery,
            images,
        });
    }

    /// Delivers every queued steering message; whether there was any.
    fn deliver_steering(&mut self) -> bool {
        let steer = self.queues.take_steer();
        let any = !steer.is_empty();
        for prompt in steer {
            self.push_user(prompt, Delivery::Steer);
        }
        any
    }

    /// Tells the clients what is queued.
    fn emit_queues(&mut self) {
        self.emit(self.queues.event());
    }

    /// The input of the next model call.
    fn turn_input(&self, compact_prompt: bool) -> TurnInput {
        let mut system = crate::prompt::system_prompt(
            self.cwd(),
            self.shown.mode(),
            self.plan_file(),
            compact_prompt,
        );
        if let Some(part) = self.workspace.skills() {
            system.push_str("\n\n");
            system.push_str(part);
        }
        if let Some(part) = self.subagent_prompt() {
            system.push_str("\n\n");
            system.push_str(&part);
        }
        TurnInput {
            system,
            messages: self.history.shared(),
            generation: self.history.generation(),
            compact: self.history.compaction_requested(),
            last_input: self.history.last_input(),
        }
    }

    /// The session directory.
    fn cwd(&self) -> &Path {
        self.workspace.cwd()
    }

    /// Where plan mode keeps its plan.
    fn plan_file(&self) -> &Path {
        self.workspace.plan_file()
    }
}
