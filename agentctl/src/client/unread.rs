//! What the connection's reader holds for the front end: only frames this connection asked
//! for, and only so many bytes of them unread. The far end may be another machine that does
//! not play by the rules (docs/architecture.md#another-machine-over-ssh): events of sessions
//! never subscribed and summaries never asked for are dropped as they arrive, and a front end
//! that falls too far behind ends the connection with a clear reason rather than letting
//! memory grow (a real daemon's events are then followed again from the last one shown, as
//! after any lost connection).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::{Request, SessionId};
use tokio::sync::mpsc;

use super::incoming::Incoming;

/// The most bytes of frames a front end may leave unread before the connection is ended.
pub const UNREAD_LIMIT: usize = 64 * 1024 * 1024;

/// What each held frame counts for beyond its payload: the memory of an event is more than
/// its encoding, and a flood of tiny frames must reach the limit too.
const FRAME_OVERHEAD: usize = 256;

/// The sessions and summaries this connection asked the daemon for.
#[derive(Default)]
struct Asked {
    /// Sessions subscribed, as the requests named them (an id or a prefix of one).
    sessions: Mutex<Vec<SessionId>>,
    /// Whether every session's summary was asked for.
    summaries: AtomicBool,
}

impl Asked {
    /// Whether `incoming` answers something this connection asked for.
    fn wants(&self, incoming: &Incoming) -> bool {
        let session = match incoming {
            Incoming::Event(event) => &event.session,
            Incoming::Lagged { session, .. } | Incoming::ReplayDone { session, .. } => session,
            Incoming::Summary(_)
            | Incoming::SummariesReady { .. }
            | Incoming::SummaryRemoved { .. } => {
                return self.summaries.load(Ordering::Relaxed);
            }
            Incoming::Closed(_) => return true,
        };
        lock(&self.sessions)
            .iter()
            .any(|asked| session.as_str().starts_with(asked.as_str()))
    }
}

/// A frame held for the front end and what it counts toward [`UNREAD_LIMIT`].
struct Held {
    incoming: Incoming,
    weight: usize,
}

/// Where the reader puts what it holds.
enum Sink {
    /// A queue of at most [`UNREAD_LIMIT`] bytes ([`Events`]).
    Bounded(mpsc::UnboundedSender<Held>),
    /// A queue whose reader answers for its length ([`super::Client::take_incoming`]).
    Unbounded(mpsc::UnboundedSender<Incoming>),
    /// The connection ended: the queue's sender is dropped, so it ends once read.
    Ended,
}

/// The front end did not read its events: the connection ends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the daemon sent more than {} MiB of events that this client did not read in time; \
     the connection was closed to keep memory bounded; run the command again to follow on \
     from the last event shown",
    .limit / (1024 * 1024)
)]
pub struct Overflow {
    /// The limit passed.
    pub limit: usize,
}

/// The reader's side: what was asked for, and the queue of what arrived.
pub(super) struct Unread {
    asked: Asked,
    sink: Mutex<Sink>,
    held: Arc<AtomicUsize>,
    limit: usize,
}

impl Unread {
    /// A queue of at most `limit` unread bytes, and its receiving end.
    pub(super) fn new(limit: usize) -> (Unread, Events) {
        let (tx, rx) = mpsc::unbounded_channel();
        let held = Arc::new(AtomicUsize::new(0));
        let unread = Unread {
            asked: Asked::default(),
            sink: Mutex::new(Sink::Bounded(tx)),
            held: held.clone(),
            limit,
        };
        (unread, Events { rx, held })
    }

    /// Notes what `request` asks the daemon to send besides its reply; called before it is
    /// sent, so what answers it is never taken for unasked.
    pub(super) fn asking(&self, request: &Request) {
        let session = match request {
            Request::Subscribe { session, .. } | Request::SendSubscribed { session, .. } => session,
            Request::SubscribeSummaries => {
                self.asked.summaries.store(true, Ordering::Relaxed);
                return;
            }
            _ => return,
        };
        let mut sessions = lock(&self.asked.sessions);
        if !sessions.contains(session) {
            sessions.push(session.clone());
        }
    }

    /// Holds `incoming`, `payload` bytes on the wire, for the front end; drops it when it was
    /// not asked for. Fails when the front end left more than the limit unread.
    pub(super) fn hold(&self, incoming: Incoming, payload: usize) -> Result<(), Overflow> {
        if !self.asked.wants(&incoming) {
            return Ok(());
        }
        match &*lock(&self.sink) {
            Sink::Ended => {}
            Sink::Unbounded(tx) => {
                let _ = tx.send(incoming);
            }
            Sink::Bounded(tx) => {
                let weight = payload.saturating_add(FRAME_OVERHEAD);
                let held = self.held.fetch_add(weight, Ordering::AcqRel);
                if held.saturating_add(weight) > self.limit {
                    self.held.fetch_sub(weight, Ordering::AcqRel);
                    return Err(Overflow { limit: self.limit });
                }
                if tx.send(Held { incoming, weight }).is_err() {
                    // Nobody will read it.
                    self.held.fetch_sub(weight, Ordering::AcqRel);
                }
            }
        }
        Ok(())
    }

    /// The connection ended: said last, whatever the limit; then the queue ends.
    pub(super) fn close(&self, reason: Option<String>) {
        let mut sink = lock(&self.sink);
        match &*sink {
            Sink::Ended => {}
            Sink::Unbounded(tx) => {
                let _ = tx.send(Incoming::Closed(reason));
            }
            Sink::Bounded(tx) => {
                let _ = tx.send(Held {
                    incoming: Incoming::Closed(reason),
                    weight: 0,
                });
            }
        }
        *sink = Sink::Ended;
    }

