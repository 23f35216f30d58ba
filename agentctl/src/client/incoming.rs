//! What the daemon sends besides replies, as a front end receives it: events of the sessions
//! it follows, the board's summaries, and the end of the connection.

use protocol::{SessionEvent, SessionId};

/// Something the daemon sent that is not a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// An event of a subscribed session.
    Event(SessionEvent),
    /// A subscription was dropped because this client read too slowly; resubscribe from the
    /// last `seq` received.
    Lagged {
        /// The session.
        session: SessionId,
        /// The last `seq` queued before the drop.
        last_seq: u64,
    },
    /// A subscription's replay is over; its live events follow.
    ReplayDone {
        /// The session.
        session: SessionId,
        /// Live events have a `seq` above this.
        last_seq: u64,
    },
    /// A session's summary (after `SubscribeSummaries`).
    Summary(Box<protocol::SessionSummary>),
    /// Every session was summarised once; changes follow.
    SummariesReady {
        /// How many sessions there were.
        sessions: u64,
    },
    /// A session was deleted (after `SubscribeSummaries`).
    SummaryRemoved {
        /// The session.
        session: SessionId,
    },
    /// The connection ended; nothing more will arrive.
    Closed(Option<String>),
}
