//! A session's subagents (SPEC §14), seen from both sides. As a parent, a session keeps the
//! children it started (to cancel them first when it is cancelled), shows their permission
//! requests in its own stream (any of its clients may answer them), their activity, and a
//! background child's result as a follow-up message. As a child, a session tells its parent
//! of those things through a [`ParentLink`], and hands the end of a run to whoever waits for it.

use std::collections::HashMap;
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{Delivery, ErrorInfo, Event, PermissionRequestId, RunId, RunOptions, SessionId};
use tokio::sync::{Semaphore, oneshot};

use super::SessionActor;
use super::parent_link::{ChildNote, FromChild, ParentLink};
use crate::conversation::Message as HistoryMessage;
use crate::session::run::{RunOutcome, TaskSetup};
use crate::subagents::definitions;
use crate::subagents::task::ChildEnd;

/// What a session holds of its children and of its parent.
pub(super) struct Family {
    /// Places for this session's children running at once.
    pub(super) slots: Arc<Semaphore>,
    /// Places for this session's children not finished (running or waiting to).
    pub(super) live: Arc<Semaphore>,
    /// The children this session started, to cancel with it.
    children: HashMap<SessionId, WeakActorRef<SessionActor>>,
    /// The children running now, with their task's description (empty when not known).
    running: std::collections::BTreeMap<SessionId, String>,
    /// Requests of descendants shown in this session's stream and not yet decided: who asks.
    asks: HashMap<(SessionId, PermissionRequestId), WeakActorRef<SessionActor>>,
    /// The way to the parent, for a child.
    parent: Option<ParentLink>,
    /// Who waits for the end of which run of this session.
    waiters: Vec<(RunId, oneshot::Sender<ChildEnd>)>,
    /// How this session's last run ended.
    pub(super) last_end: Option<(RunId, ChildEnd)>,
}

impl Family {
    /// The family of a session; `parent` for a child.
    pub(super) fn new(
        config: &crate::subagents::SubagentConfig,
        parent: Option<ParentLink>,
    ) -> Family {
        Family {
            slots: Arc::new(Semaphore::new(config.parallel())),
            live: Arc::new(Semaphore::new(config.children())),
            children: HashMap::new(),
            running: Default::default(),
            asks: HashMap::new(),
            parent,
            waiters: Vec::new(),
            last_end: None,
        }
    }
}

/// One line saying what a call does, for its parent's view.
fn activity_of(call: &protocol::ToolCallInfo) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.args).unwrap_or_default();
    let detail = ["command", "path", "pattern", "description"]
        .iter()
        .find_map(|key| args[*key].as_str())
        .unwrap_or_default();
    let line: String = detail
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(80)
        .collect();
    if line.is_empty() {
        call.name.clone()
    } else {
        format!("{}: {line}", call.name)
    }
}

impl SessionActor {
    /// A child tells its parent what `event` means to it (asks, activity); called for every
    /// event the child emits.
    pub(super) fn tell_parent(&self, event: &Event) {
        let Some(link) = &self.family.parent else {
            return;
        };
        let note = match event {
            Event::PermissionRequested {
                session,
                request,
                tool,
                args,
                summary,
            } => ChildNote::Asked {
                session: session.clone().unwrap_or_else(|| self.info.id.clone()),
                actor: match session {
                    // A grandchild's request, shown here: the grandchild answers it.
                    Some(s) => match self.family.asks.get(&(s.clone(), *request)) {
                        Some(actor) => actor.clone(),
                        None => return,
                    },
                    None => self.me.clone(),
                },
                request: *request,
                tool: tool.clone(),
                args: args.clone(),
                summary: summary.clone(),
            },
            Event::PermissionResolved {
                session,
                request,
                decision,
                by_client,
            } => ChildNote::Resolved {
                session: session.clone().unwrap_or_else(|| self.info.id.clone()),
                request: *request,
                decision: *decision,
                by_client: by_client.clone(),
            },
            Event::TurnStarted { .. } => ChildNote::Activity("thinking".to_string()),
            Event::ToolCall(call) => ChildNote::Activity(activity_of(call)),
            _ => return,
        };
        link.send(note);
    }

    /// How a run of this session ended, as a parent hears of it.
    pub(super) fn end_of(&self, outcome: &RunOutcome, duration_ms: u64) -> ChildEnd {
        let text = self
            .history
            .iter()
            .rev()
            .find_map(|m| match m {
                HistoryMessage::Assistant(reply) => Some(reply.text()),
                _ => None,
            })
            .unwrap_or_default();
        ChildEnd {
            child: self.info.id.clone(),
            agent: self
                .meta
                .child
                .as_ref()
                .map_or_else(String::new, |c| c.agent.clone()),
            stop_reason: outcome.stop_reason,
            error: outcome.error.clone(),
            turns: outcome.turns,
            usage: outcome.usage,
            duration_ms,
            text,
        }
    }

