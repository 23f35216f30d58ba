//! Following a session: a connection subscribes from a `seq` (the stretch only the log on disk
//! holds, then the window, then live events), unsubscribes, or reads its history a page at a
//! time.

use kameo::prelude::*;
use protocol::{ErrorInfo, SessionEvent, SessionId, SessionInfo};

use super::SessionActor;
use crate::ConnectionId;
use crate::session::event_log::Subscription;
use crate::store::DiskReplay;

impl SessionActor {
    /// The stretch of events after `from_seq` that only the log on disk still holds.
    fn disk_before_window(&self, from_seq: u64) -> Option<DiskReplay> {
        let through = self.log.window_start().saturating_sub(1);
        (from_seq < through).then(|| DiskReplay {
            session: self.info.id.clone(),
            path: self.store.log_path(),
            offset: self.store.offset_after(from_seq),
            after_seq: from_seq,
            through_seq: through,
        })
    }
}

/// Subscribe a connection from `from_seq`.
pub struct Subscribe {
    /// The subscribing connection.
    pub conn: ConnectionId,
    /// The last `seq` the client has.
    pub from_seq: u64,
}

impl Message<Subscribe> for SessionActor {
    type Reply = Result<(SessionInfo, Subscription), ErrorInfo>;

    async fn handle(&mut self, msg: Subscribe, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let disk = self.disk_before_window(msg.from_seq);
        let subscription = self.log.subscribe(msg.conn, msg.from_seq, disk);
        Ok((self.info(), subscription))
    }
}

/// End a connection's subscription.
pub struct Unsubscribe {
    /// The connection.
    pub conn: ConnectionId,
}

impl Message<Unsubscribe> for SessionActor {
    /// The session's full id.
    type Reply = Result<SessionId, ErrorInfo>;

    async fn handle(
        &mut self,
        msg: Unsubscribe,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.log.unsubscribe(msg.conn);
        self.discard_if_empty();
        Ok(self.info.id.clone())
    }
}

/// Where the session's history after `from_seq` is: its listing, the stretch to read from
/// disk (if the in-memory window does not reach back that far) and the window's events.
pub struct GetHistory {
    /// The last `seq` the client has.
    pub from_seq: u64,
}

/// The answer to [`GetHistory`].
pub struct HistorySource {
    /// The session's listing.
    pub info: SessionInfo,
    /// Events to read from the log first.
    pub disk: Option<DiskReplay>,
    /// Then the window's events.
    pub recent: Vec<SessionEvent>,
}

impl Message<GetHistory> for SessionActor {
    type Reply = Result<HistorySource, ErrorInfo>;

    async fn handle(&mut self, msg: GetHistory, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        Ok(HistorySource {
            info: self.info(),
            disk: self.disk_before_window(msg.from_seq),
            recent: self.log.recent_after(msg.from_seq),
        })
    }
}
