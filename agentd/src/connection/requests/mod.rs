//! Requests of a connection, one file per group: the registry of sessions ([`registry`]),
//! following a session's events ([`follow`]), its runs ([`runs`]), what runs changed
//! ([`changes`]), its model ([`models`]) and its background shells ([`shells`]).

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Reply, Request, SessionId};

use super::Connection;
use crate::session::SessionActor;
use crate::supervisor::Lookup;

mod changes;
mod extensions;
mod follow;
mod images;
mod models;
mod registry;
mod runs;
mod shells;
mod summaries;

impl Connection {
    /// Answers one request.
    pub(super) async fn handle(&mut self, request: Request) -> Result<Reply, ErrorInfo> {
        match request {
            Request::CreateSession(create) => self.create(create).await,
            Request::ListSessions { after } => self.list(after).await,
            Request::Status => self.status().await,
            Request::McpList => Ok(Reply::McpServers(self.shared.mcp.list())),
            Request::LspList => Ok(Reply::LspServers(self.shared.lsp.list())),
            Request::Extensions { cwd } => Ok(Reply::Extensions(self.extensions(&cwd))),
            Request::SetSessionMcpServers { session, servers } => {
                self.set_mcp_servers(session, servers).await
            }
            Request::Shutdown { now } => self.shutdown(now),
            Request::DeleteSession { session, force } => self.delete(session, force).await,
            Request::Fork { session, turn } => self.fork(session, turn).await,
            Request::GetHistory { session, from_seq } => self.history(session, from_seq).await,
            Request::Subscribe { session, from_seq } => self.subscribe(session, from_seq).await,
            Request::Unsubscribe { session } => self.unsubscribe(session).await,
            Request::SubscribeSummaries => self.subscribe_summaries().await,
            Request::UnsubscribeSummaries => self.unsubscribe_summaries(),
            Request::SendSubscribed {
                session,
                text,
                images,
                delivery,
                options,
            } => {
                let images = self.store_images(&session, images, &options).await?;
                self.send_subscribed(session, text, images, delivery, options)
                    .await
            }
            Request::SetMode { session, mode } => self.set_mode(session, mode).await,
            Request::ListModels { session, env } => self.list_models(session, env).await,
            Request::SetModel { session, model } => self.set_model(session, model).await,
            Request::Usage { session } => self.usage(session).await,
            Request::Shells { session } => self.shells(session).await,
            Request::KillShell { session, shell } => self.kill_shell(session, shell).await,
            Request::SetResume { session, resume } => self.set_resume(session, resume).await,
            Request::Send {
                session,
                text,
                images,
                delivery,
                options,
            } => {
                let images = self.store_images(&session, images, &options).await?;
                self.send_message(session, text, images, delivery, options)
                    .await
            }
            Request::GetImage { session, hash } => self.get_image(session, hash).await,
            Request::Cancel { session } => self.cancel(session).await,
            Request::Answer {
                session,
                request,
                decision,
            } => self.answer(session, request, decision).await,
            Request::Compact { session } => self.compact(session).await,
            Request::Diff { session, run } => self.diff(session, run).await,
            Request::Rewind {
                session,
                run,
                force,
                dry_run,
            } => self.rewind(session, run, force, dry_run).await,
        }
    }

    /// The actor of session `id` (loaded if it was not).
    pub(super) async fn session(
        &self,
        id: &SessionId,
    ) -> Result<ActorRef<SessionActor>, ErrorInfo> {
        ask(&self.shared.supervisor, Lookup(id.clone())).await
    }

    /// Sends `msg` to the session's actor and waits for the answer. A session unloaded
    /// between the lookup and the message is loaded again, and the message sent again.
    pub(super) async fn ask_session<M, T>(&self, id: &SessionId, msg: M) -> Result<T, ErrorInfo>
    where
        SessionActor: Message<M>,
        M: Send + 'static,
        <SessionActor as Message<M>>::Reply: kameo::reply::Reply<Ok = T, Error = ErrorInfo>,
        T: Send + 'static,
    {
        let actor = self.session(id).await?;
        let msg = match actor.ask(msg).await {
            Err(SendError::ActorNotRunning(msg)) => msg,
            other => return answer::<SessionActor, M, T>(other),
        };
        let actor = self.session(id).await?;
        answer::<SessionActor, M, T>(actor.ask(msg).await)
    }
}

/// Asks an actor and turns a failed delivery into an `Internal` error.
pub(crate) async fn ask<A, M, T>(actor: &ActorRef<A>, msg: M) -> Result<T, ErrorInfo>
where
    A: Actor + Message<M>,
    <A as Message<M>>::Reply: kameo::reply::Reply<Ok = T, Error = ErrorInfo>,
    M: Send + 'static,
    T: Send + 'static,
{
    answer::<A, M, T>(actor.ask(msg).await)
}

/// The value of an answer, or the error it carried or that kept it from coming.
fn answer<A, M, T>(result: Result<T, SendError<M, ErrorInfo>>) -> Result<T, ErrorInfo> {
    match result {
        Ok(value) => Ok(value),
        Err(SendError::HandlerError(err)) => Err(err),
        Err(err) => Err(ErrorInfo::new(
            ErrorCode::Internal,
            format!("the {} is not available: {err}", short_name::<A>()),
        )),
    }
}

fn short_name<A>() -> &'static str {
    let full = std::any::type_name::<A>();
    full.rsplit("::").next().unwrap_or(full)
}
