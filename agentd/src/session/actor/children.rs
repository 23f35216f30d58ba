//! A session's subagents (docs/architecture.md#subagents), from the session's side. As a
//! parent, a session adopts the children its runs make, shows their permission requests and
//! activity in its own stream, takes a background child's result as a follow-up message, and
//! cancels its children first when it is cancelled. As a child, it hands the end of a run to
//! whoever waits for it, and its parent hears of it.

use std::sync::Arc;

use kameo::prelude::*;
use protocol::{Delivery, ErrorInfo, Event, RunId, RunOptions, SessionId};
use tokio::sync::oneshot;

use super::SessionActor;
use super::family::Heard;
use super::parent_link::FromChild;
use crate::session::queue::Prompt;
use crate::session::run::{RunOutcome, TaskSetup};
use crate::subagents::definitions;
use crate::subagents::task::ChildEnd;

/// What a subagent is told besides the usual system prompt.
const SUBAGENT_ROLE: &str = "# You are a subagent\n\nAnother agent started you for one task, \
     given in the first message. Nobody reads your work as it happens: your final message is \
     all the other agent receives, so make it complete on its own (what you found or changed, \
     with paths). Do only this task.";

impl SessionActor {
    /// How a run of this session ended, as a parent hears of it.
    pub(super) fn end_of(&self, outcome: &RunOutcome, duration_ms: u64) -> ChildEnd {
        ChildEnd {
            child: self.shown.id().clone(),
            agent: self
                .durable
                .meta()
                .child
                .as_ref()
                .map_or_else(String::new, |c| c.agent.clone()),
            stop_reason: outcome.stop_reason,
            error: outcome.error.clone(),
            turns: outcome.turns,
            usage: outcome.usage,
            duration_ms,
            text: self.history.last_reply_text(),
        }
    }

    /// Run `run` of this session ended as `outcome`: whoever waits for it hears how, and a
    /// child's parent is told.
    pub(super) fn hand_out_run_end(&mut self, run: RunId, outcome: &RunOutcome, duration_ms: u64) {
        let end = self.end_of(outcome, duration_ms);
        // Only the task's own run reports back as a message; later runs (a user's follow-up)
        // do not.
        let background = self
            .durable
            .meta()
            .child
            .as_ref()
            .filter(|c| c.background && run.0 == 1)
            .map(|c| c.description.clone());
        self.family.hand_out(run, end, background);
    }

    /// Cancels every running child of this session (and theirs) and waits until each has
    /// taken the cancel.
    pub(super) async fn cancel_children(&mut self) {
        for child in self.family.children() {
            let _ = child.ask(super::Cancel).await;
        }
    }

    /// The system prompt's part for a subagent: its role and its definition's instructions.
    pub(super) fn subagent_prompt(&self) -> Option<String> {
        let child = self.durable.meta().child.as_ref()?;
        let mut text = SUBAGENT_ROLE.to_string();
        if !child.instructions.trim().is_empty() {
            text.push_str(&format!(
                "\n\n# Instructions for the {} agent\n\n{}",
                child.agent, child.instructions
            ));
        }
        Some(text)
    }

    /// What the run needs to start subagents; `None` where this session may not (too deep,
    /// or subagents are off). Agent definitions are read now, so edits apply at the next run.
    pub(super) fn task_setup(
        &mut self,
        options: &RunOptions,
        config: &crate::config::Config,
    ) -> Option<Arc<TaskSetup>> {
        let depth = self.durable.meta().child.as_ref().map_or(0, |c| c.depth);
        if depth >= config.subagents.max_depth {
            return None;
        }
        let dirs = definitions::directories(self.cwd(), &self.env.paths.config_dir);
        let (agents, problems) = definitions::discover(&dirs);
        for problem in problems {
            if self.workspace.first_time(&problem) {
                self.emit(Event::Notice {
                    text: format!("an agent definition was skipped: {problem}"),
                });
            }
        }
        let (slots, live) = self.family.places();
        Some(Arc::new(TaskSetup {
            slots,
            live,
            agents,
            depth,
            mode: self.shown.mode(),
            model: self.shown.model().map(str::to_string),
            provider: self.shown.provider().map(str::to_string),
            env: self.workspace.client_env().to_vec(),
            options: options.clone(),
        }))
    }
}

/// Wait for the end of run `run` of this session (the last one ended, if it is over).
pub(super) struct AwaitRun(pub(super) RunId);

impl Message<AwaitRun> for SessionActor {
    type Reply = Result<oneshot::Receiver<ChildEnd>, ErrorInfo>;

    async fn handle(&mut self, msg: AwaitRun, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let running = self.runs.running_from(msg.0);
        Ok(self.family.await_run(msg.0, running))
    }
}

/// A run of this session made a child.
pub(super) struct AdoptChild {
    /// The child.
    pub(super) child: SessionId,
    /// Its actor.
    pub(super) actor: WeakActorRef<SessionActor>,
    /// Its task's description.
    pub(super) description: String,
    /// The run whose `task` call made it.
    pub(super) run: RunId,
    /// Its `SubagentStarted` event: stored before the child's run starts, so that a parent
    /// resumed after a crash finds its child and never starts a second one.
    pub(super) started: Event,
}

impl Message<AdoptChild> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: AdoptChild, _: &mut Context<Self, Self::Reply>) {
        self.family.adopt(msg.child, msg.actor, msg.description);
        if self.runs.active(msg.run).is_ok() {
            self.emit(msg.started);
        }
    }
}

impl Message<FromChild> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: FromChild, ctx: &mut Context<Self, Self::Reply>) {
        match self.family.hear(msg) {
            Heard::Show(event) => self.emit(event),
            Heard::Activity(child, activity) => {
                if self.runs.is_running() {
                    self.emit(Event::SubagentActivity { child, activity });
                }
            }
            Heard::Finished {
                child,
                end,
                background: Some(background),
            } => self.background_child_finished(child, end, background, ctx),
            Heard::Finished { .. } | Heard::Nothing => {}
        }
    }
}

impl SessionActor {
    /// A background child's run ended: its result becomes a follow-up message (starting a run
    /// when none is going).
    fn background_child_finished(
        &mut self,
        child: SessionId,
        end: ChildEnd,
        background: String,
        ctx: &mut Context<Self, ()>,
    ) {
        self.emit(Event::SubagentFinished {
            child,
            stop_reason: end.stop_reason,
            turns: end.turns,
            usage: end.usage,
            cost_micros: None,
            duration_ms: end.duration_ms,
        });
        let text = end.notification(&background);
        if self.runs.is_running() {
            self.queues.push(Prompt::text(text), Delivery::FollowUp);
            self.emit_queues();
        } else {
            let me = ctx.actor_ref().clone();
            let options = self.runs.last_options().clone();
            let prompt = Prompt::text(text.clone());
            if let Err(refused) = self.start_run(prompt, Delivery::FollowUp, options, me) {
                // Kept for the next run, which the next message starts.
                self.emit(Event::Error {
                    message: refused.message,
                });
                self.queues.push(Prompt::text(text), Delivery::FollowUp);
                self.emit_queues();
            }
        }
    }
}
