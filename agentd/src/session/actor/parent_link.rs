//! The way from a subagent to its parent: what a child tells (its permission requests and
//! their answers, what it does now, the end of its run), sent in order by a task of its own so
//! that the child never waits for its parent, and a parent unloaded meanwhile is loaded again.

use std::sync::Arc;

use kameo::prelude::*;
use protocol::{Decision, PermissionRequestId, SessionId};
use tokio::sync::mpsc;

use super::SessionActor;
use crate::session::directory::Directory;
use crate::subagents::task::ChildEnd;

/// What a child tells its parent.
pub(crate) enum ChildNote {
    /// A permission request of `session` (the child or one of its own children).
    Asked {
        session: SessionId,
        actor: WeakActorRef<SessionActor>,
        request: PermissionRequestId,
        tool: String,
        args: String,
        summary: String,
    },
    /// A request of `session` was decided.
    Resolved {
        session: SessionId,
        request: PermissionRequestId,
        decision: Decision,
        by_client: String,
    },
    /// What the child is doing now.
    Activity(String),
    /// The child's run ended; `background` is its task's description when its result goes to
    /// the parent as a message.
    Finished {
        end: ChildEnd,
        background: Option<String>,
    },
}

/// A note from a child session.
pub(crate) struct FromChild {
    /// The child.
    pub(crate) child: SessionId,
    /// Its actor.
    pub(crate) actor: WeakActorRef<SessionActor>,
    /// What it says.
    pub(crate) note: ChildNote,
}

/// The child's side of the link: notes go, in order, to the parent's actor (loaded again if it
/// was unloaded) by a task of their own, so the child never waits for its parent.
pub(super) struct ParentLink {
    notes: mpsc::UnboundedSender<ChildNote>,
    /// The child's actor, which answers its own requests shown in the parent.
    me: WeakActorRef<SessionActor>,
}

impl ParentLink {
    /// Starts the link of child `child` (whose actor is `me`) to `parent`.
    pub(super) fn start(
        directory: Arc<dyn Directory>,
        parent: SessionId,
        child: SessionId,
        me: WeakActorRef<SessionActor>,
    ) -> ParentLink {
        let (tx, mut rx) = mpsc::unbounded_channel::<ChildNote>();
        let child_actor = me.clone();
        tokio::spawn(async move {
            let mut actor: Option<ActorRef<SessionActor>> = None;
            while let Some(note) = rx.recv().await {
                let note = FromChild {
                    child: child.clone(),
                    actor: me.clone(),
                    note,
                };
                let mut note = Some(note);
                // A parent that was unloaded meanwhile is loaded again (once per note).
                for _ in 0..2 {
                    let target = match actor.as_ref().filter(|a| a.is_alive()) {
                        Some(a) => a.clone(),
                        None => match directory.lookup(parent.clone()).await {
                            Ok(a) => {
                                actor = Some(a.clone());
                                a
                            }
                            Err(err) => {
                                tracing::warn!(%child, %parent, "cannot reach the parent session: {}", err.message);
                                break;
                            }
                        },
                    };
                    match target.tell(note.take().expect("a note to send")).await {
                        Ok(()) => break,
                        Err(SendError::ActorNotRunning(back)) => {
                            note = Some(back);
                            actor = None;
                        }
                        Err(_) => break,
                    }
                }
            }
        });
        ParentLink {
            notes: tx,
            me: child_actor,
        }
    }

    /// Sends `note` to the parent.
    pub(super) fn send(&self, note: ChildNote) {
        let _ = self.notes.send(note);
    }

    /// The child's actor.
    pub(super) fn me(&self) -> WeakActorRef<SessionActor> {
        self.me.clone()
    }
}
