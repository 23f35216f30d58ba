//! The supervisor actor: the registry of sessions. It creates, finds and deletes sessions,
//! keeps their listing, owns the tool pool and answers `Status`. It never waits on a disk:
//! sessions load in their own actors ([`loading`]), and files are created off its thread.

mod create;
mod delete;
mod directory;
mod loading;
mod summaries;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use kameo::prelude::*;
use protocol::local::paths::Paths;
use protocol::{
    DaemonStatus, ErrorCode, ErrorInfo, ListCursor, PROTOCOL_VERSION, SessionId, SessionInfo,
    SessionState,
};

use crate::config::{ConfigState, Standing};
use crate::resident_memory;
use crate::session::listing::Listing;
use crate::session::{SessionActor, SessionEnv};
use crate::store::{self, Meta};
use crate::summaries::SummaryHub;
use crate::tools::pool::ToolPool;
pub(crate) use create::{Create, Fork};
pub(crate) use delete::Delete;
pub(crate) use loading::{IfLoaded, Lookup};
pub(crate) use summaries::WatchSummaries;

/// The most characters of a title.
pub(crate) const MAX_TITLE_CHARS: usize = 500;
/// The most characters of a model or provider name.
pub(crate) const MAX_NAME_CHARS: usize = 200;
/// The most bytes of a session directory's path.
pub(crate) const MAX_CWD_BYTES: usize = 4096;
/// Bytes (roughly) of sessions in one page of the listing.
const PAGE_BYTES: usize = 4 << 20;

/// What the supervisor starts from.
pub(crate) struct SupervisorArgs {
    /// The daemon's paths.
    pub(crate) paths: Paths,
    /// The configuration in force.
    pub(crate) config: tokio::sync::watch::Receiver<ConfigState>,
    /// The HTTP client for model providers.
    pub(crate) http: reqwest::Client,
    /// The MCP servers.
    pub(crate) mcp: crate::mcp::McpHub,
    /// The language servers.
    pub(crate) lsp: crate::lsp::LspHub,
    /// The daemon's planned stop.
    pub(crate) stop: crate::stop::PlannedStop,
}

struct Entry {
    /// The session's latest listing, as the session publishes it.
    info: Listing,
    meta: Meta,
    /// The session's actor while the session is loaded; sessions load on use and unload when
    /// idle.
    actor: Option<ActorRef<SessionActor>>,
    /// When a client last asked for the session.
    last_used: Instant,
}

