//! What a run asks of its session, as it works: its events, the next turn's input (steering
//! delivered first), the messages it adds to the history, the queued message that keeps it
//! going, permission, compaction and what its hooks see. Each is routed to the parts it
//! concerns; a message of a run that is no longer the one in progress is refused.

use kameo::prelude::*;
use protocol::{Delivery, ErrorInfo, Event, RunId};

use super::SessionActor;
use super::door::ActorDoor;
use crate::conversation::Message as HistoryMessage;
use crate::session::run::{Door, HookSession, ToSession, TurnInput};

impl Message<ToSession> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: ToSession, ctx: &mut Context<Self, Self::Reply>) {
        match msg {
            ToSession::Emit { run, event } => self.run_event(run, event),
            ToSession::BeginTurn {
                run,
                compact_prompt,
                reply,
            } => {
                let _ = reply.send(self.begin_turn(run, compact_prompt));
            }
            ToSession::Push {
                run,
                message,
                event,
                reply,
            } => {
                let _ = reply.send(self.push_from_run(run, message, event));
            }
            ToSession::NextQueued { run, reply } => {
                let _ = reply.send(self.next_queued(run));
            }
            ToSession::Authorize { run, call, reply } => {
                let _ = reply.send(self.authorize(run, call));
            }
            ToSession::Expire { request, reply } => {
                let _ = reply.send(self.expire(request));
            }
            ToSession::ApplyCompaction {
                run,
                compact_prompt,
                summary,
                cut,
                generation,
                reply,
            } => {
                let applied = self.compact_for_run(run, compact_prompt, summary, cut, generation);
                let _ = reply.send(applied);
            }
            ToSession::HookContext { reply } => {
                let _ = reply.send(Ok(HookSession {
                    transcript: self.write_transcript(),
                    mode: self.shown.mode(),
                }));
            }
            // A run's hook answers the run's own request only, never a subagent's that
            // happens to carry the same number.
            ToSession::Answer { answer, reply } => {
                let _ = reply.send(self.resolve(answer));
            }
            // Messages about other sessions go there directly (see `door`); one that came
            // this way takes the same way.
            other @ (ToSession::MakeChild { .. }
            | ToSession::AwaitRun { .. }
            | ToSession::CancelChild { .. }
            | ToSession::SendMessage { .. }) => {
                ActorDoor::new(ctx.actor_ref().clone(), self.env.directory.clone()).send(other);
            }
        }
    }
}

impl SessionActor {
    /// An event of run `run` (text deltas, tool calls and results, usage); a notice is said
    /// once per session.
    fn run_event(&mut self, run: RunId, event: Event) {
        if let Event::Notice { text } = &event
            && !self.workspace.first_time(text)
        {
            return;
        }
        if self.runs.active(run).is_ok() {
            self.emit(event);
        }
    }

    /// Delivers queued steering and hands out the next model call's input.
    fn begin_turn(&mut self, run: RunId, compact_prompt: bool) -> Result<TurnInput, ErrorInfo> {
        self.runs.active(run)?;
        if self.deliver_steering() {
            self.emit_queues();
        }
        self.tell_lost_shells();
        Ok(self.turn_input(compact_prompt))
    }

    /// Appends a message of run `run` to the history, with the event that announces it.
    fn push_from_run(
        &mut self,
        run: RunId,
        message: HistoryMessage,
        event: Option<Event>,
    ) -> Result<(), ErrorInfo> {
        self.runs.active(run)?;
        self.push_message(message);
        if let Some(event) = event {
            self.emit(event);
        }
        Ok(())
    }

    /// Run `run` summarised the first `cut` messages of the history of `generation`: the
    /// summary replaces them, and the next model call's input is handed out.
    fn compact_for_run(
        &mut self,
        run: RunId,
        compact_prompt: bool,
        summary: String,
        cut: usize,
        generation: u64,
    ) -> Result<TurnInput, ErrorInfo> {
        self.runs.active(run)?;
        self.apply_compaction(summary, cut, generation)?;
        Ok(self.turn_input(compact_prompt))
    }

    /// Run `run` would complete: delivers queued steering, or else the next follow-up; what
    /// was delivered.
    fn next_queued(&mut self, run: RunId) -> Result<Option<Delivery>, ErrorInfo> {
        self.runs.active(run)?;
        let delivered = if self.deliver_steering() {
            Some(Delivery::Steer)
        } else if let Some(prompt) = self.queues.take_follow_up() {
            self.push_user(prompt, Delivery::FollowUp);
            Some(Delivery::FollowUp)
        } else {
            None
        };
        if delivered.is_some() {
            self.emit_queues();
        }
        Ok(delivered)
    }
}
