//! Forking a session: a new session whose log is a copy of another's up to a turn. The cut
//! never separates a tool call from its result, and whatever the copy leaves open (a run,
//! permission requests, queued messages) is closed in the copy, so it loads like any session.

use std::io::{BufWriter, Write};
use std::path::Path;

use protocol::{Decision, Event, PermissionRequestId, RunId, StopReason, TokenUsage};

use super::{ENV, FORMAT_VERSION, LOG, Meta, Record, StoreError, at, read_log, write_meta};
use crate::conversation::Message;

/// Who closes what the fork left open, as the copy's events say.
const BY_FORK: &str = "the fork";

/// Where a fork cuts a log.
#[derive(Debug, Default)]
struct Cut {
    /// Records kept, counted from the first.
    keep: usize,
    /// Turns (model replies) in the kept part.
    turns: u64,
}

/// Finds the cut after turn `turn` (the last point where every tool call has its result, when
/// `None`). Fails when the log has fewer turns.
fn find_cut(log: &Path, turn: Option<u64>) -> Result<Cut, String> {
    let (mut index, mut turns, mut open_calls) = (0usize, 0u64, false);
    let mut cut: Option<Cut> = None;
    // After the cut's record at turn `n`, the events that finish the same turn are kept with
    // it. (Cutting the whole log, every record that leaves no call open moves the cut.)
    let mut trailing = false;
    read_log(log, |record| {
        index += 1;
        if trailing {
            let finishes_turn = matches!(
                &record,
                Record::Event {
                    event: Event::AssistantMessage { .. }
                        | Event::Usage { .. }
                        | Event::RunFinished { .. },
                    ..
                }
            );
            if finishes_turn {
                if let Some(cut) = &mut cut {
                    cut.keep = index;
                }
                return;
            }
            trailing = false;
        }
        if turn.is_some() && cut.is_some() {
            return;
        }
        let closes_turn = match &record {
            Record::Message {
                message: Message::Assistant(reply),
            } => {
                turns += 1;
                open_calls = !reply.tool_calls().is_empty();
                !open_calls
            }
            Record::Message {
                message: Message::ToolResults { .. },
            } => {
                open_calls = false;
                true
            }
            _ => false,
        };
        match turn {
            Some(n) if closes_turn && turns == n => {
                cut = Some(Cut { keep: index, turns });
                trailing = true;
            }
            Some(_) => {}
            // The whole log: every record up to the last one that leaves no call open.
            None if !open_calls => cut = Some(Cut { keep: index, turns }),
            None => {}
        }
    })
    .map_err(|e| e.to_string())?;
    match (cut, turn) {
        (Some(cut), _) => Ok(cut),
        (None, Some(n)) => Err(format!(
            "the session has {turns} turns; there is no turn {n}"
        )),
        (None, None) => Ok(Cut::default()),
    }
}

/// What the kept part of the log leaves open, to be closed in the copy.
#[derive(Default)]
struct Open {
    run: Option<(RunId, u32)>,
    asks: Vec<PermissionRequestId>,
    queued: bool,
    last_seq: u64,
    /// How far the plan got at the cut, for the copy's board.
    plan: Option<protocol::PlanCount>,
    /// Background shells started and not ended at the cut: they run for the original only.
    shells: std::collections::BTreeSet<u32>,
}

impl Open {
    fn see(&mut self, event: &Event, seq: u64) {
        self.last_seq = seq;
        match event {
            Event::RunStarted { run, .. } => self.run = Some((*run, 0)),
            Event::AssistantMessage { .. } => {
                if let Some((_, turns)) = &mut self.run {
                    *turns += 1;
                }
            }
            Event::RunFinished { .. } => self.run = None,
            Event::PermissionRequested {
                session: None,
                request,
                ..
            } => self.asks.push(*request),
            Event::PermissionResolved {
                session: None,
                request,
                ..
            } => self.asks.retain(|r| r != request),
            Event::QueueChanged {
                steer, follow_up, ..
            } => self.queued = !steer.is_empty() || !follow_up.is_empty(),
            Event::PlanUpdated { items } => self.plan = protocol::PlanCount::of(items),
            Event::ShellStarted { shell, .. } => {
                self.shells.insert(*shell);
            }
            Event::ShellEnded { shell, .. } => {
                self.shells.remove(shell);
            }
            _ => {}
        }
    }