/// The registry of sessions (docs/architecture.md#processes-and-actors).
pub(crate) struct Supervisor {
    paths: Paths,
    started: Instant,
    sessions: HashMap<SessionId, Entry>,
    /// Session directories whose files could not be read at start, and why.
    unreadable: Vec<String>,
    env: Arc<SessionEnv>,
    me: ActorRef<Supervisor>,
    /// Where sessions publish their summaries for the board.
    summaries: SummaryHub,
    /// The daemon is stopping: sessions it stopped must not load again (a reload would resume
    /// their runs in a daemon about to exit).
    stopping: bool,
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
        let (running, interrupted) = store::RunningJournal::open(&args.paths.data_dir);
        let env = Arc::new(SessionEnv {
            paths: args.paths.clone(),
            tools,
            http: args.http,
            config: args.config,
            files: crate::stale_files::FileWatcher::start(),
            processes: crate::tools::processes::ProcessRecords::in_dir(args.paths.commands_dir()),
            mcp: args.mcp,
            lsp: args.lsp,
            web: crate::web::Web::default(),
            running,
            directory: Arc::new(directory::SupervisorDirectory(me.downgrade())),
            stop: args.stop,
        });
        // Only the settings are read now; a session's log is read when it is first used.
        let (metas, unreadable) = store::list(&args.paths.sessions_dir());
        let summaries = SummaryHub::default();
        let now = Instant::now();
        let sessions = metas
            .into_iter()
            .map(|meta| {
                let info = meta.info();
                let entry = Entry {
                    info: Listing::new(meta.summary(), summaries.clone()),
                    meta,
                    actor: None,
                    last_used: now,
                };
                (info.id, entry)
            })
            .collect::<HashMap<_, _>>();
        tracing::info!(sessions = sessions.len(), "sessions listed");
        loading::start_sweeping(&me, env.config.clone());
        // Runs the last daemon did not finish go on (or are closed) without anyone asking.
        let (interrupted, ghosts): (Vec<SessionId>, Vec<SessionId>) = interrupted
            .into_iter()
            .map(|(id, _)| SessionId(id))
            .partition(|id| sessions.contains_key(id));
        for ghost in ghosts {
            env.running.forget(&ghost.0);
        }
        for id in &interrupted {
            // Running until its session says otherwise.
            if let Some(entry) = sessions.get(id) {
                entry.info.update(|info| info.state = SessionState::Running);
            }
        }
        if !interrupted.is_empty() {
            let _ = me.tell(loading::LoadInterrupted(interrupted)).try_send();
        }
        Ok(Supervisor {
            paths: args.paths,
            started: Instant::now(),
            sessions,
            unreadable,
            env,
            me,
            summaries,
            stopping: false,
        })
    }

    async fn on_link_died(
        &mut self,
        _: WeakActorRef<Self>,
        id: ActorId,
        reason: ActorStopReason,
    ) -> Result<ControlFlow<ActorStopReason>, Self::Error> {
        // A session actor that stopped for good (unloaded, closed, or failing again and again)
        // is forgotten; the session itself stays on disk and loads again on next use.
        if let Some(entry) = self
            .sessions
            .values_mut()
            .find(|entry| entry.actor.as_ref().is_some_and(|a| a.id() == id))
        {
            if !matches!(reason, ActorStopReason::Normal) {
                tracing::error!(session = %entry.info.with(|i| i.id.clone()), "session actor stopped: {reason}");
            }
            entry.actor = None;
            entry.info.update(|i| i.state = SessionState::Idle);
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
        let matches: Vec<&Entry> = self
            .sessions
            .iter()
            .filter(|(key, _)| !id.0.is_empty() && key.0.starts_with(&id.0))
            .map(|(_, entry)| entry)
            .collect();
        match matches.as_slice() {
            [entry] => Ok(entry),
            [] => Err(unknown_session(id)),
            many => Err(ambiguous(id, many)),
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

/// Sessions an ambiguous prefix lists, at most.
const AMBIGUOUS_LISTED: usize = 10;

/// The error for a prefix that starts several sessions' ids: the newest of them, each with its
/// title and directory, so the user can tell which one was meant.
fn ambiguous(id: &SessionId, matches: &[&Entry]) -> ErrorInfo {
    let mut infos: Vec<SessionInfo> = matches.iter().map(|e| e.info.get()).collect();
    infos.sort_by(|a, b| {
        b.created_ms
            .cmp(&a.created_ms)
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut message = format!(
        "session id `{id}` is ambiguous: {} sessions start with it; give more characters of one of these:",
        infos.len()
    );
    for info in infos.iter().take(AMBIGUOUS_LISTED) {
        let title = info.title.as_deref().map(protocol::title_of);
        message.push_str(&format!(
            "\n  {}  {}  {}",
            info.id,
            title.as_deref().unwrap_or("(untitled)"),
            info.cwd
        ));
    }
    if infos.len() > AMBIGUOUS_LISTED {
        message.push_str(&format!(
            "\n  … and {} more (`agentctl sessions` lists them all)",
            infos.len() - AMBIGUOUS_LISTED
        ));
    }
    ErrorInfo::new(ErrorCode::InvalidRequest, message)
}

/// The error for a session id that names no session.
pub(crate) fn unknown_session(id: &SessionId) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::UnknownSession,
        format!("no session `{id}`; `agentctl sessions` lists them"),
    )
}

/// A page of the listing, newest first.
pub(crate) struct List {
    /// Where the previous page ended.
    pub(crate) after: Option<ListCursor>,
}

/// A page of sessions.
pub(crate) struct ListPage {
    /// The sessions.
    pub(crate) sessions: Vec<SessionInfo>,
    /// Where the next page starts, if there is one.
    pub(crate) next: Option<ListCursor>,
    /// Sessions that could not be read (first page only).
    pub(crate) unreadable: Vec<String>,
}

impl Message<List> for Supervisor {
    type Reply = Result<ListPage, ErrorInfo>;

    async fn handle(&mut self, msg: List, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let mut list: Vec<SessionInfo> = self.sessions.values().map(|e| e.info.get()).collect();
        let newest_first = |a: &SessionInfo, b: &SessionInfo| {
            b.created_ms
                .cmp(&a.created_ms)
                .then_with(|| b.id.cmp(&a.id))
        };
        list.sort_by(newest_first);
        let start = match &msg.after {
            // Everything strictly after the cursor in listing order.
            Some(cursor) => list.partition_point(|info| {
                (info.created_ms, &info.id) >= (cursor.created_ms, &cursor.id)
            }),
            None => 0,
        };
        let mut page = Vec::new();
        let mut bytes = 0;
        for info in list.iter().skip(start) {
            if !page.is_empty() && bytes >= PAGE_BYTES {
                break;
            }
            bytes += info_size(info);
            page.push((*info).clone());
        }
        let next = (start + page.len() < list.len())
            .then(|| page.last())
            .flatten()
            .map(|last| ListCursor {
                created_ms: last.created_ms,
                id: last.id.clone(),
            });
        Ok(ListPage {
            sessions: page,
            next,
            unreadable: if msg.after.is_none() {
                self.unreadable.clone()
            } else {
                Vec::new()
            },
        })
    }
}

/// Roughly the bytes a listing entry takes on the wire.
fn info_size(info: &SessionInfo) -> usize {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    info.cwd.len()
        + info.id.0.len()
        + text(&info.title)
        + text(&info.model)
        + text(&info.provider)
        + 96
}

/// The daemon's status.
pub(crate) struct Status {
    /// Where the daemon listens.
    pub(crate) socket: String,
}

impl Message<Status> for Supervisor {
    type Reply = Result<DaemonStatus, ErrorInfo>;

    async fn handle(&mut self, msg: Status, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let (config_error, config_fail_closed, config_generation) = {
            let config = self.env.config.borrow();
            (
                config.error.as_ref().map(|e| e.to_string()),
                matches!(config.standing(), Standing::FailClosed(_)),
                config.generation,
            )
        };
        Ok(DaemonStatus {
            loaded: self
                .sessions
                .values()
                .filter(|e| e.actor.as_ref().is_some_and(|a| a.is_alive()))
                .count() as u64,
            daemon_version: env!("CARGO_PKG_VERSION").to_string(),
            protocol_version: PROTOCOL_VERSION,
            pid: std::process::id(),
            uptime_ms: self.started.elapsed().as_millis() as u64,
            socket: msg.socket,
            sessions: self.sessions.len() as u64,
            running: self
                .sessions
                .values()
                .filter(|e| e.info.with(|i| i.state != SessionState::Idle))
                .count() as u64,
            // The connection that asks fills this in: it knows the connections.
            clients: 0,
            rss_bytes: resident_memory(),
            data_dir: self.paths.data_dir.to_string_lossy().into_owned(),
            config_error,
            config_fail_closed,
            config_generation,
            mcp_servers: self.env.mcp.list(),
            lsp_servers: self.env.lsp.running(),
            sandbox: match crate::sandbox::support() {
                crate::sandbox::Support::Available(how) => format!(
                    "{how}; {}",
                    crate::sandbox::cgroup::describe(&self.env.config().sandbox.limits())
                ),
                crate::sandbox::Support::Unavailable(why) => format!("unavailable: {why}"),
            },
        })
    }
}

/// Hand out what must be stopped at daemon shutdown: the loaded sessions and the tool pool.
/// The caller stops them outside this actor, whose mailbox the stopping children report to.
pub(crate) struct StopAll;

impl Message<StopAll> for Supervisor {
    type Reply = Result<(Vec<ActorRef<SessionActor>>, ToolPool), ErrorInfo>;

    async fn handle(&mut self, _: StopAll, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.stopping = true;
        let actors = self
            .sessions
            .values()
            .filter_map(|e| e.actor.clone())
            .collect();
        Ok((actors, self.env.tools.clone()))
    }
}
