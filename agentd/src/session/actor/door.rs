//! The session's end of its runs' ports: a run's messages about its own session go to the
//! session's actor; those about another session (a child to make, start, await or cancel, a
//! follow-up for the session itself from a task that outlived its run) go straight to that
//! session, found (and loaded again if it was unloaded) through the daemon's directory, so they
//! arrive even when this session's actor is busy or was unloaded meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event, SessionId};

use super::SessionActor;
use super::children::{AdoptChild, AwaitRun};
use super::lifecycle::Cancel;
use super::sending::SendMessage;
use crate::session::directory::Directory;
use crate::session::run::{Door, ToSession};

/// The door of one run's port.
pub(super) struct ActorDoor {
    /// The session's actor.
    actor: ActorRef<SessionActor>,
    /// Where other sessions are found.
    directory: Arc<dyn Directory>,
    /// The children this run made, as they were made: reached without a look-up while they
    /// are loaded.
    children: Arc<Mutex<HashMap<SessionId, WeakActorRef<SessionActor>>>>,
}

impl ActorDoor {
    /// The door to `actor`, which finds other sessions in `directory`.
    pub(super) fn new(actor: ActorRef<SessionActor>, directory: Arc<dyn Directory>) -> ActorDoor {
        ActorDoor {
            actor,
            directory,
            children: Arc::default(),
        }
    }
}

impl Door for ActorDoor {
    fn send(&self, msg: ToSession) {
        match msg {
            ToSession::MakeChild { run, spec, reply } => {
                let (me, directory, children) = (
                    self.actor.clone(),
                    self.directory.clone(),
                    self.children.clone(),
                );
                tokio::spawn(async move {
                    let made = make_child(&me, directory.as_ref(), run, spec).await;
                    if let Ok((child, actor)) = &made {
                        lock(&children).insert(child.clone(), actor.downgrade());
                    }
                    match made {
                        Ok((child, _)) => {
                            let _ = reply.send(Ok(child));
                        }
                        // A session that closed meanwhile drops the reply: the run hears it
                        // is gone.
                        Err(Some(err)) => {
                            let _ = reply.send(Err(err));
                        }
                        Err(None) => {}
                    }
                });
            }
            ToSession::AwaitRun { child, run, reply } => {
                let found = self.find(child);
                tokio::spawn(async move {
                    match found.await {
                        Ok(actor) => {
                            if let Ok(end) = actor.ask(AwaitRun(run)).await {
                                let _ = reply.send(Ok(end));
                            }
                        }
                        Err(err) => {
                            let _ = reply.send(Err(err));
                        }
                    }
                });
            }
            ToSession::CancelChild { child, reply } => {
                let found = self.find(child);
                tokio::spawn(async move {
                    match found.await {
                        Ok(actor) => {
                            if actor.ask(Cancel).await.is_ok() {
                                let _ = reply.send(Ok(()));
                            }
                        }
                        Err(err) => {
                            let _ = reply.send(Err(err));
                        }
                    }
                });
            }
            ToSession::SendMessage {
                to,
                text,
                delivery,
                options,
                reply,
            } => {
                let found = self.find(to);
                tokio::spawn(async move {
                    let sent = match found.await {
                        Ok(actor) => {
                            let message = SendMessage {
                                text,
                                images: Vec::new(),
                                delivery,
                                options,
                            };
                            match actor.ask(message).await {
                                Ok(started) => Ok(started),
                                Err(SendError::HandlerError(err)) => Err(err),
                                Err(err) => {
                                    Err(ErrorInfo::new(ErrorCode::Internal, err.to_string()))
                                }
                            }
                        }
                        Err(err) => Err(err),
                    };
                    let _ = reply.send(sent);
                });
            }
            own => {
                // The actor's mailbox is unbounded: this never waits.
                let _ = self.actor.tell(own).try_send();
            }
        }
    }
}

impl ActorDoor {
    /// Finds session `id`: a child this run made while it is loaded, else through the
    /// directory (loading it if it was unloaded).
    fn find(
        &self,
        id: SessionId,
    ) -> impl Future<Output = Result<ActorRef<SessionActor>, ErrorInfo>> + Send + 'static {
        let made = lock(&self.children)
            .get(&id)
            .and_then(WeakActorRef::upgrade)
            .filter(|actor| actor.is_alive());
        let directory = self.directory.clone();
        async move {
            match made {
                Some(actor) => Ok(actor),
                None => directory.lookup(id).await,
            }
        }
    }
}

/// Makes the child `spec` describes for run `run` of the session `me`, and has the session
/// adopt it (its `SubagentStarted` is stored before the child's run starts, so that a parent
/// resumed after a crash finds its child and never starts a second one). `Err(None)` when the
/// session is gone.
async fn make_child(
    me: &ActorRef<SessionActor>,
    directory: &dyn Directory,
    run: protocol::RunId,
    spec: crate::session::run::ChildSpec,
) -> Result<(SessionId, ActorRef<SessionActor>), Option<ErrorInfo>> {
    let task = spec.child.clone();
    let info = directory.create_child(spec).await.map_err(|e| {
        Some(ErrorInfo::new(
            e.code,
            format!("cannot start the subagent: {}", e.message),
        ))
    })?;
    let actor = directory.lookup(info.id.clone()).await.map_err(|e| {
        Some(ErrorInfo::new(
            e.code,
            format!("cannot load the subagent {}: {}", info.id, e.message),
        ))
    })?;
    let adopt = AdoptChild {
        child: info.id.clone(),
        actor: actor.downgrade(),
        description: task.description.clone(),
        run,
        started: Event::SubagentStarted {
            call: task.call,
            child: info.id.clone(),
            description: task.description,
            agent: task.agent,
            background: task.background,
        },
    };
    me.ask(adopt).await.map_err(|_| None)?;
    Ok((info.id, actor))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
