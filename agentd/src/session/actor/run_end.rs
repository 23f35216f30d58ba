//! A run's end in the session: its open permission requests are denied, its queue returned
//! (unless it completed), the clients told how it ended, whoever waits for it told too, and
//! the next run started from what is still queued.

use kameo::prelude::*;
use protocol::{Event, RunId, SessionState, StopReason};

use super::SessionActor;
use super::asks::Withdrawn;
use crate::session::run::RunOutcome;

/// The run task ended.
pub(super) struct RunDone {
    /// The run.
    pub(super) run: RunId,
    /// How it ended.
    pub(super) outcome: RunOutcome,
}

impl Message<RunDone> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: RunDone, ctx: &mut Context<Self, Self::Reply>) {
        let Some(finished) = self.runs.end(msg.run) else {
            return;
        };
        let outcome = msg.outcome;
        for denied in self.asks.deny_open(Withdrawn::RunEnded, Vec::new()) {
            self.emit(denied);
        }
        // A completed run leaves nothing queued except what arrived after its last look at
        // the queues; that starts the next run below. Any other end returns the queue.
        let returned = if outcome.stop_reason == StopReason::Completed {
            Vec::new()
        } else {
            self.queues.drain()
        };
        if !returned.is_empty() {
            self.emit_queues();
        }
        self.shown.set_state(SessionState::Idle);
        self.env.running.ended(&self.shown.id().0, msg.run.0);
        tracing::info!(session = %self.shown.id(), run = msg.run.0, stop = %outcome.stop_reason, "run finished");
        let outcome_end = outcome.clone();
        self.emit(Event::RunFinished {
            run: msg.run,
            stop_reason: outcome.stop_reason,
            turns: outcome.turns,
            truncated: outcome.truncated,
            usage: outcome.usage,
            returned_messages: returned,
            error: outcome.error,
            nothing_changed: outcome.nothing_changed,
        });
        self.save_meta();
        self.hand_out_run_end(msg.run, &outcome_end, finished.duration_ms);
        if self.queues.is_empty() {
            self.discard_if_empty();
            return;
        }
        // The next run goes on with the same options (grants, provider settings); refused, it
        // leaves the queue for the next message to deliver.
        let admitted = self
            .env
            .config
            .borrow()
            .admit_run(finished.options.ignore_config);
        if let Err(refused) = admitted {
            self.emit(Event::Error {
                message: refused.message,
            });
            return;
        }
        if let Some((prompt, delivery)) = self.queues.take_next() {
            self.emit_queues();
            let me = ctx.actor_ref().clone();
            let _ = self.start_run(prompt, delivery, finished.options, me);
        }
    }
}
