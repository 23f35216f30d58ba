//! Rebuilding a session from its log, record by record as it is read, and what to do with a run
//! that the daemon (or the session's actor) did not live to finish: resumed
//! (docs/architecture.md#the-agent-loop), or closed (every tool call gets its result, open
//! permission requests are answered, and the run is finished as `error`) when resuming is off, when
//! the actor itself failed, or when the run was already resumed less than a minute before.

use protocol::{
    Event, PermissionRequestId, ResumeReason, RunId, RunOptions, StopReason, TokenUsage,
};

use super::SessionActor;
use super::asks::Withdrawn;
use super::run_slot::Resume;
use crate::conversation::{Message as HistoryMessage, ToolCall, ToolResult};
use crate::session::queue::Queues;
use crate::session::run::Resumed;
use crate::store::Record;

/// A run interrupted twice within this time is not resumed again.
const AGAIN_WITHIN_MS: u64 = 60_000;

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
    results_since_reply: Vec<ToolResult>,
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
                    actor.shown.count_turn();
                }
                if matches!(message, HistoryMessage::ToolResults { .. }) {
                    self.results_since_reply.clear();
                }
                actor.history.push(message);
            }
            Record::Rule { rule } => actor.asks.restore_rule(rule),
            Record::Run { run, options } => {
                // A run started later without a client (a subagent's result) goes on with these.
                actor.runs.restore_options(options.clone());
                self.open_options = Some((run, options));
            }
            Record::Stopped { run } => {
                self.stopped = self.open_run.is_some_and(|(open, _)| open == run);
            }
            Record::Compaction { summary, keep_last } => {
                actor.history.compacted(summary, keep_last);
            }
            Record::Event {
                seq,
                time_ms,
                event,
            } => {
                match &event {
                    Event::RunStarted { run, max_turns, .. } => {
                        actor.runs.restore_count(*run);
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
                        images,
                        ..
                    } => {
                        self.results_since_reply.push(ToolResult {
                            call_id: id.clone(),
                            name: name.clone(),
                            is_error: *is_error,
                            output: output.clone(),
                            images: images.clone(),
                        });
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
                        let end = actor.end_of(&outcome, 0);
                        actor.family.restore_last_end(*run, end);
                    }
                    Event::ModeChanged { mode } => actor.shown.set_mode(*mode),
                    // A session stored before it took its title takes it now.
                    Event::UserMessage { text, .. } => {
                        self.titled |= actor.shown.take_title(text);
                    }
                    Event::ModelChanged { model } => actor.shown.set_model(model.clone()),
                    Event::QueueChanged { .. } => {
                        if let Some(queues) = Queues::from_event(&event) {
                            actor.queues = queues;
                        }
                    }
                    Event::PermissionRequested {
                        session: None,
                        request,
                        tool,
                        args,
                        ..
                    } => {
                        actor.asks.restore_request(*request);
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
                        actor.asks.restore_decided(*request, by_client.clone());
                    }
                    _ => {}
                }
                actor.shells.replay(&event, time_ms);
                actor.shown.fold(&event, time_ms);
                actor.durable.restore(seq, time_ms, event);
            }
        }
    }

    /// After the last record: accounts for `seq`s the log does not hold, and closes a run the
    /// daemon (or the actor) did not live to finish.
    pub(super) fn finish(self, actor: &mut SessionActor, restarted: bool) {
        if self.titled {
            actor.save_meta();
        }
        actor.lose_orphan_shells();
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
        self.durable
            .account_for_reserved(open_deltas, reserved, explained);
        if restarted {
            self.emit(Event::Error {
                message: "the session restarted after an internal error; its history was reloaded from disk".to_string(),
            });
        }
        // Loaded idle; a resumed run makes it running again.
        self.shown.set_state(protocol::SessionState::Idle);
        let session = self.shown.id().0.clone();
        let Some((run, turns)) = open_run else {
            // The run finished before its end reached the journal.
            self.env.running.forget(&session);
            return;
        };
        // Only a run the journal says was going when the last daemon stopped goes on: one its
        // log alone leaves open (its end never written, or from long ago) is closed.
        let interrupted = self.env.running.was_interrupted(&session, run.0);
        let resume = !restarted
            && interrupted
            && self
                .durable
                .meta()
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
            for denied in self.asks.deny_open(Withdrawn::AskedAgain, asks) {
                self.emit(denied);
            }
            let calls: Vec<ToolCall> = self.history.last_calls();
            let done = results_since_reply
                .into_iter()
                .filter(|result| calls.iter().any(|c| c.id == result.call_id))
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
            tracing::info!(%session, run = run.0, "resuming a run interrupted by a stop");
            self.runs.keep_for_resume(Resume {
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
        let calls = self.history.last_calls();
        if !calls.is_empty() {
            let results = calls
                .iter()
                .map(
                    |call| match results_since_reply.iter().find(|r| r.call_id == call.id) {
                        Some(result) => result.clone(),
                        None => {
                            let result = ToolResult {
                                call_id: call.id.clone(),
                                name: call.name.clone(),
                                output: "(interrupted: the daemon stopped)".to_string(),
                                is_error: true,
                                images: Vec::new(),
                            };
                            self.emit(Event::ToolResult {
                                id: result.call_id.clone(),
                                name: result.name.clone(),
                                is_error: true,
                                output: result.output.clone(),
                                duration_ms: 0,
                                images: Vec::new(),
                            });
                            result
                        }
                    },
                )
                .collect();
            self.push_message(HistoryMessage::ToolResults { results });
        }
        for denied in self.asks.deny_open(Withdrawn::Restart, asks) {
            self.emit(denied);
        }
        tracing::info!(%session, run = run.0, "closing a run interrupted by a stop");
        self.env.running.ended(&session, run.0);
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
}
