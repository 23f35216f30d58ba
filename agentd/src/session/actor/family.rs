//! A session's family (docs/architecture.md#subagents), seen from both sides. As a parent, a
//! session keeps the children it started (to cancel them first when it is cancelled), the
//! permission requests of its descendants shown in its own stream, and who waits for the end
//! of its runs. As a child, it tells its parent what it does through a [`ParentLink`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kameo::prelude::*;
use protocol::{ErrorInfo, Event, PermissionRequestId, RunId, SessionId};
use tokio::sync::{Semaphore, oneshot};

use super::SessionActor;
use super::parent_link::{ChildNote, FromChild, ParentLink};
use crate::subagents::task::ChildEnd;

/// What a session holds of its children and of its parent.
pub(super) struct Family {
    /// Places for this session's children running at once.
    slots: Arc<Semaphore>,
    /// Places for this session's children not finished (running or waiting to).
    live: Arc<Semaphore>,
    /// The children this session started, to cancel with it.
    children: HashMap<SessionId, WeakActorRef<SessionActor>>,
    /// The children running now, with their task's description (empty when not known).
    running: BTreeMap<SessionId, String>,
    /// Requests of descendants shown in this session's stream and not yet decided: who asks.
    asks: HashMap<(SessionId, PermissionRequestId), WeakActorRef<SessionActor>>,
    /// The way to the parent, for a child.
    parent: Option<ParentLink>,
    /// Who waits for the end of which run of this session.
    waiters: Vec<(RunId, oneshot::Sender<ChildEnd>)>,
    /// How this session's last run ended.
    last_end: Option<(RunId, ChildEnd)>,
}