    /// Run `run` of this session ended as `outcome`: whoever waits for it hears how, and a
    /// child's parent is told.
    pub(super) fn hand_out_run_end(&mut self, run: RunId, outcome: &RunOutcome, duration_ms: u64) {
        let end = self.end_of(outcome, duration_ms);
        for (_, waiter) in self.family.waiters.extract_if(.., |(r, _)| *r <= run) {
            let _ = waiter.send(end.clone());
        }
        self.family.last_end = Some((run, end.clone()));
        if let Some(link) = &self.family.parent {
            // Only the task's own run reports back; later runs (a user's follow-up) do not.
            let background = self
                .meta
                .child
                .as_ref()
                .filter(|c| c.background && run.0 == 1)
                .map(|c| c.description.clone());
            link.send(ChildNote::Finished { end, background });
        }
    }

    /// Cancels every running child of this session (and theirs) and waits until each has
    /// taken the cancel.
    pub(super) async fn cancel_children(&mut self) {
        let children: Vec<_> = self
            .family
            .children
            .values()
            .filter_map(WeakActorRef::upgrade)
            .collect();
        for child in children {
            let _ = child.ask(super::Cancel).await;
        }
    }

    /// The session that asked `request`, when it is a descendant's pending request shown here
    /// and this session has no pending request of that number (its own comes first); `None`
    /// for this session's own. A number pending in more than one descendant is refused: the
    /// answer must go to the session that asked.
    pub(super) fn asker_of(
        &self,
        request: PermissionRequestId,
    ) -> Result<Option<ActorRef<SessionActor>>, ErrorInfo> {
        let askers: Vec<_> = self
            .family
            .asks
            .iter()
            .filter(|((_, r), _)| *r == request)
            .collect();
        // A request of this session's own, pending, is the one its number names here.
        if self.pending.contains_key(&request) {
            return Ok(None);
        }
        match askers.as_slice() {
            [] => Ok(None),
            [(_, actor)] => Ok(actor.upgrade()),
            askers => {
                let whose: Vec<String> = askers
                    .iter()
                    .map(|((s, _), _)| format!("subagent {s}"))
                    .collect();
                Err(ErrorInfo::new(
                    protocol::ErrorCode::InvalidRequest,
                    format!(
                        "permission request {request} is pending in more than one session ({}); answer it in the session that asked, e.g. `agentctl approve {} {request}`",
                        whose.join(", "),
                        askers[0].0.0
                    ),
                ))
            }
        }
    }
}

/// `summary` of a compacted history, with the subagents still running: their results are
/// still to come, and the model must know their ids to wait for them or steer them.
pub fn with_children(
    summary: String,
    running: &std::collections::BTreeMap<SessionId, String>,
) -> String {
    if running.is_empty() {
        return summary;
    }
    let mut text = summary;
    text.push_str("\n\nSubagents still running (their results arrive when they finish):");
    for (id, description) in running {
        if description.is_empty() {
            text.push_str(&format!("\n- {id}"));
        } else {
            text.push_str(&format!("\n- {id}: {description}"));
        }
    }
    text
}

impl SessionActor {
    /// A compaction's summary with this session's running subagents named.
    pub(super) fn with_running_children(&self, summary: String) -> String {
        with_children(summary, &self.family.running)
    }
}

/// What a subagent is told besides the usual system prompt.
const SUBAGENT_ROLE: &str = "# You are a subagent\n\nAnother agent started you for one task, \
     given in the first message. Nobody reads your work as it happens: your final message is \
     all the other agent receives, so make it complete on its own (what you found or changed, \
     with paths). Do only this task.";

impl SessionActor {
    /// The system prompt's part for a subagent: its role and its definition's instructions.
    pub(super) fn subagent_prompt(&self) -> Option<String> {
        let child = self.meta.child.as_ref()?;
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
        let depth = self.meta.child.as_ref().map_or(0, |c| c.depth);
        if depth >= config.subagents.max_depth {
            return None;
        }
        let dirs = definitions::directories(&self.cwd(), &self.env.paths.config_dir);
        let (agents, problems) = definitions::discover(&dirs);
        for problem in problems {
            if self.noticed.insert(problem.clone()) {
                self.emit(Event::Notice {
                    text: format!("an agent definition was skipped: {problem}"),
                });
            }
        }
        Some(Arc::new(TaskSetup {
            directory: self.env.directory.clone(),
            slots: self.family.slots.clone(),
            live: self.family.live.clone(),
            agents,
            depth,
            mode: self.info.mode,
            model: self.info.model.clone(),
            provider: self.info.provider.clone(),
            env: self.client_env.clone(),
            options: options.clone(),
        }))
    }
}

