//! The supervisor actor: the registry of sessions. It creates, finds and deletes sessions,
//! keeps their listing, owns the tool pool and answers `Status`.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use kameo::prelude::*;
use protocol::paths::Paths;
use protocol::{
    CreateSession, DaemonStatus, ErrorCode, ErrorInfo, PROTOCOL_VERSION, SessionId, SessionInfo,
    SessionState,
};

use crate::config::ConfigState;
use crate::session::actor::Close;
use crate::session::{SessionActor, SessionArgs, SessionEnv};
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
    actor: ActorRef<SessionActor>,
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
        });
        Ok(Supervisor {
            paths: args.paths,
            clients: args.clients,
            started: Instant::now(),
            sessions: HashMap::new(),
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
        // A session actor that stops normally was closed on purpose; one that failed is
        // dropped from the registry so that a lookup reports it instead of hanging.
        if !matches!(reason, ActorStopReason::Normal)
            && let Some(session) = self
                .sessions
                .iter()
                .find(|(_, entry)| entry.actor.id() == id)
                .map(|(key, _)| key.clone())
        {
            tracing::error!(%session, "session actor stopped: {reason}");
            self.sessions.remove(&session);
        }
        Ok(ControlFlow::Continue(()))
    }
}

impl Supervisor {
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
            let id = SessionId(uuid::Uuid::new_v4().simple().to_string()[..8].to_string());
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
        let actor = SessionActor::spawn_link_with_mailbox(
            &self.me,
            SessionArgs {
                info: info.clone(),
                max_turns: request.max_turns,
                supervisor: self.me.clone(),
                env: self.env.clone(),
            },
            kameo::mailbox::unbounded(),
        )
        .await;
        tracing::info!(session = %info.id, cwd = %info.cwd, "session created");
        self.sessions.insert(
            info.id.clone(),
            Entry {
                info: info.clone(),
                actor,
            },
        );
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
        Ok(self.resolve(&msg.0)?.actor.clone())
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
        match entry.actor.ask(Close { force: msg.force }).await {
            Ok(()) => {}
            Err(SendError::HandlerError(err)) => return Err(err),
            // An actor that is already gone has nothing left to close.
            Err(err) => tracing::warn!(session = %id, "closing session actor: {err}"),
        }
        self.sessions.remove(&id);
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
        })
    }
}

/// Stop every session and the tool pool, for daemon shutdown.
pub struct StopAll;

impl Message<StopAll> for Supervisor {
    type Reply = ();

    async fn handle(&mut self, _: StopAll, _: &mut Context<Self, Self::Reply>) {
        for entry in self.sessions.values() {
            let _ = entry.actor.stop_gracefully().await;
        }
        for entry in self.sessions.values() {
            entry.actor.wait_for_shutdown().await;
        }
        self.env.tools.stop().await;
    }
}
