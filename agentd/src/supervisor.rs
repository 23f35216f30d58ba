//! The supervisor actor: the registry of sessions. It creates, finds and deletes sessions,
//! keeps their listing, owns the tool pool and answers `Status`.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kameo::prelude::*;
use kameo::supervision::RestartPolicy;
use protocol::paths::Paths;
use protocol::{
    CreateSession, DaemonStatus, ErrorCode, ErrorInfo, PROTOCOL_VERSION, SessionId, SessionInfo,
    SessionState,
};

use crate::config::ConfigState;
use crate::session::actor::Close;
use crate::session::{SessionActor, SessionArgs, SessionEnv};
use crate::store::{self, Meta, SessionStore};
use crate::tools::pool::ToolPool;
use crate::{now_ms, resident_memory};

/// What the supervisor starts from.
pub struct SupervisorArgs {
    /// The daemon's paths.
    pub paths: Paths,
    /// Open client connections, counted by the listener.
    pub clients: Arc<AtomicU64>,
    /// The configuration in force.
    pub config: tokio::sync::watch::Receiver<ConfigState>,
    /// The HTTP client for model providers.
    pub http: reqwest::Client,
}

struct Entry {
    info: SessionInfo,
    meta: Meta,
    /// The session's actor, once the session is in use; sessions load on first use.
    actor: Option<ActorRef<SessionActor>>,
}

/// The registry of sessions (SPEC §2).
pub struct Supervisor {
    paths: Paths,
    clients: Arc<AtomicU64>,
    started: Instant,
    sessions: HashMap<SessionId, Entry>,
    env: Arc<SessionEnv>,
    me: ActorRef<Supervisor>,
}

impl Actor for Supervisor {
    type Args = SupervisorArgs;
    type Error = ErrorInfo;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let size = match args.config.borrow().config.tool_pool_size {
            0 => ToolPool::default_size(),
            n => n,
        };
        let tools = ToolPool::spawn(&me, size).await;
        let env = Arc::new(SessionEnv {
            paths: args.paths.clone(),
            tools,
            http: args.http,
            config: args.config,
            files: crate::files::FileWatcher::start(),
            processes: crate::tools::processes::ProcessRecords::in_dir(commands_dir(&args.paths)),
        });
        // Only the settings are read now; a session's log is read when it is first used.
        let sessions = store::list(&args.paths.sessions_dir())
            .into_iter()
            .map(|meta| {
                let info = meta.info();
                (
                    info.id.clone(),
                    Entry {
                        info,
                        meta,
                        actor: None,
                    },
                )
            })
            .collect::<HashMap<_, _>>();
        tracing::info!(sessions = sessions.len(), "sessions listed");
        Ok(Supervisor {
            paths: args.paths,
            clients: args.clients,
            started: Instant::now(),
            sessions,
            env,
            me,
        })
    }

    async fn on_link_died(
        &mut self,
        _: WeakActorRef<Self>,
        id: ActorId,
        reason: ActorStopReason,
    ) -> Result<ControlFlow<ActorStopReason>, Self::Error> {
        // A session actor that stopped for good (closed, or failing again and again) is
        // forgotten; the session itself stays on disk and loads again on next use.
        if let Some(entry) = self
            .sessions
            .values_mut()
            .find(|entry| entry.actor.as_ref().is_some_and(|a| a.id() == id))
        {
            if !matches!(reason, ActorStopReason::Normal) {
                tracing::error!(session = %entry.info.id, "session actor stopped: {reason}");
            }
            entry.actor = None;
        }
        Ok(ControlFlow::Continue(()))
    }
}

