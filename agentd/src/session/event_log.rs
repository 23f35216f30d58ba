//! A session's numbered events and their fan-out to subscribers.
//!
//! Every event gets the next `seq`. Events are stored before they are sent; those that end a
//! unit of work wait here, numbered, until the store has synced them ([`EventLog::hold`]), and
//! everything numbered after them waits too, so clients see events in order and never one the
//! disk could lose. Only the most recent published events stay in memory (a bounded window);
//! older ones are replayed from the log on disk. Text and thinking deltas are never stored:
//! the assistant message that completes them names their `seq` range.
//!
//! Subscribers receive live events through bounded channels filled with `try_send`, so a slow
//! client never holds up the session: when a subscriber's channel is full it is dropped, and
//! its connection, seeing the channel end, tells the client to subscribe again.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use protocol::{Event, SessionEvent, SessionId};
use tokio::sync::mpsc;

use crate::{ConnectionId, now_ms};

/// How many live events may wait for one subscriber before it counts as lagging.
pub(crate) const LIVE_QUEUE: usize = 1024;
/// Recent events kept in memory, at most.
pub(crate) const RECENT_EVENTS: usize = 512;
/// Bytes (roughly) of recent events kept in memory, at most.
pub(crate) const RECENT_BYTES: usize = 1 << 20;

/// How an event reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Never stored on its own: the assistant message that completes it is (text and thinking
    /// deltas).
    Folded,
    /// Stored before it is sent.
    Stored,
    /// Stored and synced before it is sent: it ends a unit of work.
    Synced,
}

impl Durability {
    /// How `event` is kept.
    pub(crate) fn of(event: &Event) -> Durability {
        match event {
            Event::TextDelta { .. } | Event::ThinkingDelta { .. } | Event::ToolOutput { .. } => {
                Durability::Folded
            }
            Event::AssistantMessage { .. }
            | Event::ToolResult { .. }
            | Event::PermissionResolved { .. }
            | Event::RunStarted { .. }
            | Event::RunFinished { .. }
            | Event::Compacted { .. }
            | Event::ModeChanged { .. }
            | Event::ModelChanged { .. } => Durability::Synced,
            _ => Durability::Stored,
        }
    }
}

/// The receiving side of a subscription: events to replay, then live ones.
pub(crate) struct Subscription {
    /// Events to read from the log on disk first, if the window does not reach back far
    /// enough.
    pub(crate) disk: Option<crate::store::DiskReplay>,
    /// Events of the in-memory window after the requested `seq`, in order.
    pub(crate) replay: Vec<SessionEvent>,
    /// Live events; every one has a `seq` above the last replayed one.
    pub(crate) live: mpsc::Receiver<SessionEvent>,
    /// The last `seq` sent to subscribers when the subscription began: replayed events are at
    /// or below it, live ones above.
    pub(crate) through_seq: u64,
    /// Set when the client ended the subscription itself.
    pub(crate) unsubscribed: Arc<AtomicBool>,
}

struct Subscriber {
    conn: ConnectionId,
    tx: mpsc::Sender<SessionEvent>,
    unsubscribed: Arc<AtomicBool>,
}

/// A session's events: numbering, the wait for the disk, the recent window, subscribers.
pub(crate) struct EventLog {
    session: SessionId,
    recent: VecDeque<SessionEvent>,
    recent_bytes: usize,
    pending: Vec<SessionEvent>,
    last_seq: u64,
    published_seq: u64,
    last_time_ms: u64,
    deltas_from: Option<u64>,
    /// Deltas of a reply that was given up (a broken stream retried, a run that ended).
    abandoned: Option<(u64, u64)>,
    /// The first `seq` of the running tool's output pieces.
    output_from: Option<u64>,
    /// The pieces of a tool's output whose result (or the run's end) was just numbered.
    output_done: Option<(u64, u64)>,
    subscribers: Vec<Subscriber>,
    live_capacity: usize,
}

impl EventLog {
    /// An empty log for `session`.
    pub(crate) fn new(session: SessionId) -> Self {
        Self::with_capacity(session, LIVE_QUEUE)
    }