/// Wait for the end of run `run` of this session (the last one ended, if it is over).
pub struct AwaitRun(pub RunId);

impl Message<AwaitRun> for SessionActor {
    type Reply = Result<oneshot::Receiver<ChildEnd>, ErrorInfo>;

    async fn handle(&mut self, msg: AwaitRun, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let (tx, rx) = oneshot::channel();
        let running = self.run.as_ref().is_some_and(|r| r.id >= msg.0);
        match &self.family.last_end {
            Some((run, end)) if !running && *run >= msg.0 => {
                let _ = tx.send(end.clone());
            }
            _ => self.family.waiters.push((msg.0, tx)),
        }
        Ok(rx)
    }
}

/// A run of this session started a child.
pub struct AdoptChild {
    /// The child.
    pub child: SessionId,
    /// Its actor.
    pub actor: WeakActorRef<SessionActor>,
    /// Its task's description.
    pub description: String,
    /// The run whose `task` call made it.
    pub run: RunId,
    /// Its `SubagentStarted` event: stored before the child's run starts, so that a parent
    /// resumed after a crash finds its child and never starts a second one.
    pub started: Event,
}

impl Message<AdoptChild> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: AdoptChild, _: &mut Context<Self, Self::Reply>) {
        self.family
            .running
            .insert(msg.child.clone(), msg.description);
        self.family.children.insert(msg.child, msg.actor);
        if self.active(msg.run).is_ok() {
            self.emit(msg.started);
        }
    }
}

impl Message<FromChild> for SessionActor {
    type Reply = ();

    async fn handle(&mut self, msg: FromChild, ctx: &mut Context<Self, Self::Reply>) {
        self.family
            .children
            .entry(msg.child.clone())
            .or_insert(msg.actor);
        if matches!(msg.note, ChildNote::Finished { .. }) {
            self.family.running.remove(&msg.child);
        } else {
            self.family.running.entry(msg.child.clone()).or_default();
        }
        match msg.note {
            ChildNote::Asked {
                session,
                actor,
                request,
                tool,
                args,
                summary,
            } => {
                self.family.asks.insert((session.clone(), request), actor);
                self.emit(Event::PermissionRequested {
                    session: Some(session),
                    request,
                    tool,
                    args,
                    summary,
                });
            }
            ChildNote::Resolved {
                session,
                request,
                decision,
                by_client,
            } => {
                if self
                    .family
                    .asks
                    .remove(&(session.clone(), request))
                    .is_some()
                {
                    self.emit(Event::PermissionResolved {
                        session: Some(session),
                        request,
                        decision,
                        by_client,
                    });
                }
            }
            ChildNote::Activity(activity) => {
                if self.run.is_some() {
                    self.emit(Event::SubagentActivity {
                        child: msg.child,
                        activity,
                    });
                }
            }
            ChildNote::Finished { end, background } => {
                self.child_finished(msg.child, end, background, ctx)
            }
        }
    }
}

impl SessionActor {
    /// A child's run ended: its requests shown here are gone; a background child's result
    /// becomes a follow-up message (starting a run when none is going).
    fn child_finished(
        &mut self,
        child: SessionId,
        end: ChildEnd,
        background: Option<String>,
        ctx: &mut Context<Self, ()>,
    ) {
        let gone: Vec<_> = self
            .family
            .asks
            .keys()
            .filter(|(s, _)| *s == child)
            .cloned()
            .collect();
        for key in gone {
            self.family.asks.remove(&key);
        }
        let Some(background) = background else {
            return;
        };
        self.emit(Event::SubagentFinished {
            child: child.clone(),
            stop_reason: end.stop_reason,
            turns: end.turns,
            usage: end.usage,
            cost_micros: None,
            duration_ms: end.duration_ms,
        });
        let text = end.notification(&background);
        if self.run.is_some() {
            self.queues.push(text, Delivery::FollowUp);
            self.emit_queues();
        } else {
            let me = ctx.actor_ref().clone();
            let options = self.last_options.clone();
            if let Err(refused) = self.start_run(text.clone(), Delivery::FollowUp, options, me) {
                // Kept for the next run, which the next message starts.
                self.emit(Event::Error {
                    message: refused.message,
                });
                self.queues.push(text, Delivery::FollowUp);
                self.emit_queues();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compacted_history_keeps_the_ids_of_running_children() {
        let mut running = std::collections::BTreeMap::new();
        assert_eq!(with_children("sum".into(), &running), "sum");
        running.insert(SessionId("ab12".into()), "find the bug".to_string());
        running.insert(SessionId("cd34".into()), String::new());
        let text = with_children("sum".into(), &running);
        assert!(text.starts_with("sum"));
        assert!(text.contains("- ab12: find the bug"));
        assert!(text.contains("- cd34"));
    }
}
