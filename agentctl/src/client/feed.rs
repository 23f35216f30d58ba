//! The one way a front end follows sessions: subscribe from a `seq`, pass each event on once
//! (a resubscription replays what the client already has), resubscribe when the daemon
//! dropped a slow client, tell replayed events from live ones by the daemon's `ReplayDone`
//! marker, and keep each session's pending permission requests.
//!
//! A front end is setup, then [`Feed::next`] in its own loop (when it also reads keys or
//! signals) or [`Feed::drive`] with a [`View`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::{
    Delivery, Event, PermissionRequestId, Reply, Request, RunId, RunOptions, SessionEvent,
    SessionId, SessionInfo,
};
use tokio::sync::mpsc;

use super::connection::{Client, ClientError, Incoming};

/// What the feed passes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedItem {
    /// An event the front end has not seen; `replay` when it happened before the subscription.
    Event {
        /// The event.
        event: SessionEvent,
        /// Whether it is part of a replay.
        replay: bool,
    },
    /// A session's replay is over: what follows is live.
    ReplayDone {
        /// The session.
        session: SessionId,
        /// Live events have a `seq` above this.
        last_seq: u64,
    },
    /// The connection ended; nothing more will come.
    Closed(Option<String>),
}

/// A permission request waiting for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAsk {
    /// The subagent session that asks, when it is not the session followed (SPEC §14).
    pub session: Option<SessionId>,
    /// The request, to answer with `Answer`.
    pub request: PermissionRequestId,
    /// The tool.
    pub tool: String,
    /// One line saying what would happen.
    pub summary: String,
}

impl PendingAsk {
    /// The session to send the answer to, for a request shown in `followed`'s events.
    pub fn asker(&self, followed: &SessionId) -> SessionId {
        self.session.clone().unwrap_or_else(|| followed.clone())
    }
}

/// Where the front end is in one session's events.
#[derive(Debug, Default)]
struct Cursor {
    last_seq: u64,
    replaying: bool,
    pending: Vec<PendingAsk>,
}

impl Cursor {
    fn from(seq: u64) -> Cursor {
        Cursor {
            last_seq: seq,
            replaying: true,
            pending: Vec::new(),
        }
    }

    /// Notes `event`; false when it was seen already.
    fn take(&mut self, event: &SessionEvent) -> bool {
        if event.seq <= self.last_seq {
            return false;
        }
        self.last_seq = event.seq;
        match &event.event {
            Event::PermissionRequested {
                session,
                request,
                tool,
                summary,
                ..
            } => self.pending.push(PendingAsk {
                session: session.clone(),
                request: *request,
                tool: tool.clone(),
                summary: summary.clone(),
            }),
            Event::PermissionResolved {
                session, request, ..
            } => self
                .pending
                .retain(|ask| ask.request != *request || ask.session != *session),
            // A subagent's requests outlive its parent's run only until they are answered.
            Event::RunFinished { .. } => self.pending.retain(|ask| ask.session.is_some()),
            _ => {}
        }
        true
    }
}

/// Subscribes sessions to a feed; cheap to clone, for tasks other than the one reading it.
#[derive(Clone)]
pub struct Follower {
    client: Arc<Client>,
    cursors: Arc<Mutex<HashMap<SessionId, Cursor>>>,
}

impl Follower {
    /// The connection, for requests of the front end's own.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn cursors(&self) -> MutexGuard<'_, HashMap<SessionId, Cursor>> {
        self.cursors.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows `session` after `from_seq`: its replay, then its live events.
    pub async fn follow(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<SessionInfo, ClientError> {
        self.cursors()
            .insert(session.clone(), Cursor::from(from_seq));
        let request = Request::Subscribe {
            session: session.clone(),
            from_seq,
        };
        match self.client.request(request).await {
            Ok(Reply::Subscribed(info)) => {
                self.rekey(session, &info.id);
                Ok(info)
            }
            other => {
                self.cursors().remove(session);
                Err(unexpected(other))
            }
        }
    }

    /// Follows `session`'s live events and sends it a message in one exchange; returns its
    /// listing and the run the message started, if any.
    pub async fn send_following(
        &self,
        session: &SessionId,
        text: String,
        delivery: Delivery,
        options: RunOptions,
    ) -> Result<(SessionInfo, Option<RunId>), ClientError> {
        self.cursors().insert(session.clone(), Cursor::from(0));
        let request = Request::SendSubscribed {
            session: session.clone(),
            text,
            delivery,
            options,
        };
        match self.client.request(request).await {
            Ok(Reply::SentSubscribed { info, started }) => {
                self.rekey(session, &info.id);
                Ok((info, started))
            }
            other => {
                self.cursors().remove(session);
                Err(unexpected(other))
            }
        }
    }

    /// Stops passing on `session`'s events (the daemon is not told).
    pub fn forget(&self, session: &SessionId) {
        self.cursors().remove(session);
    }

    /// The session's permission requests waiting for an answer, oldest first.
    pub fn pending(&self, session: &SessionId) -> Vec<PendingAsk> {
        self.cursors()
            .get(session)
            .map(|c| c.pending.clone())
            .unwrap_or_default()
    }

    /// The last `seq` passed on for `session`.
    pub fn last_seq(&self, session: &SessionId) -> Option<u64> {
        self.cursors().get(session).map(|c| c.last_seq)
    }

    /// A session named by a prefix of its id is known by its full id from now on.
    fn rekey(&self, given: &SessionId, full: &SessionId) {
        if given != full {
            let mut cursors = self.cursors();
            if let Some(cursor) = cursors.remove(given) {
                cursors.entry(full.clone()).or_insert(cursor);
            }
        }
    }

    /// The cursor of an event's session, also when it was followed by a prefix of its id.
    fn with_cursor<R>(&self, session: &SessionId, f: impl FnOnce(&mut Cursor) -> R) -> Option<R> {
        let mut cursors = self.cursors();
        if !cursors.contains_key(session) {
            let prefix = cursors
                .keys()
                .find(|k| session.as_str().starts_with(k.as_str()))
                .cloned()?;
            let cursor = cursors.remove(&prefix)?;
            cursors.insert(session.clone(), cursor);
        }
        cursors.get_mut(session).map(f)
    }
}

/// The events of the sessions a front end follows, each once and in order.
pub struct Feed {
    follower: Follower,
    incoming: mpsc::UnboundedReceiver<Incoming>,
}

impl Feed {
    /// A feed over `client`'s events; `None` when they were taken already.
    pub fn new(mut client: Client) -> Option<Feed> {
        let incoming = client.take_incoming()?;
        Some(Feed {
            follower: Follower {
                client: Arc::new(client),
                cursors: Arc::default(),
            },
            incoming,
        })
    }

