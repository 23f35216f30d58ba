//! Which sessions a feed follows and where it is in each: the last `seq` passed on, whether
//! the replay is over, and the permission requests waiting for an answer. The [`Follower`]
//! subscribes (and subscribes again after a lag or a new connection, from where it was);
//! the [`Feed`](super::Feed) reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::{
    Delivery, ErrorCode, Event, ImageUpload, PermissionRequestId, Reply, Request, RunId,
    RunOptions, SessionEvent, SessionId, SessionInfo,
};

use super::connection::{Client, ClientError};

/// A permission request waiting for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAsk {
    /// The subagent session that asks, when it is not the session followed.
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
pub(super) struct Cursor {
    pub(super) last_seq: u64,
    pub(super) replaying: bool,
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
    pub(super) fn take(&mut self, event: &SessionEvent) -> bool {
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

/// The sessions followed again on a new connection.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Refollowed {
    /// Followed again from where they were.
    pub sessions: Vec<SessionId>,
    /// Deleted while the daemon was away: no longer followed.
    pub gone: Vec<SessionId>,
}

/// Subscribes sessions to a feed; cheap to clone, for tasks other than the one reading it.
#[derive(Clone)]
pub struct Follower {
    /// The connection now: a new one replaces it when the daemon comes back.
    client: Arc<Mutex<Arc<Client>>>,
    cursors: Arc<Mutex<HashMap<SessionId, Cursor>>>,
}

impl Follower {
    pub(super) fn new(client: Client) -> Follower {
        Follower {
            client: Arc::new(Mutex::new(Arc::new(client))),
            cursors: Arc::default(),
        }
    }

    /// The connection now, for requests of the front end's own. After the daemon came back
    /// (`FeedItem::Reconnected`) this is a new connection: ask again rather than keep it.
    pub fn client(&self) -> Arc<Client> {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// From now on requests go over `client`.
    pub(super) fn replace_client(&self, client: Arc<Client>) {
        *self.client.lock().unwrap_or_else(|e| e.into_inner()) = client;
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
        let subscribed = self.subscribe(session, from_seq).await;
        if subscribed.is_err() {
            self.cursors().remove(session);
        }
        subscribed
    }

    /// Subscribes `session` from `from_seq`; from then on it is known by its full id.
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<SessionInfo, ClientError> {
        let request = Request::Subscribe {
            session: session.clone(),
            from_seq,
        };
        match self.client().request(request).await {
            Ok(Reply::Subscribed(info)) => {
                self.rekey(session, &info.id);
                Ok(info)
            }
            other => Err(unexpected(other)),
        }
    }

    /// Follows `session`'s live events and sends it a message (and its images) in one exchange;
    /// returns its
    /// listing and the run the message started, if any.
    pub async fn send_following(
        &self,
        session: &SessionId,
        text: String,
        images: Vec<ImageUpload>,
        delivery: Delivery,
        options: RunOptions,
    ) -> Result<(SessionInfo, Option<RunId>), ClientError> {
        self.cursors().insert(session.clone(), Cursor::from(0));
        let request = Request::SendSubscribed {
            session: session.clone(),
            text,
            images,
            delivery,
            options,
        };
        match self.client().request(request).await {
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

    /// Subscribes `session` again after its subscription ended (the daemon dropped a slow
    /// client, or a new connection): from the last event passed on, keeping its pending
    /// requests; what it missed comes as live events. Returns its full id.
    pub(super) async fn refollow(&self, session: &SessionId) -> Result<SessionId, ClientError> {
        let Some(from_seq) = self.cursors().get(session).map(|c| c.last_seq) else {
            return Ok(session.clone());
        };
        Ok(self.subscribe(session, from_seq).await?.id)
    }

    /// Subscribes every followed session again over a new connection (see
    /// [`Follower::refollow`]); a session deleted meanwhile is forgotten.
    pub(super) async fn refollow_all(&self) -> Result<Refollowed, ClientError> {
        let sessions: Vec<SessionId> = self.cursors().keys().cloned().collect();
        let mut refollowed = Refollowed::default();
        for session in sessions {
            match self.refollow(&session).await {
                Ok(id) => refollowed.sessions.push(id),
                Err(err) if err.code() == Some(ErrorCode::UnknownSession) => {
                    self.forget(&session);
                    refollowed.gone.push(session);
                }
                Err(err) => return Err(err),
            }
        }
        Ok(refollowed)
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
    pub(super) fn with_cursor<R>(
        &self,
        session: &SessionId,
        f: impl FnOnce(&mut Cursor) -> R,
    ) -> Option<R> {
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

fn unexpected(reply: Result<Reply, ClientError>) -> ClientError {
    match reply {
        Ok(other) => ClientError::Unexpected(format!("{other:?}")),
        Err(err) => err,
    }
}
