//! What a session asks of the daemon's list of sessions: to make a child session (a
//! subagent), to find another session's actor, and to delete itself when it holds nothing. The
//! supervisor provides it; sessions know it only by this trait, so that neither module imports
//! the other.

use futures::future::BoxFuture;
use kameo::prelude::*;
use protocol::{ErrorInfo, SessionId, SessionInfo};

use super::SessionActor;
pub(crate) use super::run::ChildSpec;

/// The daemon's sessions, as a session sees them.
pub(crate) trait Directory: Send + Sync {
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