    /// The events that close what is open, numbered after the copy's last.
    fn closing(mut self, from: &str) -> Vec<Record> {
        let mut events = Vec::new();
        for request in self.asks {
            events.push(Event::PermissionResolved {
                session: None,
                request,
                decision: Decision::Deny,
                by_client: BY_FORK.to_string(),
            });
        }
        for shell in std::mem::take(&mut self.shells) {
            events.push(Event::ShellEnded {
                shell,
                end: protocol::ShellEnd::Lost,
            });
        }
        if self.queued {
            events.push(Event::QueueChanged {
                steer: Vec::new(),
                follow_up: Vec::new(),
                steer_images: Vec::new(),
                follow_up_images: Vec::new(),
            });
        }
        if let Some((run, turns)) = self.run {
            events.push(Event::RunFinished {
                run,
                stop_reason: StopReason::Aborted,
                turns,
                truncated: false,
                usage: TokenUsage::default(),
                returned_messages: Vec::new(),
                nothing_changed: false,
                error: Some(format!("the fork of session {from} ends here")),
            });
        }
        let time_ms = crate::now_ms();
        events
            .into_iter()
            .zip(self.last_seq + 1..)
            .map(|(event, seq)| Record::Event {
                seq,
                time_ms,
                event,
            })
            .collect()
    }
}

/// Writes session `meta` (a new id) in `sessions_dir` as a copy of the session `from_id` in
/// `from` up to turn `turn`. Returns the turns copied. The new session is listed only once whole: its
/// `meta.json` is written last.
pub(crate) fn fork(
    from: &Path,
    from_id: &str,
    sessions_dir: &Path,
    meta: &mut Meta,
    turn: Option<u64>,
    sync: bool,
) -> Result<u64, String> {
    let source_log = from.join(LOG);
    let cut = find_cut(&source_log, turn)?;
    let dir = sessions_dir.join(&meta.id);
    let io = |e: StoreError| e.to_string();
    std::fs::create_dir_all(&dir).map_err(|e| io(at(&dir)(e)))?;
    if let Ok(env) = std::fs::read(from.join(ENV)) {
        std::fs::write(dir.join(ENV), env).map_err(|e| io(at(&dir.join(ENV))(e)))?;
    }
    let log = dir.join(LOG);
    let file = std::fs::File::create(&log).map_err(|e| io(at(&log)(e)))?;
    let mut out = BufWriter::new(file);
    let mut failure: Option<std::io::Error> = None;
    let mut write = |out: &mut BufWriter<std::fs::File>, record: &Record| {
        if failure.is_none() {
            let line = serde_json::to_vec(record).map_err(std::io::Error::from);
            if let Err(err) =
                line.and_then(|l| out.write_all(&l).and_then(|()| out.write_all(b"\n")))
            {
                failure = Some(err);
            }
        }
    };
    write(
        &mut out,
        &Record::Header {
            version: FORMAT_VERSION,
            session: meta.id.clone(),
        },
    );
    let (mut index, mut open) = (0usize, Open::default());
    read_log(&source_log, |record| {
        index += 1;
        if index > cut.keep {
            return;
        }
        match &record {
            // Numbers reserved for deltas after the cut are not the copy's.
            Record::Header { .. } | Record::Reserved { .. } => return,
            Record::Event { seq, event, .. } => open.see(event, *seq),
            _ => {}
        }
        write(&mut out, &record);
    })
    .map_err(|e| e.to_string())?;
    meta.plan = open.plan;
    for record in open.closing(from_id) {
        write(&mut out, &record);
    }
    if let Some(err) = failure {
        return Err(io(at(&log)(err)));
    }
    let file = out.into_inner().map_err(|e| io(at(&log)(e.into_error())))?;
    if sync {
        file.sync_all().map_err(|e| io(at(&log)(e)))?;
    }
    super::fork_images::copy_images(from, &dir, sync)?;
    meta.turns = cut.turns;
    write_meta(&dir, meta, sync).map_err(io)?;
    if sync {
        super::sync_dir(sessions_dir).map_err(io)?;
    }
    Ok(cut.turns)
}

#[cfg(test)]
mod tests {
    use protocol::{Delivery, ModelStopReason, TokenUsage};

    use super::*;
    use crate::conversation::{AssistantReply, Block, ToolCall, ToolResult};
    use crate::store::SessionStore;

    fn reply(call: Option<&str>) -> Record {
        let content = match call {
            Some(id) => vec![Block::ToolCall(ToolCall {
                id: id.into(),
                name: "read".into(),
                args: "{}".into(),
            })],
            None => vec![Block::Text { text: "ok".into() }],
        };
        Record::Message {
            message: Message::Assistant(AssistantReply {
                content,
                stop_reason: ModelStopReason::EndTurn,
                usage: TokenUsage::default(),
            }),
        }
    }

