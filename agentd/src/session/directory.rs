//! What a session asks of the daemon's list of sessions: to make a child session (a
//! subagent), to find another session's actor, and to delete itself when it holds nothing. The
//! supervisor provides it; sessions know it only by this trait, so that neither module imports
//! the other.

use futures::future::BoxFuture;
use kameo::prelude::*;
use protocol::{ErrorInfo, Mode, SessionId, SessionInfo};

use super::SessionActor;
use crate::subagents::ChildOf;

/// A child session to make.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// Its directory: its parent's (a worktree of it when `worktree`).
    pub cwd: String,
    /// Its mode: never more than its parent's.
    pub mode: Mode,
    /// Its model, if not the configured default.
    pub model: Option<String>,
    /// Its provider profile, if not the configured default.
    pub provider: Option<String>,
    /// Its parent's environment, without secrets.
    pub env: Vec<(String, String)>,
    /// Its turn limit.
    pub max_turns: Option<u32>,
    /// Whether it works in a git worktree of its own.
    pub worktree: bool,
    /// Its parent and task.
    pub child: ChildOf,
}

/// The daemon's sessions, as a session sees them.
pub trait Directory: Send + Sync {
    /// Makes a child session.
    fn create_child(&self, spec: ChildSpec) -> BoxFuture<'static, Result<SessionInfo, ErrorInfo>>;

    /// The actor of session `id`, loaded if it was not.
    fn lookup(
        &self,
        id: SessionId,
    ) -> BoxFuture<'static, Result<ActorRef<SessionActor>, ErrorInfo>>;

    /// Deletes session `id`, which holds nothing worth keeping; does not wait (the session's
    /// own actor asks, and is closed by the deletion).
    fn discard(&self, id: SessionId);
}
