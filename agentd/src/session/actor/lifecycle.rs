//! The session's life as a whole: unloading when idle, cancelling the run (its subagents
//! first), and closing for deletion.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event};

use super::SessionActor;

/// Unload the session if it is idle: no run, no subscriber, no pending question, no
/// compaction, no background shell running. Answers whether it did; an idle session stops
/// (nothing is lost: it loads again from its log on next use).
pub(crate) struct TryUnload;

impl Message<TryUnload> for SessionActor {
    type Reply = bool;

    async fn handle(&mut self, _: TryUnload, ctx: &mut Context<Self, Self::Reply>) -> bool {
        let idle = !self.runs.is_running()
            && self.durable.followers() == 0
            && self.asks.none_open()
            && !self.history.compacting()
            && self.shells.running() == 0;
        if idle {
            tracing::debug!(session = %self.shown.id(), "unloading an idle session");
            ctx.stop();
        }
        idle
    }
}

/// Cancel the running run and a compaction under way, if any.
pub(crate) struct Cancel;

impl Message<Cancel> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, _: Cancel, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        // Children first: none goes on working for a parent that stopped.
        self.cancel_children().await;
        if let Some(run) = self.runs.cancel() {
            tracing::info!(session = %self.shown.id(), run = run.0, "run cancelled");
        }
        if self.history.cancel_compaction() {
            tracing::info!(session = %self.shown.id(), "compaction cancelled");
        }
        Ok(())
    }
}

/// Close the session for deletion: refuse while running unless `force`, tell subscribers,
/// and stop the actor.
pub(crate) struct Close {
    /// Cancel a running run instead of refusing.
    pub(crate) force: bool,
}

impl Message<Close> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Close, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self.runs.is_running() {
            if !msg.force {
                return Err(ErrorInfo::new(
                    ErrorCode::Busy,
                    format!(
                        "session {} is running; cancel it first or delete with --force",
                        self.shown.id()
                    ),
                ));
            }
            self.runs.cancel();
        }
        // Its shells end with it.
        for shell in self.shells.end_all().await {
            self.emit(Event::ShellEnded {
                shell,
                end: protocol::ShellEnd::Lost,
            });
        }
        self.emit(Event::SessionDeleted);
        self.durable.flush_now();
        self.durable.close_all();
        ctx.stop();
        Ok(())
    }
}
