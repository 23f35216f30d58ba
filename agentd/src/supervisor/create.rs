//! Making sessions: new ones (in a worktree of their own, on request) and forks of existing
//! ones.

use std::path::Path;
use std::time::Instant;

use kameo::prelude::*;
use protocol::{CreateSession, ErrorCode, ErrorInfo, SessionId, SessionInfo, SessionState};

use super::{Entry, MAX_CWD_BYTES, MAX_NAME_CHARS, MAX_TITLE_CHARS, Supervisor};
use crate::config::DurabilityMode;
use crate::now_ms;
use crate::session::actor::Flush;
use crate::session::listing::Listing;
use crate::store::{self, Meta, SessionStore};

/// Validates a session directory: it must be an absolute path to an existing directory.
fn session_dir(cwd: &str) -> Result<String, ErrorInfo> {
    let invalid = |message: String| ErrorInfo::new(ErrorCode::InvalidRequest, message);
    if cwd.len() > MAX_CWD_BYTES {
        return Err(invalid(format!(
            "the session directory's path is {} bytes long; at most {MAX_CWD_BYTES}",
            cwd.len()
        )));
    }
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(invalid(format!(
            "session directory `{cwd}` is not an absolute path"
        )));
    }
    let canonical = path
        .canonicalize()
        .map_err(|e| invalid(format!("session directory `{cwd}` cannot be used: {e}")))?;
    if !canonical.is_dir() {
        return Err(invalid(format!(
            "session directory `{cwd}` is not a directory"
        )));
    }
    Ok(canonical.to_string_lossy().into_owned())
}

/// Refuses a string a client set that is longer than `max` characters.
fn bounded(what: &str, value: Option<String>, max: usize) -> Result<Option<String>, ErrorInfo> {
    match value {
        Some(text) if text.chars().count() > max => Err(ErrorInfo::new(
            ErrorCode::InvalidRequest,
            format!(
                "the {what} is {} characters long; at most {max} are accepted",
                text.chars().count()
            ),
        )),
        other => Ok(other),
    }
}

/// Create a session; a subagent when `child` is set.
pub(crate) struct Create(
    pub CreateSession,
    pub(crate) Option<crate::subagents::ChildOf>,
);

impl Message<Create> for Supervisor {
    type Reply = DelegatedReply<Result<SessionInfo, ErrorInfo>>;

    async fn handle(&mut self, msg: Create, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let (request, child) = (msg.0, msg.1);
        let checked = (|| {
            Ok::<_, ErrorInfo>((
                session_dir(&request.cwd)?,
                bounded("title", request.title.clone(), MAX_TITLE_CHARS)?,
                bounded("model name", request.model.clone(), MAX_NAME_CHARS)?,
                bounded("provider name", request.provider.clone(), MAX_NAME_CHARS)?,
            ))
        })();
        let (cwd, title, model, provider) = match checked {
            Ok(checked) => checked,
            Err(err) => return ctx.reply(Err(err)),
        };
        let now = now_ms();
        let config = self.env.config();
        let info = SessionInfo {
            id: self.new_id(),
            cwd,
            title: title.filter(|t| !t.trim().is_empty()),
            model,
            provider,
            mode: request.mode.unwrap_or(config.default_mode.0),
            state: SessionState::Idle,
            turns: 0,
            steer_queued: 0,
            follow_up_queued: 0,
            created_ms: now,
            last_activity_ms: now,
            last_seq: 0,
            branch: None,
            parent: child.as_ref().map(|c| SessionId(c.parent.clone())),
        };
        // Secrets never reach the disk: the environment is filtered before it is stored.
        let env = config.shell_env.filter(request.env);
        let meta = Meta {
            child,
            ..Meta::of(&info, request.max_turns)
        };
        self.sessions.insert(
            info.id.clone(),
            Entry {
                info: Listing::new(
                    protocol::SessionSummary::idle(info.clone(), None),
                    self.summaries.clone(),
                ),
                meta: meta.clone(),
                actor: None,
                last_used: Instant::now(),
            },
        );
        // The files are written (and synced) off the supervisor's thread, after the worktree.
        let sessions_dir = self.paths.sessions_dir();
        let worktrees = request.worktree.then(|| self.paths.worktrees_dir());
        let sync = config.durability == DurabilityMode::Fsync;
        let me = self.me.clone();
        ctx.spawn(async move {
            let id = info.id.clone();
            let created = tokio::task::spawn_blocking(move || {
                let (mut info, mut meta) = (info, meta);
                if let Some(worktrees) = worktrees {
                    let (worktree, cwd) =
                        crate::worktree::create(Path::new(&info.cwd), &worktrees, info.id.as_str())
                            .map_err(|e| ErrorInfo::new(ErrorCode::InvalidRequest, e))?;
                    info.cwd = cwd.to_string_lossy().into_owned();
                    info.branch = Some(worktree.branch.clone());
                    meta.cwd = info.cwd.clone();
                    meta.worktree = Some(worktree);
                }
                if let Err(e) = SessionStore::create(&sessions_dir, &meta, &env, sync) {
                    // Nothing of a session that is not there stays behind.
                    if let Some(worktree) = &meta.worktree {
                        crate::worktree::remove(worktree);
                    }
                    return Err(ErrorInfo::new(
                        ErrorCode::Internal,
                        format!("cannot create the session: {e}"),
                    ));
                }
                Ok((info, meta))
            })
            .await
            .unwrap_or_else(|e| Err(ErrorInfo::new(ErrorCode::Internal, e.to_string())));
            match created {
                Ok((info, meta)) => {
                    tracing::info!(session = %info.id, cwd = %info.cwd, "session created");
                    let _ = me.tell(Adopt(info.clone(), meta)).await;
                    Ok(info)
                }
                Err(err) => {
                    let _ = me.tell(Forget(id)).await;
                    Err(err)
                }
            }
        })
    }
}

