//! Forking a session: a new session whose log is a copy of another's up to a turn. The cut
//! never separates a tool call from its result, and whatever the copy leaves open (a run,
//! permission requests, queued messages) is closed in the copy, so it loads like any session.

use std::io::{BufWriter, Write};
use std::path::Path;

use protocol::{Decision, Event, PermissionRequestId, RunId, StopReason, TokenUsage};

use super::{ENV, FORMAT_VERSION, LOG, Meta, Record, StoreError, at, read_log, write_meta};
use crate::history::Message;

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
    // After the cut's record, the events that finish the same turn are kept with it.
    let mut trailing = false;
    read_log(log, |record| {
        index += 1;
        if trailing {
            match &record {
                Record::Event { event, .. }
                    if matches!(
                        event,
                        Event::AssistantMessage { .. }
                            | Event::Usage { .. }
                            | Event::RunFinished { .. }
                    ) =>
                {
                    if let Some(cut) = &mut cut {
                        cut.keep = index;
                    }
                    return;
                }
                _ => trailing = turn.is_none(),
            }
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
            None if !open_calls => {
                cut = Some(Cut { keep: index, turns });
                trailing = closes_turn;
            }
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
            Event::PermissionRequested { request, .. } => self.asks.push(*request),
            Event::PermissionResolved { request, .. } => self.asks.retain(|r| r != request),
            Event::QueueChanged { steer, follow_up } => {
                self.queued = !steer.is_empty() || !follow_up.is_empty()
            }
            _ => {}
        }
    }

    /// The events that close what is open, numbered after the copy's last.
    fn closing(self, from: &str) -> Vec<Record> {
        let mut events = Vec::new();
        for request in self.asks {
            events.push(Event::PermissionResolved {
                request,
                decision: Decision::Deny,
                by_client: BY_FORK.to_string(),
            });
        }
        if self.queued {
            events.push(Event::QueueChanged {
                steer: Vec::new(),
                follow_up: Vec::new(),
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
pub fn fork(
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
    meta.turns = cut.turns;
    write_meta(&dir, meta, sync).map_err(io)?;
    if sync {
        super::sync_dir(sessions_dir).map_err(io)?;
    }
    Ok(cut.turns)
}