impl Supervisor {
    /// The actor of session `id`, loading the session from its store if it is not in use.
    async fn actor_of(&mut self, id: &SessionId) -> Result<ActorRef<SessionActor>, ErrorInfo> {
        if let Some(actor) = self.sessions.get(id).and_then(|e| e.actor.clone())
            && actor.is_alive()
        {
            return Ok(actor);
        }
        let entry = self.sessions.get(id).ok_or_else(|| unknown_session(id))?;
        let args = SessionArgs {
            meta: entry.meta.clone(),
            supervisor: self.me.clone(),
            env: self.env.clone(),
            restarted: false,
        };
        // The first start loads the session; a restart after a failure reloads it and says so.
        let starts = AtomicU64::new(0);
        let actor = SessionActor::supervise_with(&self.me, move || SessionArgs {
            restarted: starts.fetch_add(1, Ordering::Relaxed) > 0,
            ..args.clone()
        })
        .restart_policy(RestartPolicy::Transient)
        .restart_limit(5, Duration::from_secs(60))
        .spawn_with_mailbox(kameo::mailbox::unbounded())
        .await;
        if let Err(err) = actor.wait_for_startup_result().await {
            return Err(ErrorInfo::new(
                ErrorCode::Internal,
                format!("session {id} cannot be loaded: {err}"),
            ));
        }
        if let Some(entry) = self.sessions.get_mut(id) {
            entry.actor = Some(actor.clone());
        }
        Ok(actor)
    }

    /// Finds a session by id or by an unambiguous prefix of one.
    fn resolve(&self, id: &SessionId) -> Result<&Entry, ErrorInfo> {
        if let Some(entry) = self.sessions.get(id) {
            return Ok(entry);
        }
        let mut matches = self
            .sessions
            .iter()
            .filter(|(key, _)| !id.0.is_empty() && key.0.starts_with(&id.0));
        match (matches.next(), matches.next()) {
            (Some((_, entry)), None) => Ok(entry),
            (Some(_), Some(_)) => Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                format!("session id `{id}` is ambiguous; give more characters"),
            )),
            (None, _) => Err(unknown_session(id)),
        }
    }

    fn new_id(&self) -> SessionId {
        loop {
            let id = SessionId(
                uuid::Uuid::new_v4()
                    .simple()
                    .to_string()
                    .chars()
                    .take(8)
                    .collect(),
            );
            if !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

/// The error for a session id that names no session.
pub fn unknown_session(id: &SessionId) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::UnknownSession,
        format!("no session `{id}`; `agentctl sessions` lists them"),
    )
}

/// Validates a session directory: it must be an absolute path to an existing directory.
fn session_dir(cwd: &str) -> Result<String, ErrorInfo> {
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(ErrorInfo::new(
            ErrorCode::InvalidRequest,
            format!("session directory `{cwd}` is not an absolute path"),
        ));
    }
    let canonical = path.canonicalize().map_err(|e| {
        ErrorInfo::new(
            ErrorCode::InvalidRequest,
            format!("session directory `{cwd}` cannot be used: {e}"),
        )
    })?;
    if !canonical.is_dir() {
        return Err(ErrorInfo::new(
            ErrorCode::InvalidRequest,
            format!("session directory `{cwd}` is not a directory"),
        ));
    }
    Ok(canonical.to_string_lossy().into_owned())
}

/// Create a session.
pub struct Create(pub CreateSession);

impl Message<Create> for Supervisor {
    type Reply = Result<SessionInfo, ErrorInfo>;

    async fn handle(&mut self, msg: Create, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let request = msg.0;
        let cwd = session_dir(&request.cwd)?;
        let now = now_ms();
        let info = SessionInfo {
            id: self.new_id(),
            cwd,
            title: request.title.filter(|t| !t.trim().is_empty()),
            model: request.model,
            provider: request.provider,
            mode: request.mode.unwrap_or(self.env.config().default_mode.0),
            state: SessionState::Idle,
            turns: 0,
            steer_queued: 0,
            follow_up_queued: 0,
            created_ms: now,
            last_activity_ms: now,
            last_seq: 0,
        };
        // Unbounded, so that the run task and the supervisor never wait on a busy session.
        // Secrets never reach the disk: the environment is filtered before it is stored.
        let env = self.env.config().shell_env.filter(request.env);
        let meta = Meta::of(&info, request.max_turns);
        SessionStore::create(&self.paths.sessions_dir(), &meta, &env).map_err(|e| {
            ErrorInfo::new(
                ErrorCode::Internal,
                format!("cannot create the session: {e}"),
            )
        })?;
        tracing::info!(session = %info.id, cwd = %info.cwd, "session created");
        self.sessions.insert(
            info.id.clone(),
            Entry {
                info: info.clone(),
                meta,
                actor: None,
            },
        );
        self.actor_of(&info.id).await?;
        Ok(info)
    }
}