    fn results(id: &str) -> Record {
        Record::Message {
            message: Message::ToolResults {
                results: vec![ToolResult {
                    call_id: id.into(),
                    name: "read".into(),
                    output: "x".into(),
                    is_error: false,
                    images: Vec::new(),
                }],
            },
        }
    }

    fn event(seq: u64, event: Event) -> Record {
        Record::Event {
            seq,
            time_ms: 1,
            event,
        }
    }

    /// A session whose second run is cut off after a reply that asked for a tool.
    fn source(dir: &Path) -> std::path::PathBuf {
        let meta = crate::store::tests::meta("src");
        SessionStore::create(dir, &meta, &[], false).unwrap();
        let mut store = SessionStore::open(&dir.join("src")).unwrap();
        let user = |text: &str| Record::Message {
            message: Message::User {
                text: text.into(),
                delivery: Delivery::FollowUp,
                images: Vec::new(),
            },
        };
        let started = |run| Event::RunStarted {
            run: RunId(run),
            trigger: Delivery::FollowUp,
            max_turns: 0,
            model: String::new(),
            provider: String::new(),
        };
        for record in [
            event(1, started(1)),
            user("one"),
            reply(Some("c1")),
            results("c1"),
            reply(None),
            event(
                2,
                Event::Usage {
                    turn: TokenUsage::default(),
                    cumulative: TokenUsage::default(),
                    cost_micros: None,
                },
            ),
            event(
                3,
                Event::RunFinished {
                    run: RunId(1),
                    stop_reason: StopReason::Completed,
                    turns: 2,
                    truncated: false,
                    usage: TokenUsage::default(),
                    returned_messages: Vec::new(),
                    nothing_changed: false,
                    error: None,
                },
            ),
            event(4, started(2)),
            user("two"),
            reply(Some("c2")),
            event(
                5,
                Event::AssistantMessage {
                    turn: 1,
                    text: String::new(),
                    thinking: String::new(),
                    tool_calls: Vec::new(),
                    stop_reason: ModelStopReason::ToolUse,
                    folds: None,
                },
            ),
            Record::Reserved { to: 90 },
        ] {
            store.append(&record).unwrap();
        }
        dir.join("src")
    }

    fn copied(dir: &Path, id: &str) -> Vec<Record> {
        let mut records = Vec::new();
        read_log(&dir.join(id).join(LOG), |r| records.push(r)).unwrap();
        records
    }

    #[test]
    fn a_fork_at_a_turn_with_a_call_keeps_its_result() {
        let dir = tempfile::tempdir().unwrap();
        let from = source(dir.path());
        let mut meta = crate::store::tests::meta("f1");
        assert_eq!(
            fork(&from, "src", dir.path(), &mut meta, Some(1), false).unwrap(),
            1
        );
        let records = copied(dir.path(), "f1");
        assert!(
            matches!(
                records.last(),
                Some(Record::Event {
                    event: Event::RunFinished {
                        run: RunId(1),
                        stop_reason: StopReason::Aborted,
                        ..
                    },
                    ..
                })
            ),
            "{records:?}"
        );
        assert!(records.iter().any(|r| *r == results("c1")));
        assert!(!records.iter().any(|r| *r == reply(None)));
        assert_eq!(meta.turns, 1);
    }

    #[test]
    fn a_whole_fork_stops_before_a_call_without_its_result() {
        let dir = tempfile::tempdir().unwrap();
        let from = source(dir.path());
        let mut meta = crate::store::tests::meta("f2");
        assert_eq!(
            fork(&from, "src", dir.path(), &mut meta, None, false).unwrap(),
            2
        );
        let records = copied(dir.path(), "f2");
        assert!(
            !records.iter().any(|r| *r == reply(Some("c2"))),
            "{records:?}"
        );
        assert!(!records.iter().any(|r| matches!(r, Record::Reserved { .. })));
        // The user message of the cut-off run is kept, and that run closed after it.
        let last = records.iter().rev().find_map(|r| match r {
            Record::Event {
                seq,
                event: Event::RunFinished { run, .. },
                ..
            } => Some((*seq, *run)),
            _ => None,
        });
        assert_eq!(last, Some((5, RunId(2))));
        assert!(
            fork(&from, "src", dir.path(), &mut meta, Some(3), false)
                .unwrap_err()
                .contains("there is no turn 3")
        );
    }
}