    /// An empty log whose subscribers lag after `live_capacity` unread events.
    pub(crate) fn with_capacity(session: SessionId, live_capacity: usize) -> Self {
        EventLog {
            session,
            recent: VecDeque::new(),
            recent_bytes: 0,
            pending: Vec::new(),
            last_seq: 0,
            published_seq: 0,
            last_time_ms: 0,
            deltas_from: None,
            abandoned: None,
            output_from: None,
            output_done: None,
            subscribers: Vec::new(),
            live_capacity,
        }
    }

    /// The `seq` of the newest event (0 when empty).
    pub(crate) fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// When the newest event happened, milliseconds since the epoch (0 when empty).
    pub(crate) fn last_time_ms(&self) -> u64 {
        self.last_time_ms
    }

    /// Numbers `event` (the next `seq`, the time now) without sending it yet, so that it can
    /// be stored first. An assistant message is told the range of deltas it completes.
    pub(crate) fn number(&mut self, mut event: Event) -> SessionEvent {
        self.last_seq += 1;
        self.last_time_ms = now_ms();
        match &mut event {
            Event::TextDelta { .. } | Event::ThinkingDelta { .. } => {
                self.deltas_from.get_or_insert(self.last_seq);
            }
            Event::AssistantMessage { folds, .. } => {
                *folds = self
                    .deltas_from
                    .take()
                    .map(|from| (from, self.last_seq - 1));
            }
            Event::Retrying { .. } | Event::RunFinished { .. } => {
                self.abandoned = self
                    .deltas_from
                    .take()
                    .map(|from| (from, self.last_seq - 1));
            }
            Event::ToolOutput { .. } => {
                self.output_from.get_or_insert(self.last_seq);
            }
            _ => {}
        }
        if matches!(event, Event::ToolResult { .. } | Event::RunFinished { .. }) {
            self.output_done = self
                .output_from
                .take()
                .map(|from| (from, self.last_seq - 1));
        }
        SessionEvent {
            session: self.session.clone(),
            seq: self.last_seq,
            time_ms: self.last_time_ms,
            event,
        }
    }

    /// The `seq` of the first delta of the reply streaming now, if one is.
    pub(crate) fn deltas_from(&self) -> Option<u64> {
        self.deltas_from
    }

    /// The `seq`s of deltas whose reply was given up by the event just numbered, if any: no
    /// assistant message will fold them.
    pub(crate) fn take_abandoned(&mut self) -> Option<(u64, u64)> {
        self.abandoned.take()
    }

    /// The `seq`s of a tool's output pieces that the event just numbered (its result) ends:
    /// they are not stored, and the result holds their text.
    pub(crate) fn take_tool_output(&mut self) -> Option<(u64, u64)> {
        self.output_done.take()
    }

    /// Sends a numbered (and stored) event, unless events before it still wait for the disk:
    /// then it waits behind them.
    pub(crate) fn publish(&mut self, event: SessionEvent) {
        if self.pending.is_empty() {
            self.send(event);
        } else {
            self.pending.push(event);
        }
    }

    /// Keeps a numbered event until the disk has synced it; returns whether it is the first
    /// to wait (the caller then arranges a sync).
    pub(crate) fn hold(&mut self, event: SessionEvent) -> bool {
        self.pending.push(event);
        self.pending.len() == 1
    }

    /// Sends every event that waited for the disk, in order.
    pub(crate) fn release(&mut self) {
        for event in std::mem::take(&mut self.pending) {
            self.send(event);
        }
    }