/// Every session, newest first.
pub struct List;

impl Message<List> for Supervisor {
    type Reply = Result<Vec<SessionInfo>, ErrorInfo>;

    async fn handle(&mut self, _: List, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let mut list: Vec<SessionInfo> = self.sessions.values().map(|e| e.info.clone()).collect();
        list.sort_by(|a, b| {
            b.created_ms
                .cmp(&a.created_ms)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok(list)
    }
}

/// Find the actor of a session (by id or unambiguous prefix).
pub struct Lookup(pub SessionId);

impl Message<Lookup> for Supervisor {
    type Reply = Result<ActorRef<SessionActor>, ErrorInfo>;

    async fn handle(&mut self, msg: Lookup, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let id = self.resolve(&msg.0)?.info.id.clone();
        self.actor_of(&id).await
    }
}

/// Delete a session.
pub struct Delete {
    /// The session.
    pub id: SessionId,
    /// Cancel a running run first.
    pub force: bool,
}

impl Message<Delete> for Supervisor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Delete, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let entry = self.resolve(&msg.id)?;
        let id = entry.info.id.clone();
        if let Some(actor) = &entry.actor {
            match actor.ask(Close { force: msg.force }).await {
                Ok(()) => {}
                Err(SendError::HandlerError(err)) => return Err(err),
                // An actor that is already gone has nothing left to close.
                Err(err) => tracing::warn!(session = %id, "closing session actor: {err}"),
            }
        }
        self.sessions.remove(&id);
        if let Err(err) = store::delete(&self.paths.sessions_dir(), &id) {
            tracing::error!(session = %id, "cannot delete the session's files: {err}");
        }
        tracing::info!(session = %id, "session deleted");
        Ok(())
    }
}

/// A session's listing changed (told by the session actor).
pub struct SessionChanged(pub SessionInfo);

impl Message<SessionChanged> for Supervisor {
    type Reply = ();

    async fn handle(&mut self, msg: SessionChanged, _: &mut Context<Self, Self::Reply>) {
        if let Some(entry) = self.sessions.get_mut(&msg.0.id) {
            entry.info = msg.0;
        }
    }
}

/// The daemon's status.
pub struct Status {
    /// Where the daemon listens.
    pub socket: String,
}

impl Message<Status> for Supervisor {
    type Reply = Result<DaemonStatus, ErrorInfo>;

    async fn handle(&mut self, msg: Status, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        Ok(DaemonStatus {
            daemon_version: env!("CARGO_PKG_VERSION").to_string(),
            protocol_version: PROTOCOL_VERSION,
            pid: std::process::id(),
            uptime_ms: self.started.elapsed().as_millis() as u64,
            socket: msg.socket,
            sessions: self.sessions.len() as u64,
            running: self
                .sessions
                .values()
                .filter(|e| e.info.state != SessionState::Idle)
                .count() as u64,
            clients: self.clients.load(Ordering::Relaxed),
            rss_bytes: resident_memory(),
            data_dir: self.paths.data_dir.to_string_lossy().into_owned(),
            config_error: self
                .env
                .config
                .borrow()
                .error
                .as_ref()
                .map(|e| e.to_string()),
            config_generation: self.env.config.borrow().generation,
        })
    }
}

/// Hand out what must be stopped at daemon shutdown: the loaded sessions and the tool pool.
/// The caller stops them outside this actor, whose mailbox the stopping children report to.
pub struct StopAll;

impl Message<StopAll> for Supervisor {
    type Reply = Result<(Vec<ActorRef<SessionActor>>, ToolPool), ErrorInfo>;

    async fn handle(&mut self, _: StopAll, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let actors = self
            .sessions
            .values()
            .filter_map(|e| e.actor.clone())
            .collect();
        Ok((actors, self.env.tools.clone()))
    }
}

/// Where the process groups of running commands are recorded.
pub fn commands_dir(paths: &protocol::paths::Paths) -> std::path::PathBuf {
    paths.data_dir.join("commands")
}
