//! Following a session: a connection subscribes from a `seq` (the stretch only the log on disk
//! holds, then the window, then live events), unsubscribes, or reads its history a page at a
//! time.

use kameo::prelude::*;
use protocol::{ErrorInfo, SessionEvent, SessionId, SessionInfo};

use super::SessionActor;
use crate::ConnectionId;
use crate::session::event_log::Subscription;
use crate::store::DiskReplay;

/// Subscribe a connection from `from_seq`.
pub(crate) struct Subscribe {
    /// The subscribing connection.
    pub(crate) conn: ConnectionId,
    /// The last `seq` the client has.
    pub(crate) from_seq: u64,
}

impl Message<Subscribe> for SessionActor {
    type Reply = Result<(SessionInfo, Subscription), ErrorInfo>;

    async fn handle(&mut self, msg: Subscribe, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let subscription = self.durable.subscribe(msg.conn, msg.from_seq);
        Ok((self.info(), subscription))
    }
}

/// End a connection's subscription.
pub(crate) struct Unsubscribe {
    /// The connection.
    pub(crate) conn: ConnectionId,
}

impl Message<Unsubscribe> for SessionActor {
    /// The session's full id.
    type Reply = Result<SessionId, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: Unsubscribe,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.durable.unsubscribe(msg.conn);
        self.discard_if_empty();
        Ok(self.shown.id().clone())
    }
}

/// Where the session's history after `from_seq` is: its listing, the stretch to read from
/// disk (if the in-memory window does not reach back that far) and the window's events.
pub(crate) struct GetHistory {
    /// The last `seq` the client has.
    pub(crate) from_seq: u64,
}

/// The answer to [`GetHistory`].
pub(crate) struct HistorySource {
    /// The session's listing.
    pub(crate) info: SessionInfo,
    /// Events to read from the log first.
    pub(crate) disk: Option<DiskReplay>,
    /// Then the window's events.
    pub(crate) recent: Vec<SessionEvent>,
}

impl Message<GetHistory> for SessionActor {
    type Reply = Result<HistorySource, ErrorInfo>;

    async fn handle(&mut self, msg: GetHistory, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let (disk, recent) = self.durable.events_after(msg.from_seq);
        Ok(HistorySource {
            info: self.info(),
            disk,
            recent,
        })
    }
}
