//! A session that holds nothing is not kept: when its only run failed before the model was
//! asked (no API key, a provider that does not exist) and nothing else happened in it, it is
//! deleted as soon as no client follows it. `agentctl run "hi"` without a key then leaves no
//! empty session behind, while a chat that is still open keeps its session.

use protocol::StopReason;

use super::SessionActor;

impl SessionActor {
    /// Deletes the session if it holds nothing and no client follows it (after its run ended,
    /// and whenever a client stops following it).
    pub(super) fn discard_if_empty(&mut self) {
        if self.discarding || self.durable.followers() > 0 || !self.holds_nothing() {
            return;
        }
        self.discarding = true;
        tracing::info!(session = %self.shown.id(), "deleting a session whose only run failed before the model was asked");
        self.env.directory.discard(self.shown.id().clone());
    }

    /// Whether the session's only run failed before any model call began, and the session
    /// holds nothing else: its first message, and no reply, queued message, question, rule or
    /// subagent.
    fn holds_nothing(&self) -> bool {
        let failed_unasked = self.shown.finished_run().is_some_and(|run| {
            run.turn == 0
                && run
                    .end
                    .is_some_and(|end| end.stop_reason == StopReason::Error)
        });
        failed_unasked
            && self.runs.had_one_run()
            && self.history.len() == 1
            && self.durable.meta().child.is_none()
            && self.queues.is_empty()
            && self.asks.holds_nothing()
            && !self.history.compacting()
    }
}