/// A session's files are written: its entry takes the settings as written (a worktree moves
/// its directory).
struct Adopt(SessionInfo, Meta);

impl Message<Adopt> for Supervisor {
    type Reply = ();

    async fn handle(&mut self, msg: Adopt, _: &mut Context<Self, Self::Reply>) {
        if let Some(entry) = self.sessions.get_mut(&msg.0.id) {
            // A fork's plan is counted once its log is copied.
            let summary = protocol::SessionSummary {
                info: msg.0,
                plan: msg.1.plan,
                ..entry.info.summary()
            };
            entry.info.publish(summary);
            entry.meta = msg.1;
        }
    }
}

/// Forget a session whose files could not be created.
struct Forget(SessionId);

impl Message<Forget> for Supervisor {
    type Reply = ();

    async fn handle(&mut self, msg: Forget, _: &mut Context<Self, Self::Reply>) {
        if let Some(entry) = self.sessions.remove(&msg.0) {
            entry.info.retire();
        }
    }
}

/// Fork a session: a new one whose history is a copy of its history up to a turn.
pub(crate) struct Fork {
    /// The session forked.
    pub(crate) id: SessionId,
    /// The last turn copied; all of them when `None`.
    pub(crate) turn: Option<u64>,
}

impl Message<Fork> for Supervisor {
    type Reply = DelegatedReply<Result<SessionInfo, ErrorInfo>>;

    async fn handle(&mut self, msg: Fork, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        // The title as the session shows it: one it took from its first message too.
        let (source, actor, title) = match self.resolve(&msg.id) {
            Ok(entry) => (
                entry.meta.clone(),
                entry.actor.clone(),
                entry.info.with(|i| i.title.clone()),
            ),
            Err(err) => return ctx.reply(Err(err)),
        };
        let now = now_ms();
        let id = self.new_id();
        let name = title.unwrap_or_else(|| source.id.clone());
        let mut meta = Meta {
            id: id.0.clone(),
            title: Some(format!("fork of {name}")),
            created_ms: now,
            last_activity_ms: now,
            turns: 0,
            // The worktree stays its session's; the fork only works in the same directory.
            worktree: None,
            // A fork of a subagent is a session of its own.
            child: None,
            last_run: None,
            // As far as the plan got up to the fork's cut: the copy's log says.
            plan: None,
            ..source.clone()
        };
        self.sessions.insert(
            id.clone(),
            Entry {
                info: Listing::new(meta.summary(), self.summaries.clone()),
                meta: meta.clone(),
                actor: None,
                last_used: Instant::now(),
            },
        );
        let sessions_dir = self.paths.sessions_dir();
        let new_dir = SessionStore::dir_of(&sessions_dir, &id);
        let sync = self.env.config().durability == DurabilityMode::Fsync;
        let me = self.me.clone();
        let source_id = source.id.clone();
        ctx.spawn(async move {
            // What the source's actor holds back is written first.
            if let Some(actor) = actor {
                let _ = actor.ask(Flush).await;
            }
            let forked = tokio::task::spawn_blocking(move || {
                let from = SessionStore::dir_of(&sessions_dir, &SessionId(source.id.clone()));
                store::fork(&from, &source.id, &sessions_dir, &mut meta, msg.turn, sync)
                    .map(|_| meta)
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
            match forked {
                Ok(meta) => {
                    let info = meta.info();
                    tracing::info!(session = %info.id, from = %source_id, turns = info.turns, "session forked");
                    let _ = me.tell(Adopt(info.clone(), meta)).await;
                    Ok(info)
                }
                Err(err) => {
                    let _ = me.tell(Forget(id.clone())).await;
                    // A partial copy has no meta.json and is never listed; it goes anyway.
                    let _ = std::fs::remove_dir_all(&new_dir);
                    Err(ErrorInfo::new(ErrorCode::InvalidRequest, format!("cannot fork: {err}")))
                }
            }
        })
    }
}
