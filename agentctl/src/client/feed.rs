//! The one way a front end follows sessions: subscribe from a `seq`, pass each event on once
//! (a resubscription replays what the client already has), resubscribe when the daemon
//! dropped a slow client, tell replayed events from live ones by the daemon's `ReplayDone`
//! marker, keep each session's pending permission requests ([`Follower`]), and, given a
//! [`Reconnect`], reach the daemon again when it goes away and follow the same sessions from
//! where they were.
//!
//! A front end is setup, then [`Feed::next`] in its own loop (when it also reads keys or
//! signals) or [`Feed::drive`] with a [`View`]. `next` can be cancelled at any point (a
//! `select!` with a timer): what it waits for goes on in tasks of the feed's own.

use std::sync::Arc;

use protocol::{SessionEvent, SessionId};
use tokio::sync::mpsc;

use super::connection::{Client, ClientError};
use super::follower::{Follower, Refollowed};
use super::incoming::Incoming;
use super::reconnect::{Lost, Reconnect};
use super::unread::Events;

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
    /// The daemon went away (a restart, an upgrade, a crash) and the feed is reaching it
    /// again; only a feed given a [`Reconnect`] says this. Nothing else comes until
    /// [`FeedItem::Reconnected`] or [`FeedItem::Closed`] (it gave up). Requests sent meanwhile
    /// fail: a front end stops asking questions and may say it waits.
    Reconnecting {
        /// Why the connection ended, when the daemon said.
        reason: Option<String>,
        /// The daemon said it stops on purpose (a stop or restart) rather than dying.
        planned: bool,
    },
    /// The daemon is back: [`Follower::client`] is a new connection, and each session is
    /// followed again from the last event passed on. The events it missed come next, as live
    /// events (a run that went on in the new daemon starts with `RunResumed`). A front end
    /// says so in one line and asks again what it asks (pending requests come again).
    Reconnected {
        /// The sessions followed again.
        sessions: Vec<SessionId>,
        /// Sessions deleted while the daemon was away, no longer followed.
        gone: Vec<SessionId>,
    },
    /// The connection ended (and, with a [`Reconnect`], the daemon did not come back);
    /// nothing more will come.
    Closed(Option<String>),
}

/// What the feed's own tasks report to it.
enum Report {
    /// Following `session` again after a lag failed.
    Refollow(SessionId, ClientError),
    /// A new connection, its sessions followed again.
    Back {
        incoming: Events,
        refollowed: Refollowed,
    },
    /// The daemon did not come back.
    GaveUp(String),
}

/// The events of the sessions a front end follows, each once and in order.
pub struct Feed {
    follower: Follower,
    incoming: Events,
    reconnect: Option<Reconnect>,
    reports: mpsc::UnboundedReceiver<Report>,
    report: mpsc::UnboundedSender<Report>,
    /// The connection ended and a task is reaching the daemon again.
    away: bool,
}

impl Feed {
    /// A feed over `client`'s events; `None` when they were taken already. It ends with the
    /// connection unless given a [`Reconnect`] ([`Feed::reconnecting`]).
    pub fn new(mut client: Client) -> Option<Feed> {
        let incoming = client.take_events()?;
        let (report, reports) = mpsc::unbounded_channel();
        Some(Feed {
            follower: Follower::new(client),
            incoming,
            reconnect: None,
            reports,
            report,
            away: false,
        })
    }

    /// The same feed, reaching the daemon again with `reconnect` when it goes away (unless its
    /// patience is zero).
    pub fn reconnecting(mut self, reconnect: Reconnect) -> Feed {
        self.reconnect = Some(reconnect).filter(Reconnect::enabled);
        self
    }

    /// Subscribes sessions to this feed.
    pub fn follower(&self) -> &Follower {
        &self.follower
    }

    /// The connection now, for requests of the front end's own (see [`Follower::client`]).
    pub fn client(&self) -> Arc<Client> {
        self.follower.client()
    }

    /// The next thing to pass on: a new event, the end of a replay, the daemon going away and
    /// coming back, or the end of the connection. Events of sessions not followed are dropped;
    /// a dropped subscription is resumed from the last event passed on. Cancel-safe.
    pub async fn next(&mut self) -> FeedItem {
        loop {
            let incoming = if self.away {
                self.reports.recv().await.map(Err)
            } else {
                tokio::select! {
                    biased;
                    report = self.reports.recv() => report.map(Err),
                    incoming = self.incoming.recv() => Some(Ok(incoming)),
                }
            };
            let item = match incoming {
                Some(Ok(incoming)) => self.frame(incoming),
                Some(Err(report)) => self.report(report),
                // The feed holds a sender: the channel never ends.
                None => None,
            };
            if let Some(item) = item {
                return item;
            }
        }
    }

