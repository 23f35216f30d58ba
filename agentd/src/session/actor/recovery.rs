//! Rebuilding a session from its log, record by record as it is read, and what to do with a
//! run that the daemon (or the session's actor) did not live to finish: resumed (SPEC §4,
//! continuity), or closed (every tool call gets its result, open permission requests are
//! answered, and the run is finished as `error`) when resuming is off, when the actor itself
//! failed, or when the run was already resumed less than a minute before.

use std::sync::Arc;

use protocol::{
    Decision, Delivery, Event, PermissionRequestId, ResumeReason, RunId, RunOptions, StopReason,
    TokenUsage,
};

use super::SessionActor;
use crate::conversation::{Message as HistoryMessage, ToolCall, ToolResult};
use crate::session::queue::Queues;
use crate::session::run::Resumed;
use crate::store::Record;

/// A run interrupted twice within this time is not resumed again.
const AGAIN_WITHIN_MS: u64 = 60_000;

/// A run to resume once the session is loaded.
pub(super) struct Resume {
    pub(super) run: RunId,
    pub(super) max_turns: u32,
    pub(super) options: RunOptions,
    pub(super) reason: ResumeReason,
    pub(super) resumed: Resumed,
}

/// What replaying a log keeps between records, for closing what a stop interrupted.
#[derive(Default)]
pub(super) struct Replayer {
    open_run: Option<(RunId, u32)>,
    /// The open run's turn limit, options and when it was last resumed.
    open_max_turns: u32,
    open_options: Option<(RunId, RunOptions)>,
    resumed_ms: Option<u64>,
    /// The daemon stopped on purpose while the open run went.
    stopped: bool,
    /// Calls of the last reply that were announced (their batch began).
    announced: Vec<String>,
    /// Children the last reply's `task` calls started: (call, child, in the background).
    children: Vec<(String, protocol::SessionId, bool)>,
    /// The open run's tokens so far (its last `Usage`), and its finished subagents' in the
    /// foreground: a resumed or closed run counts them.
    usage: TokenUsage,
    children_usage: TokenUsage,
    /// The open run's subagents in the foreground.
    foreground: Vec<protocol::SessionId>,
    asks: Vec<PermissionRequestId>,
    /// What the open permission requests asked to run: (tool, arguments).
    asked: Vec<(PermissionRequestId, String, String)>,
    results_since_reply: Vec<(String, String, bool, String)>,
    reserved: u64,
    explained: u64,
    open_deltas: Option<u64>,
    /// The session took its title from its first message while the log was read.
    titled: bool,
}

