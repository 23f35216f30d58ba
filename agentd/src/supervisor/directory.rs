//! The supervisor as the [`Directory`] of sessions: children are made like any session (with
//! their parent in `meta.json`), and a session's actor is found as a client's request finds it.

use futures::FutureExt;
use futures::future::BoxFuture;
use kameo::prelude::*;
use protocol::{CreateSession, ErrorCode, ErrorInfo, SessionId, SessionInfo};

use super::Supervisor;
use super::create::Create;
use super::delete::Delete;
use super::loading::Lookup;
use crate::session::SessionActor;
use crate::session::directory::{ChildSpec, Directory};

/// The supervisor, held weakly: sessions must not keep it alive.
pub(crate) struct SupervisorDirectory(pub WeakActorRef<Supervisor>);

impl SupervisorDirectory {
    fn supervisor(&self) -> Result<ActorRef<Supervisor>, ErrorInfo> {
        self.0.upgrade().ok_or_else(|| {
            ErrorInfo::new(
                ErrorCode::Internal,
                "the daemon is stopping; try again after it restarts",
            )
        })
    }
}

/// The error of an ask the supervisor could not answer.
fn failed<M>(err: SendError<M, ErrorInfo>) -> ErrorInfo {
    match err {
        SendError::HandlerError(err) => err,
        other => ErrorInfo::new(ErrorCode::Internal, other.to_string()),
    }
}

impl Directory for SupervisorDirectory {
    fn create_child(&self, spec: ChildSpec) -> BoxFuture<'static, Result<SessionInfo, ErrorInfo>> {
        let supervisor = self.supervisor();
        async move {
            let request = CreateSession {
                cwd: spec.cwd,
                model: spec.model,
                provider: spec.provider,
                title: Some(spec.child.description.clone()),
                mode: Some(spec.mode),
                max_turns: spec.max_turns,
                env: spec.env,
                worktree: spec.worktree,
            };
            supervisor?
                .ask(Create(request, Some(spec.child)))
                .await
                .map_err(failed)
        }
        .boxed()
    }

    fn lookup(
        &self,
        id: SessionId,
    ) -> BoxFuture<'static, Result<ActorRef<SessionActor>, ErrorInfo>> {
        let supervisor = self.supervisor();
        async move { supervisor?.ask(Lookup(id)).await.map_err(failed) }.boxed()
    }

    fn discard(&self, id: SessionId) {
        let Ok(supervisor) = self.supervisor() else {
            return;
        };
        tokio::spawn(async move {
            let delete = Delete {
                id: id.clone(),
                force: false,
            };
            if let Err(err) = supervisor.ask(delete).await {
                tracing::warn!(session = %id, "cannot delete an empty session: {err}");
            }
        });
    }
}