    /// Subscribes sessions to this feed.
    pub fn follower(&self) -> &Follower {
        &self.follower
    }

    /// The connection, for requests of the front end's own.
    pub fn client(&self) -> &Client {
        &self.follower.client
    }

    /// The next thing to pass on: a new event, the end of a replay, or the end of the
    /// connection. Events of sessions not followed are dropped; a dropped subscription is
    /// resumed from the last event passed on.
    pub async fn next(&mut self) -> FeedItem {
        loop {
            let Some(incoming) = self.incoming.recv().await else {
                return FeedItem::Closed(None);
            };
            match incoming {
                Incoming::Event(event) => {
                    let fresh = self.follower.with_cursor(&event.session, |cursor| {
                        cursor.take(&event).then_some(cursor.replaying)
                    });
                    if let Some(Some(replay)) = fresh {
                        return FeedItem::Event { event, replay };
                    }
                }
                Incoming::ReplayDone { session, last_seq } => {
                    let followed = self.follower.with_cursor(&session, |cursor| {
                        // Every replayed event came before the marker, every live one is
                        // above it (also when the client asked from further on).
                        cursor.replaying = false;
                        cursor.last_seq = last_seq;
                    });
                    if followed.is_some() {
                        return FeedItem::ReplayDone { session, last_seq };
                    }
                }
                Incoming::Lagged { session, .. } => {
                    let Some(from_seq) = self.follower.with_cursor(&session, |c| c.last_seq) else {
                        continue;
                    };
                    if let Err(err) = self.follower.follow(&session, from_seq).await {
                        return FeedItem::Closed(Some(format!(
                            "cannot follow session {session} again after falling behind: {err}"
                        )));
                    }
                }
                Incoming::Closed(reason) => return FeedItem::Closed(reason),
                // Summaries are the board's feed (`summaries`), never asked for here.
                Incoming::Summary(_)
                | Incoming::SummariesReady { .. }
                | Incoming::SummaryRemoved { .. } => {}
            }
        }
    }

    /// Passes everything to `view` until it says stop (`Ok`) or the connection ends (`Err`
    /// with the reason, if one was given).
    pub async fn drive(&mut self, view: &mut dyn View) -> Result<(), Option<String>> {
        loop {
            let flow = match self.next().await {
                FeedItem::Event { event, replay } => view.event(&event, replay),
                FeedItem::ReplayDone { session, .. } => view.replay_done(&session),
                FeedItem::Closed(reason) => return Err(reason),
            };
            if flow == Flow::Stop {
                return Ok(());
            }
        }
    }
}

/// Whether a view wants more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Go,
    /// Stop driving.
    Stop,
}

/// A way of showing a session's events: the terminal, JSON lines, an editor.
pub trait View {
    /// Shows one event; `replay` when it happened before the front end subscribed.
    fn event(&mut self, event: &SessionEvent, replay: bool) -> Flow;

    /// The session's replay is over; what follows is live.
    fn replay_done(&mut self, _session: &SessionId) -> Flow {
        Flow::Go
    }

    /// Redraws what changes with time (a running tool's clock); called ten times a second.
    fn tick(&mut self) {}
}

fn unexpected(reply: Result<Reply, ClientError>) -> ClientError {
    match reply {
        Ok(other) => ClientError::Unexpected(format!("{other:?}")),
        Err(err) => err,
    }
}