    /// From now on frames go unbounded to the receiver returned, after those `events` held.
    pub(super) fn unbounded(&self, mut events: Events) -> mpsc::UnboundedReceiver<Incoming> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut sink = lock(&self.sink);
        while let Ok(held) = events.rx.try_recv() {
            let _ = tx.send(held.incoming);
        }
        // After the end, the new queue ends too once read.
        if !matches!(*sink, Sink::Ended) {
            *sink = Sink::Unbounded(tx);
        }
        self.held.store(0, Ordering::Release);
        rx
    }
}

/// The events and other frames of a connection that are not replies, in order, with at most
/// [`UNREAD_LIMIT`] bytes of them waiting to be read (see [`super::Client::take_events`]).
pub struct Events {
    rx: mpsc::UnboundedReceiver<Held>,
    held: Arc<AtomicUsize>,
}

impl Events {
    /// The next frame; `None` once the connection is gone and everything was read.
    /// Cancel-safe.
    pub async fn recv(&mut self) -> Option<Incoming> {
        let held = self.rx.recv().await?;
        self.held.fetch_sub(held.weight, Ordering::AcqRel);
        Some(held.incoming)
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("held", &self.held.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Locks `mutex`, also after a panic elsewhere (what it guards stays consistent).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{Event, SessionEvent};

    fn event(session: &str, seq: u64) -> Incoming {
        Incoming::Event(SessionEvent {
            session: SessionId(session.to_string()),
            seq,
            time_ms: 0,
            event: Event::Notice {
                text: "x".to_string(),
            },
        })
    }

    fn subscribe(session: &str) -> Request {
        Request::Subscribe {
            session: SessionId(session.to_string()),
            from_seq: 0,
        }
    }

    #[tokio::test]
    async fn frames_never_asked_for_are_dropped() {
        let (unread, mut events) = Unread::new(UNREAD_LIMIT);
        unread.hold(event("abc123", 1), 10).unwrap();
        unread
            .hold(Incoming::SummariesReady { sessions: 1 }, 10)
            .unwrap();
        unread.asking(&subscribe("abc"));
        unread.hold(event("abc123", 2), 10).unwrap();
        unread.hold(event("other", 3), 10).unwrap();
        unread
            .hold(
                Incoming::Lagged {
                    session: SessionId("other".into()),
                    last_seq: 1,
                },
                10,
            )
            .unwrap();
        unread.close(None);
        assert_eq!(events.recv().await, Some(event("abc123", 2)));
        assert_eq!(events.recv().await, Some(Incoming::Closed(None)));
        assert_eq!(
            events.recv().await,
            None,
            "the queue ends with the connection"
        );
    }

    #[tokio::test]
    async fn summaries_pass_once_asked_for() {
        let (unread, mut events) = Unread::new(UNREAD_LIMIT);
        unread.asking(&Request::SubscribeSummaries);
        unread
            .hold(Incoming::SummariesReady { sessions: 0 }, 10)
            .unwrap();
        assert_eq!(
            events.recv().await,
            Some(Incoming::SummariesReady { sessions: 0 })
        );
    }

    #[tokio::test]
    async fn unread_frames_are_bounded_and_reading_frees_room() {
        let limit = 10 * (100 + FRAME_OVERHEAD);
        let (unread, mut events) = Unread::new(limit);
        unread.asking(&subscribe("s"));
        for seq in 1..=10 {
            unread.hold(event("s", seq), 100).unwrap();
        }
        assert_eq!(
            unread.hold(event("s", 11), 100),
            Err(Overflow { limit }),
            "the eleventh unread frame passes the limit"
        );
        assert_eq!(events.recv().await, Some(event("s", 1)));
        unread.hold(event("s", 11), 100).unwrap();
        // The end is told however full the queue is.
        unread.close(Some("gone".into()));
        for seq in 2..=11 {
            assert_eq!(events.recv().await, Some(event("s", seq)));
        }
        assert_eq!(
            events.recv().await,
            Some(Incoming::Closed(Some("gone".into())))
        );
    }

    #[tokio::test]
    async fn an_unbounded_reader_gets_what_was_held_then_the_rest() {
        let limit = 2 * (100 + FRAME_OVERHEAD);
        let (unread, events) = Unread::new(limit);
        unread.asking(&subscribe("s"));
        unread.hold(event("s", 1), 100).unwrap();
        let mut raw = unread.unbounded(events);
        for seq in 2..=5 {
            unread.hold(event("s", seq), 100).unwrap();
        }
        for seq in 1..=5 {
            assert_eq!(raw.recv().await, Some(event("s", seq)));
        }
        unread.close(None);
        assert_eq!(raw.recv().await, Some(Incoming::Closed(None)));
        assert_eq!(raw.recv().await, None, "the queue ends with the connection");
    }

    #[tokio::test]
    async fn a_queue_taken_after_the_end_ends_once_read() {
        let (unread, events) = Unread::new(UNREAD_LIMIT);
        unread.close(Some("gone".into()));
        let mut raw = unread.unbounded(events);
        assert_eq!(
            raw.recv().await,
            Some(Incoming::Closed(Some("gone".into())))
        );
        assert_eq!(raw.recv().await, None);
    }

    #[test]
    fn overflow_says_what_happened_and_what_to_do() {
        let text = Overflow {
            limit: UNREAD_LIMIT,
        }
        .to_string();
        assert!(text.contains("more than 64 MiB of events"), "{text}");
        assert!(text.contains("run the command again"), "{text}");
    }
}
