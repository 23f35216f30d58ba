//! The loop's way to its session: the messages a run sends (begin a turn, push a reply or
//! results, ask for permission, apply a compaction, take what is queued) and its events, and
//! nothing else of the actor.

use kameo::prelude::*;
use protocol::{Event, RunId};

use super::{
    AdoptChild, ApplyCompaction, Authorize, BeginTurn, Emit, Expire, NextQueued, Push, SessionActor,
};

/// A message the loop may send its session.
pub trait LoopMessage: Send + 'static {}

impl LoopMessage for BeginTurn {}
impl LoopMessage for Push {}
impl LoopMessage for NextQueued {}
impl LoopMessage for Authorize {}
impl LoopMessage for Expire {}
impl LoopMessage for ApplyCompaction {}
impl LoopMessage for AdoptChild {}
impl LoopMessage for super::HookContext {}
impl LoopMessage for super::Answer {}

/// The session of a run, as the run sees it.
#[derive(Clone)]
pub struct SessionPort(ActorRef<SessionActor>);

impl SessionPort {
    /// The port of the session `actor`.
    pub fn new(actor: ActorRef<SessionActor>) -> SessionPort {
        SessionPort(actor)
    }

    /// Sends a loop message and waits for the session's answer.
    pub async fn ask<M, T, E>(&self, msg: M) -> Result<T, SendError<M, E>>
    where
        M: LoopMessage,
        SessionActor: Message<M>,
        <SessionActor as Message<M>>::Reply: kameo::reply::Reply<Ok = T, Error = E>,
        T: Send + 'static,
        E: Send + 'static,
    {
        self.0.ask(msg).await
    }

    /// Passes an event of run `run` to the session without waiting (deltas, tool output,
    /// retries); dropped if the session is gone.
    pub fn emit(&self, run: RunId, event: Event) {
        let _ = self.0.tell(Emit { run, event }).try_send();
    }
}