impl Replayer {
    /// Applies one stored record to the session being rebuilt.
    pub(super) fn apply(&mut self, actor: &mut SessionActor, record: Record) {
        match record {
            Record::Header { .. } => {}
            Record::Reserved { to } => self.reserved = self.reserved.max(to),
            Record::Deltas { seq } => self.open_deltas = Some(seq),
            Record::Gap { to, .. } => {
                self.explained = self.explained.max(to);
                self.open_deltas = None;
            }
            Record::Message { message } => {
                if matches!(message, HistoryMessage::Assistant(_)) {
                    actor.info.turns += 1;
                }
                if matches!(message, HistoryMessage::ToolResults { .. }) {
                    self.results_since_reply.clear();
                }
                Arc::make_mut(&mut actor.history).push(message);
            }
            Record::Rule { rule } => actor.always.push(rule),
            Record::Run { run, options } => {
                // A run started later without a client (a subagent's result) goes on with these.
                actor.last_options = options.clone();
                self.open_options = Some((run, options));
            }
            Record::Stopped { run } => {
                self.stopped = self.open_run.is_some_and(|(open, _)| open == run);
            }
            Record::Compaction { summary, keep_last } => actor.replace_history(summary, keep_last),
            Record::Event {
                seq,
                time_ms,
                event,
            } => {
                match &event {
                    Event::RunStarted { run, max_turns, .. } => {
                        actor.runs = actor.runs.max(run.0);
                        self.open_run = Some((*run, 0));
                        self.open_max_turns = *max_turns;
                        self.resumed_ms = None;
                        self.stopped = false;
                        self.usage = TokenUsage::default();
                        self.children_usage = TokenUsage::default();
                        self.foreground.clear();
                    }
                    Event::Usage { cumulative, .. } if self.open_run.is_some() => {
                        self.usage = *cumulative;
                    }
                    Event::SubagentFinished { child, usage, .. }
                        if self.foreground.contains(child) =>
                    {
                        self.children_usage.add(usage);
                    }
                    Event::RunResumed { run, .. }
                        if self.open_run.is_some_and(|(open, _)| open == *run) =>
                    {
                        self.resumed_ms = Some(time_ms);
                        self.stopped = false;
                    }
                    Event::AssistantMessage { .. } => {
                        if let Some((_, turns)) = &mut self.open_run {
                            *turns += 1;
                        }
                        self.results_since_reply.clear();
                        self.announced.clear();
                        self.children.clear();
                        self.open_deltas = None;
                    }
                    Event::ToolCall(call) => self.announced.push(call.id.clone()),
                    Event::SubagentStarted {
                        call,
                        child,
                        background,
                        ..
                    } => {
                        if !*background {
                            self.foreground.push(child.clone());
                        }
                        self.children
                            .push((call.clone(), child.clone(), *background));
                    }
                    Event::ToolResult {
                        id,
                        name,
                        is_error,
                        output,
                        ..
                    } => {
                        self.results_since_reply.push((
                            id.clone(),
                            name.clone(),
                            *is_error,
                            output.clone(),
                        ));
                    }
                    Event::RunFinished {
                        run,
                        stop_reason,
                        turns,
                        usage,
                        error,
                        ..
                    } => {
                        self.open_run = None;
                        // Who waits for this run (a parent after a restart) hears how it ended.
                        let outcome = crate::session::run::RunOutcome {
                            stop_reason: *stop_reason,
                            turns: *turns,
                            truncated: false,
                            usage: *usage,
                            error: error.clone(),
                            nothing_changed: false,
                        };
                        actor.family.last_end = Some((*run, actor.end_of(&outcome, 0)));
                    }
                    Event::ModeChanged { mode } => actor.info.mode = *mode,
                    // A session stored before it took its title takes it now.
                    Event::UserMessage { text, .. } => {
                        self.titled |= actor.take_title(text);
                    }
                    Event::ModelChanged { model } => actor.info.model = Some(model.clone()),
                    Event::QueueChanged { steer, follow_up } => {
                        actor.queues = Queues::default();
                        for text in steer {
                            actor.queues.push(text.clone(), Delivery::Steer);
                        }
                        for text in follow_up {
                            actor.queues.push(text.clone(), Delivery::FollowUp);
                        }
                    }
                    Event::PermissionRequested {
                        session: None,
                        request,
                        tool,
                        args,
                        ..
                    } => {
                        actor.requests = actor.requests.max(request.0);
                        self.asks.push(*request);
                        self.asked.push((*request, tool.clone(), args.clone()));
                    }
                    Event::PermissionResolved {
                        session: None,
                        request,
                        by_client,
                        ..
                    } => {
                        self.asks.retain(|r| r != request);
                        self.asked.retain(|(r, ..)| r != request);
                        actor.decided.insert(*request, by_client.clone());
                    }
                    _ => {}
                }
                actor.board.apply(&event, time_ms);
                actor.usage.apply(&event);
                actor.log.restore(seq, time_ms, event);
            }
        }
    }

    /// After the last record: accounts for `seq`s the log does not hold, and closes a run the
    /// daemon (or the actor) did not live to finish.
    pub(super) fn finish(self, actor: &mut SessionActor, restarted: bool) {
        if self.titled {
            actor.save_meta();
        }
        actor.close_interrupted(self, restarted);
    }
}

