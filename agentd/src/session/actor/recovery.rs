//! Rebuilding a session from its log, and closing a run that the daemon (or the session's
//! actor) did not live to finish: every tool call gets its result, open permission requests
//! are answered, and the run is finished as `error`.

use std::sync::Arc;

use protocol::{Decision, Delivery, Event, RunId, StopReason, TokenUsage};

use super::SessionActor;
use crate::history::{Message as HistoryMessage, ToolResult};
use crate::session::queue::Queues;
use crate::store::Record;

impl SessionActor {
    /// Rebuilds the session from its stored records and closes a run the daemon (or this
    /// actor) did not live to finish.
    pub(super) fn replay(&mut self, records: Vec<Record>, restarted: bool) {
        let mut open_run: Option<(RunId, u32)> = None;
        let mut asks = Vec::new();
        let mut results_since_reply: Vec<(String, String, bool, String)> = Vec::new();
        let (mut reserved, mut explained) = (0, 0);
        let mut open_deltas = None;
        for record in records {
            match record {
                Record::Header { .. } => {}
                Record::Reserved { to } => reserved = reserved.max(to),
                Record::Deltas { seq } => open_deltas = Some(seq),
                Record::Gap { to, .. } => {
                    explained = explained.max(to);
                    open_deltas = None;
                }
                Record::Message { message } => {
                    if matches!(message, HistoryMessage::Assistant(_)) {
                        self.info.turns += 1;
                    }
                    if matches!(message, HistoryMessage::ToolResults { .. }) {
                        results_since_reply.clear();
                    }
                    Arc::make_mut(&mut self.history).push(message);
                }
                Record::Rule { rule } => self.always.push(rule),
                Record::Compaction { summary, keep_last } => {
                    self.replace_history(summary, keep_last)
                }
                Record::Event {
                    seq,
                    time_ms,
                    event,
                } => {
                    match &event {
                        Event::RunStarted { run, .. } => {
                            self.runs = self.runs.max(run.0);
                            open_run = Some((*run, 0));
                        }
                        Event::AssistantMessage { .. } => {
                            if let Some((_, turns)) = &mut open_run {
                                *turns += 1;
                            }
                            results_since_reply.clear();
                            open_deltas = None;
                        }
                        Event::ToolResult {
                            id,
                            name,
                            is_error,
                            output,
                            ..
                        } => {
                            results_since_reply.push((
                                id.clone(),
                                name.clone(),
                                *is_error,
                                output.clone(),
                            ));
                        }
                        Event::RunFinished { .. } => open_run = None,
                        Event::ModeChanged { mode } => self.info.mode = *mode,
                        Event::QueueChanged { steer, follow_up } => {
                            self.queues = Queues::default();
                            for text in steer {
                                self.queues.push(text.clone(), Delivery::Steer);
                            }
                            for text in follow_up {
                                self.queues.push(text.clone(), Delivery::FollowUp);
                            }
                        }
                        Event::PermissionRequested { request, .. } => {
                            self.requests = self.requests.max(request.0);
                            asks.push(*request);
                        }
                        Event::PermissionResolved {
                            request, by_client, ..
                        } => {
                            asks.retain(|r| r != request);
                            self.decided.insert(*request, by_client.clone());
                        }
                        _ => {}
                    }
                    self.log.restore(seq, time_ms, event);
                }
            }
        }
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