    /// What a frame of the connection means to the front end, if anything.
    fn frame(&mut self, incoming: Option<Incoming>) -> Option<FeedItem> {
        match incoming.unwrap_or(Incoming::Closed(None)) {
            Incoming::Event(event) => {
                let fresh = self.follower.with_cursor(&event.session, |cursor| {
                    cursor.take(&event).then_some(cursor.replaying)
                });
                match fresh {
                    Some(Some(replay)) => Some(FeedItem::Event { event, replay }),
                    _ => None,
                }
            }
            Incoming::ReplayDone { session, last_seq } => {
                let was_replaying = self.follower.with_cursor(&session, |cursor| {
                    // Every replayed event came before the marker, every live one is above it
                    // (also when the client asked from further on).
                    cursor.last_seq = last_seq;
                    std::mem::take(&mut cursor.replaying)
                });
                // A subscription taken again goes on where it was: no new boundary to tell.
                was_replaying
                    .filter(|was| *was)
                    .map(|_| FeedItem::ReplayDone { session, last_seq })
            }
            Incoming::Lagged { session, .. } => {
                self.follower.with_cursor(&session, |_| ())?;
                let (follower, report) = (self.follower.clone(), self.report.clone());
                tokio::spawn(async move {
                    if let Err(err) = follower.refollow(&session).await {
                        let _ = report.send(Report::Refollow(session, err));
                    }
                });
                None
            }
            Incoming::Closed(reason) => Some(self.lost(reason)),
            // Summaries are the board's feed (`summaries`), never asked for here.
            Incoming::Summary(_)
            | Incoming::SummariesReady { .. }
            | Incoming::SummaryRemoved { .. } => None,
        }
    }

    /// The connection ended: reach the daemon again, or end.
    fn lost(&mut self, reason: Option<String>) -> FeedItem {
        let Some(reconnect) = self.reconnect.clone() else {
            return FeedItem::Closed(reason);
        };
        let lost = Lost::of(&self.follower.client());
        self.away = true;
        tokio::spawn(come_back(
            self.follower.clone(),
            reconnect,
            lost,
            self.report.clone(),
        ));
        FeedItem::Reconnecting {
            reason,
            planned: lost.stopping,
        }
    }

    /// What a report of the feed's own tasks means to the front end, if anything.
    fn report(&mut self, report: Report) -> Option<FeedItem> {
        match report {
            // The connection ended too: its end comes as a frame.
            Report::Refollow(_, err) if err.connection_lost() => None,
            Report::Refollow(session, err) => Some(FeedItem::Closed(Some(format!(
                "cannot follow session {session} again after falling behind: {err}"
            )))),
            Report::Back {
                incoming,
                refollowed,
            } => {
                self.incoming = incoming;
                self.away = false;
                Some(FeedItem::Reconnected {
                    sessions: refollowed.sessions,
                    gone: refollowed.gone,
                })
            }
            Report::GaveUp(reason) => {
                self.away = false;
                self.reconnect = None;
                Some(FeedItem::Closed(Some(reason)))
            }
        }
    }

    /// Passes everything to `view` until it says stop (`Ok`) or the connection ends (`Err`).
    pub async fn drive(&mut self, view: &mut dyn View) -> Result<(), Closed> {
        loop {
            let flow = match self.next().await {
                FeedItem::Event { event, replay } => view.event(&event, replay),
                FeedItem::ReplayDone { session, .. } => view.replay_done(&session),
                FeedItem::Reconnecting { reason, .. } => view.reconnecting(reason.as_deref()),
                FeedItem::Reconnected { sessions, .. } => view.reconnected(&sessions),
                FeedItem::Closed(reason) => return Err(Closed { reason }),
            };
            if flow == Flow::Stop {
                return Ok(());
            }
        }
    }
}

/// Reaches the daemon again and follows every session again over the new connection; a
/// connection lost while doing so is replaced within the same patience.
async fn come_back(
    follower: Follower,
    reconnect: Reconnect,
    lost: Lost,
    report: mpsc::UnboundedSender<Report>,
) {
    loop {
        let mut client = match reconnect.connect(&lost).await {
            Ok(client) => client,
            Err(gave_up) => {
                let _ = report.send(Report::GaveUp(gave_up.to_string()));
                return;
            }
        };
        let Some(incoming) = client.take_events() else {
            let _ = report.send(Report::GaveUp("the new connection has no events".into()));
            return;
        };
        follower.replace_client(Arc::new(client));
        match follower.refollow_all().await {
            Ok(refollowed) => {
                let _ = report.send(Report::Back {
                    incoming,
                    refollowed,
                });
                return;
            }
            Err(err) if err.connection_lost() => continue,
            Err(err) => {
                let _ = report.send(Report::GaveUp(format!(
                    "the daemon is back but refused to follow the sessions again: {err}"
                )));
                return;
            }
        }
    }
}

/// The connection to the daemon ended while a view still wanted events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the daemon closed the connection{}", .reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
pub struct Closed {
    /// Why, when a reason was given.
    pub reason: Option<String>,
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

    /// The daemon went away; the feed is reaching it again (see [`FeedItem::Reconnecting`]).
    fn reconnecting(&mut self, _reason: Option<&str>) -> Flow {
        Flow::Go
    }

    /// The daemon is back and `sessions` are followed again (see [`FeedItem::Reconnected`]).
    fn reconnected(&mut self, _sessions: &[SessionId]) -> Flow {
        Flow::Go
    }

    /// Redraws what changes with time (a running tool's clock); called ten times a second.
    fn tick(&mut self) {}

    /// Shows a line of the front end's own (the daemon went away, came back); on stderr
    /// unless the view draws it itself.
    fn note(&mut self, text: &str) {
        eprintln!("{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_feed_says_why_when_it_was_told() {
        let told = Closed {
            reason: Some("the daemon stops".into()),
        };
        assert_eq!(
            told.to_string(),
            "the daemon closed the connection: the daemon stops"
        );
        let untold = Closed { reason: None };
        assert_eq!(untold.to_string(), "the daemon closed the connection");
    }
}
