//! Rebuilding a session from its log, record by record as it is read, and closing a run that
//! the daemon (or the session's actor) did not live to finish: every tool call gets its
//! result, open permission requests are answered, and the run is finished as `error`.

use std::sync::Arc;

use protocol::{Decision, Delivery, Event, PermissionRequestId, RunId, StopReason, TokenUsage};

use super::SessionActor;
use crate::conversation::{Message as HistoryMessage, ToolResult};
use crate::session::queue::Queues;
use crate::store::Record;

/// What replaying a log keeps between records, for closing what a stop interrupted.
#[derive(Default)]
pub(super) struct Replayer {
    open_run: Option<(RunId, u32)>,
    asks: Vec<PermissionRequestId>,
    results_since_reply: Vec<(String, String, bool, String)>,
    reserved: u64,
    explained: u64,
    open_deltas: Option<u64>,
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
            Record::Compaction { summary, keep_last } => actor.replace_history(summary, keep_last),
            Record::Event {
                seq,
                time_ms,
                event,
            } => {
                match &event {
                    Event::RunStarted { run, .. } => {
                        actor.runs = actor.runs.max(run.0);
                        self.open_run = Some((*run, 0));
                    }
                    Event::AssistantMessage { .. } => {
                        if let Some((_, turns)) = &mut self.open_run {
                            *turns += 1;
                        }
                        self.results_since_reply.clear();
                        self.open_deltas = None;
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
                    Event::RunFinished { .. } => self.open_run = None,
                    Event::ModeChanged { mode } => actor.info.mode = *mode,
                    Event::QueueChanged { steer, follow_up } => {
                        actor.queues = Queues::default();
                        for text in steer {
                            actor.queues.push(text.clone(), Delivery::Steer);
                        }
                        for text in follow_up {
                            actor.queues.push(text.clone(), Delivery::FollowUp);
                        }
                    }
                    Event::PermissionRequested { request, .. } => {
                        actor.requests = actor.requests.max(request.0);
                        self.asks.push(*request);
                    }
                    Event::PermissionResolved {
                        request, by_client, ..
                    } => {
                        self.asks.retain(|r| r != request);
                        actor.decided.insert(*request, by_client.clone());
                    }
                    _ => {}
                }
                actor.log.restore(seq, time_ms, event);
            }
        }
    }

    /// After the last record: accounts for `seq`s the log does not hold, and closes a run the
    /// daemon (or the actor) did not live to finish.
    pub(super) fn finish(self, actor: &mut SessionActor, restarted: bool) {
        actor.close_interrupted(self, restarted);
    }
}

impl SessionActor {
    /// Closes what a stop interrupted: every tool call of the last reply gets its result, open
    /// permission requests are answered, and the run is finished as `error`.
    fn close_interrupted(&mut self, replayed: Replayer, restarted: bool) {
        let Replayer {
            open_run,
            asks,
            results_since_reply,
            reserved,
            explained,
            open_deltas,
        } = replayed;
        self.account_for_reserved(open_deltas, reserved, explained);
        if restarted {
            self.emit(Event::Error {
                message: "the session restarted after an internal error; its history was reloaded from disk".to_string(),
            });
        }
        let Some((run, turns)) = open_run else { return };
        let reason = if restarted {
            "the session restarted after an internal error during this run"
        } else {
            "the daemon stopped during this run"
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
        for request in asks {
            self.decided
                .insert(request, "the daemon restart".to_string());
            self.emit(Event::PermissionResolved {
                request,
                decision: Decision::Deny,
                by_client: "the daemon restart".to_string(),
            });
        }
        tracing::info!(session = %self.info.id, run = run.0, "closing a run interrupted by a stop");
        self.emit(Event::RunFinished {
            run,
            stop_reason: StopReason::Error,
            turns,
            truncated: false,
            usage: TokenUsage::default(),
            // The queues are kept: the next message delivers them.
            returned_messages: Vec::new(),
            error: Some(reason.to_string()),
        });
        self.save_meta();
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