/// What a note from a child means to its parent.
pub(super) enum Heard {
    /// An event to show in the parent's stream (a descendant's request, or its answer).
    Show(Event),
    /// What a child does now, shown while the parent's run goes.
    Activity(SessionId, String),
    /// A child's run ended; `background` is its task's description when its result goes to
    /// the parent as a message.
    Finished {
        child: SessionId,
        end: ChildEnd,
        background: Option<String>,
    },
    /// Nothing to show.
    Nothing,
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
            running: BTreeMap::new(),
            asks: HashMap::new(),
            parent,
            waiters: Vec::new(),
            last_end: None,
        }
    }

    /// The session's places for children running at once, and for children not finished.
    pub(super) fn places(&self) -> (Arc<Semaphore>, Arc<Semaphore>) {
        (self.slots.clone(), self.live.clone())
    }

    /// A child tells its parent what `event` (of the child, `own`) means to it: asks, their
    /// answers, activity. Called for every event the child emits.
    pub(super) fn tell_parent(&self, event: &Event, own: &SessionId) {
        let Some(link) = &self.parent else {
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
                session: session.clone().unwrap_or_else(|| own.clone()),
                actor: match session {
                    // A grandchild's request, shown here: the grandchild answers it.
                    Some(s) => match self.asks.get(&(s.clone(), *request)) {
                        Some(actor) => actor.clone(),
                        None => return,
                    },
                    None => link.me(),
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
                session: session.clone().unwrap_or_else(|| own.clone()),
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

    /// Run `run` of this session ended as `end`: whoever waits for it hears how, and a child's
    /// parent is told (`background`: the task's description, when the result goes to the
    /// parent as a message).
    pub(super) fn hand_out(&mut self, run: RunId, end: ChildEnd, background: Option<String>) {
        for (_, waiter) in self.waiters.extract_if(.., |(r, _)| *r <= run) {
            let _ = waiter.send(end.clone());
        }
        self.last_end = Some((run, end.clone()));
        if let Some(link) = &self.parent {
            link.send(ChildNote::Finished { end, background });
        }
    }

    /// How run `run` ended, read from the log: who waits for it after a restart hears it.
    pub(super) fn restore_last_end(&mut self, run: RunId, end: ChildEnd) {
        self.last_end = Some((run, end));
    }

    /// Where the end of run `run` arrives; at once when it is over (`running`: a run from
    /// `run` on is in progress).
    pub(super) fn await_run(&mut self, run: RunId, running: bool) -> oneshot::Receiver<ChildEnd> {
        let (tx, rx) = oneshot::channel();
        match &self.last_end {
            Some((last, end)) if !running && *last >= run => {
                let _ = tx.send(end.clone());
            }
            _ => self.waiters.push((run, tx)),
        }
        rx
    }

    /// A run of this session started `child` (whose actor is `actor`) for a task.
    pub(super) fn adopt(
        &mut self,
        child: SessionId,
        actor: WeakActorRef<SessionActor>,
        description: String,
    ) {
        self.running.insert(child.clone(), description);
        self.children.insert(child, actor);
    }

    /// The children still loaded, to cancel.
    pub(super) fn children(&self) -> Vec<ActorRef<SessionActor>> {
        self.children
            .values()
            .filter_map(WeakActorRef::upgrade)
            .collect()
    }

    /// The descendants with a pending request numbered `request` shown here.
    pub(super) fn askers_numbered(&self, request: PermissionRequestId) -> Vec<SessionId> {
        let mut askers: Vec<SessionId> = self
            .asks
            .keys()
            .filter(|(_, r)| *r == request)
            .map(|(s, _)| s.clone())
            .collect();
        askers.sort_by(|a, b| a.0.cmp(&b.0));
        askers
    }

    /// The session that asked `request`, when it is a descendant's pending request shown here
    /// and this session never gave that number to a request of its own (`own`: its own comes
    /// first, even once decided); `None` for this session's own. A number pending in more than
    /// one descendant is refused: the answer must go to the session that asked.
    pub(super) fn asker_of(
        &self,
        request: PermissionRequestId,
        own: bool,
    ) -> Result<Option<ActorRef<SessionActor>>, ErrorInfo> {
        let askers: Vec<_> = self
            .asks
            .iter()
            .filter(|((_, r), _)| *r == request)
            .collect();
        // A request of this session's own, pending or decided, is the one its number names.
        if own {
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

    /// A compaction's summary with this session's running subagents named.
    pub(super) fn with_running_children(&self, summary: String) -> String {
        with_children(summary, &self.running)
    }

    /// Takes in a note from a child: what it means to this session.
    pub(super) fn hear(&mut self, msg: FromChild) -> Heard {
        self.children.entry(msg.child.clone()).or_insert(msg.actor);
        if matches!(msg.note, ChildNote::Finished { .. }) {
            self.running.remove(&msg.child);
        } else {
            self.running.entry(msg.child.clone()).or_default();
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
                self.asks.insert((session.clone(), request), actor);
                Heard::Show(Event::PermissionRequested {
                    session: Some(session),
                    request,
                    tool,
                    args,
                    summary,
                })
            }
            ChildNote::Resolved {
                session,
                request,
                decision,
                by_client,
            } => match self.asks.remove(&(session.clone(), request)) {
                Some(_) => Heard::Show(Event::PermissionResolved {
                    session: Some(session),
                    request,
                    decision,
                    by_client,
                }),
                None => Heard::Nothing,
            },
            ChildNote::Activity(activity) => Heard::Activity(msg.child, activity),
            ChildNote::Finished { end, background } => {
                // Its requests shown here are gone.
                self.asks.retain(|(s, _), _| *s != msg.child);
                Heard::Finished {
                    child: msg.child,
                    end,
                    background,
                }
            }
        }
    }
}

/// One line saying what a call does, for its parent's view.
fn activity_of(call: &protocol::ToolCallInfo) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.args).unwrap_or_default();
    let detail = ["command", "path", "pattern", "url", "query", "description"]
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

/// `summary` of a compacted history, with the subagents still running: their results are
/// still to come, and the model must know their ids to wait for them or steer them.
fn with_children(summary: String, running: &BTreeMap<SessionId, String>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compacted_history_keeps_the_ids_of_running_children() {
        let mut running = BTreeMap::new();
        assert_eq!(with_children("sum".into(), &running), "sum");
        running.insert(SessionId("ab12".into()), "find the bug".to_string());
        running.insert(SessionId("cd34".into()), String::new());
        let text = with_children("sum".into(), &running);
        assert!(text.starts_with("sum"));
        assert!(text.contains("- ab12: find the bug"));
        assert!(text.contains("- cd34"));
    }
}
