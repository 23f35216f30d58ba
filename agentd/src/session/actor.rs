//! The session actor: the single authority for one session. It holds the session's settings,
//! its event log and its subscribers, and answers the requests that name the session.

use kameo::prelude::*;
use protocol::{
    ErrorCode, ErrorInfo, Event, Mode, SessionEvent, SessionId, SessionInfo, SessionState,
};

use crate::ConnectionId;
use crate::session::events::{EventLog, Subscription};
use crate::supervisor::{SessionChanged, Supervisor};

/// What a session actor starts from.
pub struct SessionArgs {
    /// The session's settings and counters.
    pub info: SessionInfo,
    /// Told whenever the session's listing changes.
    pub supervisor: ActorRef<Supervisor>,
}

/// One session (SPEC §2).
pub struct SessionActor {
    info: SessionInfo,
    log: EventLog,
    supervisor: ActorRef<Supervisor>,
}

impl Actor for SessionActor {
    type Args = SessionArgs;
    type Error = ErrorInfo;

    async fn on_start(args: Self::Args, _: ActorRef<Self>) -> Result<Self, Self::Error> {
        let log = EventLog::new(args.info.id.clone());
        Ok(SessionActor {
            info: args.info,
            log,
            supervisor: args.supervisor,
        })
    }
}

impl SessionActor {
    /// The listing of this session as of now.
    fn info(&self) -> SessionInfo {
        let mut info = self.info.clone();
        info.last_seq = self.log.last_seq();
        if self.log.last_time_ms() > 0 {
            info.last_activity_ms = self.log.last_time_ms();
        }
        info
    }

    /// Emits `event` and tells the supervisor the listing changed.
    fn emit(&mut self, event: Event) {
        self.log.emit(event);
        // The supervisor's mailbox is unbounded, so this never waits.
        let _ = self.supervisor.tell(SessionChanged(self.info())).try_send();
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
        let subscription = self.log.subscribe(msg.conn, msg.from_seq);
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
        Ok(self.info.id.clone())
    }
}

/// The session's history: its listing and held events.
pub struct GetHistory;

impl Message<GetHistory> for SessionActor {
    type Reply = Result<(SessionInfo, Vec<SessionEvent>), ErrorInfo>;

    async fn handle(&mut self, _: GetHistory, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        Ok((self.info(), self.log.events_after(0)))
    }
}

/// Change the permission mode.
pub struct SetMode(pub Mode);

impl Message<SetMode> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: SetMode, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.info.mode = msg.0;
        self.emit(Event::ModeChanged { mode: msg.0 });
        Ok(())
    }
}

/// Close the session for deletion: refuse while running unless `force`, tell subscribers,
/// and stop the actor.
pub struct Close {
    /// Cancel a running run instead of refusing.
    pub force: bool,
}

impl Message<Close> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: Close, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self.info.state != SessionState::Idle && !msg.force {
            return Err(ErrorInfo::new(
                ErrorCode::Busy,
                format!(
                    "session {} is running; cancel it first or delete with --force",
                    self.info.id
                ),
            ));
        }
        self.log.emit(Event::SessionDeleted);
        self.log.close_all();
        ctx.stop();
        Ok(())
    }
}