impl SessionActor {
    /// Closes what a stop interrupted: every tool call of the last reply gets its result, open
    /// permission requests are answered, and the run is finished as `error`.
    fn close_interrupted(&mut self, replayed: Replayer, restarted: bool) {
        let Replayer {
            open_run,
            open_max_turns,
            open_options,
            resumed_ms,
            stopped,
            announced,
            children,
            usage,
            children_usage,
            foreground: _,
            asks,
            asked,
            results_since_reply,
            reserved,
            explained,
            open_deltas,
            titled: _,
        } = replayed;
        self.account_for_reserved(open_deltas, reserved, explained);
        if restarted {
            self.emit(Event::Error {
                message: "the session restarted after an internal error; its history was reloaded from disk".to_string(),
            });
        }
        // Loaded idle; a resumed run makes it running again.
        self.info.state = protocol::SessionState::Idle;
        let Some((run, turns)) = open_run else {
            // The run finished before its end reached the journal.
            self.env.running.forget(&self.info.id.0);
            return;
        };
        // Only a run the journal says was going when the last daemon stopped goes on: one its
        // log alone leaves open (its end never written, or from long ago) is closed.
        let interrupted = self.env.running.was_interrupted(&self.info.id.0, run.0);
        let resume = !restarted
            && interrupted
            && self
                .meta
                .resume_interrupted
                .unwrap_or(self.env.config().resume_interrupted);
        // A crash soon after a resume is a crash loop; a restart on purpose is not.
        let again = !stopped
            && resumed_ms.is_some_and(|at| crate::now_ms().saturating_sub(at) < AGAIN_WITHIN_MS);
        let options = open_options
            .filter(|(r, _)| *r == run)
            .map(|(_, options)| options)
            .unwrap_or_default();
        // A broken configuration file keeps a resumed run out as it keeps out a new one.
        let refused = if resume && !again {
            let admitted = self.env.config.borrow().admit_run(options.ignore_config);
            admitted.err()
        } else {
            None
        };
        if resume && !again && refused.is_none() {
            // A request left open is asked again when its call runs again.
            self.withdraw(asks, "the daemon restart (it is asked again)");
            let calls: Vec<ToolCall> = match self.history.last() {
                Some(HistoryMessage::Assistant(reply)) => {
                    reply.tool_calls().into_iter().cloned().collect()
                }
                _ => Vec::new(),
            };
            let done = results_since_reply
                .into_iter()
                .filter(|(id, ..)| calls.iter().any(|c| &c.id == id))
                .map(|(call_id, name, is_error, output)| ToolResult {
                    call_id,
                    name,
                    output,
                    is_error,
                })
                .collect();
            // A call waiting for permission had not started.
            let started = calls
                .iter()
                .filter(|c| announced.contains(&c.id))
                .filter(|c| {
                    !asked
                        .iter()
                        .any(|(_, tool, args)| *tool == c.name && *args == c.args)
                })
                .map(|c| c.id.clone())
                .collect();
            tracing::info!(session = %self.info.id, run = run.0, "resuming a run interrupted by a stop");
            self.to_resume = Some(Resume {
                run,
                max_turns: open_max_turns,
                options,
                reason: if stopped {
                    ResumeReason::Restart
                } else {
                    ResumeReason::Crash
                },
                resumed: Resumed {
                    turns,
                    calls,
                    done,
                    started,
                    children,
                    usage,
                    children_usage,
                },
            });
            return;
        }
        let reason = if restarted {
            "the session restarted after an internal error during this run".to_string()
        } else if again {
            "the run was interrupted twice within a minute; it was not resumed again".to_string()
        } else if let Some(refused) = refused {
            format!(
                "the daemon stopped during this run, and it was not resumed: {}",
                refused.message
            )
        } else {
            "the daemon stopped during this run".to_string()
        };
        // Every tool call of the last reply gets its result: the ones that finished before the
        // stop, and "(interrupted: the daemon stopped)" for the rest.
        if let Some(HistoryMessage::Assistant(reply)) = self.history.last() {
            let calls: Vec<_> = reply.tool_calls().into_iter().cloned().collect();
            if !calls.is_empty() {
                let results = calls
                    .iter()
                    .map(
                        |call| match results_since_reply.iter().find(|r| r.0 == call.id) {
                            Some((id, name, is_error, output)) => ToolResult {
                                call_id: id.clone(),
                                name: name.clone(),
                                output: output.clone(),
                                is_error: *is_error,
                            },
                            None => {
                                let result = ToolResult {
                                    call_id: call.id.clone(),
                                    name: call.name.clone(),
                                    output: "(interrupted: the daemon stopped)".to_string(),
                                    is_error: true,
                                };
                                self.emit(Event::ToolResult {
                                    id: result.call_id.clone(),
                                    name: result.name.clone(),
                                    is_error: true,
                                    output: result.output.clone(),
                                    duration_ms: 0,
                                });
                                result
                            }
                        },
                    )
                    .collect();
                self.push_message(HistoryMessage::ToolResults { results });
            }
        }
        self.withdraw(asks, "the daemon restart");
        tracing::info!(session = %self.info.id, run = run.0, "closing a run interrupted by a stop");
        self.env.running.ended(&self.info.id.0, run.0);
        self.emit(Event::RunFinished {
            run,
            stop_reason: StopReason::Error,
            turns,
            truncated: false,
            usage: {
                let mut all = usage;
                all.add(&children_usage);
                all
            },
            // The queues are kept: the next message delivers them.
            returned_messages: Vec::new(),
            error: Some(reason),
            nothing_changed: false,
        });
        self.save_meta();
    }

    /// Answers permission requests the stop left open (denied, by `by`).
    fn withdraw(&mut self, asks: Vec<PermissionRequestId>, by: &str) {
        for request in asks {
            self.decided
                .insert(request, "the daemon restart".to_string());
            self.emit(Event::PermissionResolved {
                session: None,
                request,
                decision: Decision::Deny,
                by_client: by.to_string(),
            });
        }
    }

    /// `seq`s handed out to deltas of a reply cut short by a stop, and those reserved and never
    /// used, are recorded as a gap, and numbering goes on after them, so no `seq` a client saw
    /// is used twice.
    fn account_for_reserved(&mut self, open_deltas: Option<u64>, reserved: u64, explained: u64) {
        self.reserved_to = reserved;
        let stored = self.log.last_seq().max(explained);
        let to = reserved.max(stored);
        let from = open_deltas.unwrap_or(stored + 1);
        if from <= to && (open_deltas.is_some() || reserved > stored) {
            self.record(&Record::Gap { from, to });
            self.log.advance_to(to);
        }
    }
}
