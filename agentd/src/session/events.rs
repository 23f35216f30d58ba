//! A session's numbered event log and the fan-out of new events to subscribers.
//!
//! Every event gets the next `seq`. Subscribers receive live events through bounded channels
//! filled with `try_send`, so a slow client never holds up the session: when a subscriber's
//! channel is full it is dropped and flagged as lagged, and its connection tells the client to
//! subscribe again from the last `seq` it received.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use protocol::{Event, SessionEvent, SessionId};
use tokio::sync::mpsc;

use crate::{ConnectionId, now_ms};

/// How many live events may wait for one subscriber before it counts as lagging.
pub const LIVE_QUEUE: usize = 1024;

/// The receiving side of a subscription: events to replay, then live ones.
pub struct Subscription {
    /// Held events after the requested `seq`, in order.
    pub replay: Vec<SessionEvent>,
    /// Live events; every one has a `seq` above the last replayed one.
    pub live: mpsc::Receiver<SessionEvent>,
    /// Set when the subscription was dropped because `live` overflowed.
    pub lagged: Arc<AtomicBool>,
}

struct Subscriber {
    conn: ConnectionId,
    tx: mpsc::Sender<SessionEvent>,
    lagged: Arc<AtomicBool>,
}

/// The events a session holds, with their subscribers.
pub struct EventLog {
    session: SessionId,
    events: Vec<SessionEvent>,
    last_seq: u64,
    last_time_ms: u64,
    subscribers: Vec<Subscriber>,
    live_capacity: usize,
}

impl EventLog {
    /// An empty log for `session`.
    pub fn new(session: SessionId) -> Self {
        Self::with_capacity(session, LIVE_QUEUE)
    }

    /// An empty log whose subscribers lag after `live_capacity` unread events.
    pub fn with_capacity(session: SessionId, live_capacity: usize) -> Self {
        EventLog {
            session,
            events: Vec::new(),
            last_seq: 0,
            last_time_ms: 0,
            subscribers: Vec::new(),
            live_capacity,
        }
    }

    /// The `seq` of the newest event (0 when empty).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// When the newest event happened, milliseconds since the epoch (0 when empty).
    pub fn last_time_ms(&self) -> u64 {
        self.last_time_ms
    }

    /// Numbers `event` (the next `seq`, the time now) without publishing it yet, so that it can
    /// be stored first.
    pub fn number(&mut self, event: Event) -> SessionEvent {
        self.last_seq += 1;
        self.last_time_ms = now_ms();
        SessionEvent {
            session: self.session.clone(),
            seq: self.last_seq,
            time_ms: self.last_time_ms,
            event,
        }
    }

    /// Keeps a numbered event and sends it to every subscriber.
    pub fn publish(&mut self, event: SessionEvent) {
        self.subscribers
            .retain(|sub| match sub.tx.try_send(event.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    sub.lagged.store(true, Ordering::Release);
                    tracing::debug!(conn = sub.conn.0, seq = event.seq, "subscriber lagged");
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
        self.events.push(event);
    }

    /// Numbers, keeps and publishes `event`.
    pub fn emit(&mut self, event: Event) {
        let event = self.number(event);
        self.publish(event);
    }

    /// Takes back an event read from the session's store: numbering goes on after it, and text
    /// deltas are not held (their complete message is).
    pub fn restore(&mut self, seq: u64, time_ms: u64, event: Event) {
        self.last_seq = self.last_seq.max(seq);
        self.last_time_ms = self.last_time_ms.max(time_ms);
        if !matches!(event, Event::TextDelta { .. } | Event::ThinkingDelta { .. }) {
            self.events.push(SessionEvent {
                session: self.session.clone(),
                seq,
                time_ms,
                event,
            });
        }
    }

    /// Held events with `seq > from_seq`, in order.
    pub fn events_after(&self, from_seq: u64) -> Vec<SessionEvent> {
        let start = self.events.partition_point(|e| e.seq <= from_seq);
        self.events[start..].to_vec()
    }

    /// Subscribes `conn` from `from_seq`: the replay and the live channel meet without a gap or
    /// a duplicate. A connection holds at most one subscription per session.
    pub fn subscribe(&mut self, conn: ConnectionId, from_seq: u64) -> Subscription {
        self.unsubscribe(conn);
        let (tx, live) = mpsc::channel(self.live_capacity);
        let lagged = Arc::new(AtomicBool::new(false));
        self.subscribers.push(Subscriber {
            conn,
            tx,
            lagged: lagged.clone(),
        });
        Subscription {
            replay: self.events_after(from_seq),
            live,
            lagged,
        }
    }

    /// Ends `conn`'s subscription, if any.
    pub fn unsubscribe(&mut self, conn: ConnectionId) {
        self.subscribers.retain(|sub| sub.conn != conn);
    }

    /// Ends every subscription; their receivers see the channel close.
    pub fn close_all(&mut self) {
        self.subscribers.clear();
    }

    /// Connections subscribed now (those whose receivers are still open).
    pub fn subscriber_count(&self) -> usize {
        self.subscribers
            .iter()
            .filter(|s| !s.tx.is_closed())
            .count()
    }

    /// Drops the text and thinking deltas before the newest event: once a reply is complete its
    /// `AssistantMessage` carries the whole text, so replay does not need the pieces.
    pub fn fold_deltas(&mut self) {
        let newest = self.last_seq;
        self.events.retain(|e| {
            e.seq == newest
                || !matches!(
                    e.event,
                    Event::TextDelta { .. } | Event::ThinkingDelta { .. }
                )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_event() -> Event {
        Event::ModeChanged {
            mode: protocol::Mode::Plan,
        }
    }

    #[test]
    fn replay_and_live_meet_without_gap_or_duplicate() {
        let mut log = EventLog::new(SessionId("s".into()));
        log.emit(mode_event());
        log.emit(mode_event());
        let mut sub = log.subscribe(ConnectionId(1), 1);
        log.emit(mode_event());
        let replayed: Vec<u64> = sub.replay.iter().map(|e| e.seq).collect();
        assert_eq!(replayed, vec![2]);
        assert_eq!(sub.live.try_recv().unwrap().seq, 3);
        assert!(sub.live.try_recv().is_err());
    }

    #[test]
    fn a_full_subscriber_is_dropped_and_flagged() {
        let mut log = EventLog::with_capacity(SessionId("s".into()), 2);
        let sub = log.subscribe(ConnectionId(1), 0);
        for _ in 0..3 {
            log.emit(mode_event());
        }
        assert!(sub.lagged.load(Ordering::Acquire));
        assert_eq!(log.subscriber_count(), 0);
    }

    #[test]
    fn folding_keeps_complete_messages_and_seq_numbers() {
        let mut log = EventLog::new(SessionId("s".into()));
        log.emit(Event::TextDelta { text: "a".into() });
        log.emit(Event::TextDelta { text: "b".into() });
        log.emit(Event::AssistantMessage {
            turn: 1,
            text: "ab".into(),
            thinking: String::new(),
            tool_calls: vec![],
            stop_reason: protocol::ModelStopReason::EndTurn,
        });
        log.fold_deltas();
        let seqs: Vec<u64> = log.events_after(0).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![3]);
    }
}
