//! The session's life as a whole: unloading when idle, cancelling the run (its subagents
//! first), and closing for deletion.

use kameo::prelude::*;
use protocol::{ErrorCode, ErrorInfo, Event};

use super::SessionActor;

/// Unload the session if it is idle: no run, no subscriber, no pending question, no
/// compaction. Answers whether it did; an idle session stops (nothing is lost: it loads again
/// from its log on next use).
pub struct TryUnload;

impl Message<TryUnload> for SessionActor {
    type Reply = bool;

    async fn handle(&mut self, _: TryUnload, ctx: &mut Context<Self, Self::Reply>) -> bool {
        let idle = self.run.is_none()
            && self.log.subscriber_count() == 0
            && self.pending.is_empty()
            && self.compaction.is_none();
        if idle {
            tracing::debug!(session = %self.info.id, "unloading an idle session");
            ctx.stop();
        }
        idle
    }
}

/// Cancel the running run and a compaction under way, if any.
pub struct Cancel;

impl Message<Cancel> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, _: Cancel, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        // Children first: none goes on working for a parent that stopped.
        self.cancel_children().await;
        if let Some(run) = &self.run {
            tracing::info!(session = %self.info.id, run = run.id.0, "run cancelled");
            run.cancel.cancel();
        }
        if let Some(compaction) = &self.compaction {
            tracing::info!(session = %self.info.id, "compaction cancelled");
            compaction.cancel();
        }
        Ok(())
    }
}

/// Close the session for deletion: refuse while running unless `force`, tell subscribers,
/// and stop the actor.
pub struct Close {
    /// Cancel a running run instead of refusing.
    pub force: bool,
}

impl Message<Close> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Close, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if let Some(run) = &self.run {
            if !msg.force {
                return Err(ErrorInfo::new(
                    ErrorCode::Busy,
                    format!(
                        "session {} is running; cancel it first or delete with --force",
                        self.info.id
                    ),
                ));
            }
            run.cancel.cancel();
        }
        self.emit(Event::SessionDeleted);
        self.flush_now();
        self.log.close_all();
        ctx.stop();
        Ok(())
    }
}