    fn send(&mut self, event: SessionEvent) {
        self.subscribers
            .retain(|sub| match sub.tx.try_send(event.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::debug!(conn = sub.conn.0, seq = event.seq, "subscriber lagged");
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
        self.published_seq = event.seq;
        let completes_reply = matches!(
            event.event,
            Event::AssistantMessage { .. } | Event::ToolResult { .. }
        );
        self.remember(event);
        if completes_reply {
            self.fold_deltas();
        }
    }

    /// Adds a sent (or restored) event to the recent window, dropping the oldest beyond its
    /// bounds; they stay on disk.
    fn remember(&mut self, event: SessionEvent) {
        self.recent_bytes += approximate_size(&event.event);
        self.recent.push_back(event);
        while self.recent.len() > RECENT_EVENTS
            || (self.recent_bytes > RECENT_BYTES && self.recent.len() > 1)
        {
            if let Some(old) = self.recent.pop_front() {
                self.recent_bytes = self
                    .recent_bytes
                    .saturating_sub(approximate_size(&old.event));
            }
        }
    }

    /// Takes back an event read from the session's store: numbering goes on after it, and the
    /// newest ones form the recent window.
    pub(crate) fn restore(&mut self, seq: u64, time_ms: u64, event: Event) {
        self.last_seq = self.last_seq.max(seq);
        self.published_seq = self.published_seq.max(seq);
        self.last_time_ms = self.last_time_ms.max(time_ms);
        self.remember(SessionEvent {
            session: self.session.clone(),
            seq,
            time_ms,
            event,
        });
    }

    /// Moves numbering on to `seq` (seqs that were handed out and not stored: see the store's
    /// reservations).
    pub(crate) fn advance_to(&mut self, seq: u64) {
        self.last_seq = self.last_seq.max(seq);
        self.published_seq = self.published_seq.max(seq);
    }

    /// Events of the recent window with `seq > from_seq`, in order.
    pub(crate) fn recent_after(&self, from_seq: u64) -> Vec<SessionEvent> {
        let start = self.recent.partition_point(|e| e.seq <= from_seq);
        self.recent.iter().skip(start).cloned().collect()
    }

    /// The `seq` before which events must come from the disk: the oldest of the window, or
    /// the next to be sent when the window is empty.
    pub(crate) fn window_start(&self) -> u64 {
        self.recent
            .front()
            .map_or(self.published_seq + 1, |event| event.seq)
    }

    /// Subscribes `conn` after `from_seq`: the replay (from `disk`, when given, then the window)
    /// and the live channel meet without a gap or a duplicate. A connection holds at most one
    /// subscription per session.
    pub(crate) fn subscribe(
        &mut self,
        conn: ConnectionId,
        from_seq: u64,
        disk: Option<crate::store::DiskReplay>,
    ) -> Subscription {
        self.unsubscribe(conn);
        let (tx, live) = mpsc::channel(self.live_capacity);
        let unsubscribed = Arc::new(AtomicBool::new(false));
        self.subscribers.push(Subscriber {
            conn,
            tx,
            unsubscribed: unsubscribed.clone(),
        });
        Subscription {
            disk,
            replay: self.recent_after(from_seq),
            live,
            through_seq: self.published_seq,
            unsubscribed,
        }
    }

    /// Ends `conn`'s subscription, if any.
    pub(crate) fn unsubscribe(&mut self, conn: ConnectionId) {
        self.subscribers.retain(|sub| {
            let ended = sub.conn == conn;
            if ended {
                sub.unsubscribed.store(true, Ordering::Release);
            }
            !ended
        });
    }

    /// Ends every subscription; their receivers see the channel close.
    pub(crate) fn close_all(&mut self) {
        self.subscribers.clear();
    }

    /// Connections subscribed now (those whose receivers are still open).
    pub(crate) fn subscriber_count(&self) -> usize {
        self.subscribers
            .iter()
            .filter(|s| !s.tx.is_closed())
            .count()
    }

    /// Drops the text and thinking deltas from the window once a reply is complete: its
    /// `AssistantMessage` carries the whole text, so replay does not need the pieces.
    fn fold_deltas(&mut self) {
        let newest = self.published_seq;
        let before = self.recent.len();
        self.recent.retain(|e| {
            e.seq == newest
                || !matches!(
                    e.event,
                    Event::TextDelta { .. }
                        | Event::ThinkingDelta { .. }
                        | Event::ToolOutput { .. }
                )
        });
        if self.recent.len() != before {
            self.recent_bytes = self.recent.iter().map(|e| approximate_size(&e.event)).sum();
        }
    }
}

/// Roughly the bytes an event holds: its texts and a little for the rest.
pub(crate) fn approximate_size(event: &Event) -> usize {
    let text = match event {
        Event::TextDelta { text } | Event::ThinkingDelta { text } => text.len(),
        Event::ToolOutput { text, .. } => text.len(),
        Event::UserMessage { text, .. } => text.len(),
        Event::AssistantMessage {
            text,
            thinking,
            tool_calls,
            ..
        } => text.len() + thinking.len() + tool_calls.iter().map(|c| c.args.len()).sum::<usize>(),
        Event::ToolCall(call) => call.args.len(),
        Event::ToolResult { output, .. } => output.len(),
        Event::PermissionRequested { args, summary, .. } => args.len() + summary.len(),
        Event::Error { message } => message.len(),
        _ => 0,
    };
    text + 64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_event() -> Event {
        Event::ModeChanged {
            mode: protocol::Mode::Plan,
        }
    }

    fn emit(log: &mut EventLog, event: Event) {
        let event = log.number(event);
        log.publish(event);
    }

    #[test]
    fn replay_and_live_meet_without_gap_or_duplicate() {
        let mut log = EventLog::new(SessionId("s".into()));
        emit(&mut log, mode_event());
        emit(&mut log, mode_event());
        let mut sub = log.subscribe(ConnectionId(1), 1, None);
        emit(&mut log, mode_event());
        let replayed: Vec<u64> = sub.replay.iter().map(|e| e.seq).collect();
        assert_eq!(replayed, vec![2]);
        assert_eq!(sub.live.try_recv().unwrap().seq, 3);
        assert!(sub.live.try_recv().is_err());
    }

    #[test]
    fn a_full_subscriber_is_dropped() {
        let mut log = EventLog::with_capacity(SessionId("s".into()), 2);
        let mut sub = log.subscribe(ConnectionId(1), 0, None);
        for _ in 0..3 {
            emit(&mut log, mode_event());
        }
        assert_eq!(log.subscriber_count(), 0);
        // What fitted is delivered, then the channel ends: the connection tells the client it
        // lagged.
        assert!(sub.live.try_recv().is_ok());
        assert!(sub.live.try_recv().is_ok());
        assert_eq!(
            sub.live.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        );
    }

    #[test]
    fn an_assistant_message_names_the_deltas_it_folds() {
        let mut log = EventLog::new(SessionId("s".into()));
        emit(&mut log, Event::TextDelta { text: "a".into() });
        emit(&mut log, Event::TextDelta { text: "b".into() });
        emit(
            &mut log,
            Event::AssistantMessage {
                turn: 1,
                text: "ab".into(),
                thinking: String::new(),
                tool_calls: vec![],
                stop_reason: protocol::ModelStopReason::EndTurn,
                folds: None,
            },
        );
        let recent = log.recent_after(0);
        assert_eq!(recent.len(), 1);
        assert!(matches!(
            recent[0].event,
            Event::AssistantMessage {
                folds: Some((1, 2)),
                ..
            }
        ));
    }

    #[test]
    fn events_after_a_held_one_wait_for_it() {
        let mut log = EventLog::new(SessionId("s".into()));
        let mut sub = log.subscribe(ConnectionId(1), 0, None);
        let first = log.number(mode_event());
        assert!(log.hold(first));
        emit(&mut log, Event::TextDelta { text: "x".into() });
        assert!(sub.live.try_recv().is_err(), "nothing passes a held event");
        log.release();
        assert_eq!(sub.live.try_recv().unwrap().seq, 1);
        assert_eq!(sub.live.try_recv().unwrap().seq, 2);
    }

    #[test]
    fn the_window_is_bounded() {
        let mut log = EventLog::new(SessionId("s".into()));
        for _ in 0..(RECENT_EVENTS * 3) {
            emit(
                &mut log,
                Event::Error {
                    message: "x".repeat(10_000),
                },
            );
        }
        let recent = log.recent_after(0);
        assert!(recent.len() <= RECENT_EVENTS);
        assert!(recent.len() * 10_000 <= RECENT_BYTES + 10_064);
        assert_eq!(log.window_start(), recent[0].seq);
    }
}
