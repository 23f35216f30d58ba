//! The board's feed (docs/architecture.md#the-board): one subscription to every session's summary.
//! A task keeps the latest summary of each session as frames arrive, so a front end that looks only
//! now and then (the board while it shows a chat) holds a map, never a growing queue. Given a
//! [`Reconnect`], the task reaches the daemon again when it goes away and subscribes again: every
//! session is summarised anew, and the ones deleted meanwhile are reported removed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::{Reply, Request, SessionId, SessionSummary};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::connection::{Client, ClientError};
use super::incoming::Incoming;
use super::reconnect::{Lost, Reconnect};
use super::unread::Events;

/// Every session's latest summary, kept up to date by the daemon.
pub struct Summaries {
    client: Arc<Mutex<Arc<Client>>>,
    state: Arc<Shared>,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    notify: Notify,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, SessionSummary>,
    changed: BTreeSet<SessionId>,
    removed: BTreeSet<SessionId>,
    ready: bool,
    told_ready: bool,
    /// After a new connection: the sessions summarised since, until it says it is ready.
    resyncing: Option<HashSet<SessionId>>,
    reconnecting: Option<String>,
    reconnected: bool,
    closed: Option<Option<String>>,
}

/// What changed since the front end last looked.
#[derive(Debug, Default)]
pub struct Changes {
    /// The new summaries of sessions that changed (or appeared).
    pub updated: Vec<SessionSummary>,
    /// Sessions deleted.
    pub removed: Vec<SessionId>,
    /// Every session has now been summarised once (set once, with the first summaries).
    pub ready: bool,
    /// The daemon went away (why, in words): the feed is reaching it again. `reconnected`
    /// follows when it is back, `closed` when it did not come back.
    pub reconnecting: Option<String>,
    /// The daemon is back and every session was summarised again (the ones deleted meanwhile
    /// are in `removed`).
    pub reconnected: bool,
    /// The connection ended, with the reason when one was given.
    pub closed: Option<Option<String>>,
}

impl Summaries {
    /// Subscribes `client` to every session's summary; the feed ends with the connection.
    pub async fn follow(client: Client) -> Result<Summaries, ClientError> {
        Summaries::follow_with(client, None).await
    }

    /// Subscribes `client` to every session's summary, and subscribes again with `reconnect`
    /// when the daemon goes away (unless its patience is zero).
    pub async fn follow_reconnecting(
        client: Client,
        reconnect: Reconnect,
    ) -> Result<Summaries, ClientError> {
        Summaries::follow_with(client, Some(reconnect).filter(Reconnect::enabled)).await
    }

    async fn follow_with(
        mut client: Client,
        reconnect: Option<Reconnect>,
    ) -> Result<Summaries, ClientError> {
        let Some(incoming) = client.take_events() else {
            return Err(ClientError::Unexpected(
                "the connection's frames are already taken".to_string(),
            ));
        };
        subscribe(&client).await?;
        let slot = Arc::new(Mutex::new(Arc::new(client)));
        let shared = Arc::new(Shared::default());
        let task = tokio::spawn(keep(incoming, shared.clone(), slot.clone(), reconnect));
        Ok(Summaries {
            client: slot,
            state: shared,
            task,
        })
    }

    /// The connection now, for the front end's own requests (answers, cancels); a new one
    /// after the daemon came back.
    pub fn client(&self) -> Arc<Client> {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Waits until something changed since the last [`Summaries::take`].
    pub async fn changed(&self) {
        self.state.notify.notified().await;
    }

    /// What changed since the last call. Before every session was summarised once, nothing
    /// is handed out (the first summaries come all together with `ready`).
    pub fn take(&self) -> Changes {
        let mut s = lock(&self.state.state);
        let mut changes = Changes {
            closed: s.closed.clone(),
            reconnecting: s.reconnecting.take(),
            ..Changes::default()
        };
        if !s.ready {
            return changes;
        }
        changes.ready = !s.told_ready;
        s.told_ready = true;
        changes.reconnected = std::mem::take(&mut s.reconnected);
        let changed = std::mem::take(&mut s.changed);
        changes.updated = changed
            .iter()
            .filter_map(|id| s.sessions.get(id).cloned())
            .collect();
        changes.removed = std::mem::take(&mut s.removed).into_iter().collect();
        changes
    }
}

impl Drop for Summaries {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Asks the daemon for every session's summary and their changes.
async fn subscribe(client: &Client) -> Result<(), ClientError> {
    match client.request(Request::SubscribeSummaries).await? {
        Reply::Done => Ok(()),
        other => Err(ClientError::Unexpected(format!("{other:?}"))),
    }
}

/// Keeps the summaries as frames arrive, over one connection after another.
async fn keep(
    mut incoming: Events,
    state: Arc<Shared>,
    slot: Arc<Mutex<Arc<Client>>>,
    reconnect: Option<Reconnect>,
) {
    loop {
        let reason = pass_on(&mut incoming, &state).await;
        let Some(reconnect) = &reconnect else {
            lock(&state.state).closed = Some(reason);
            state.notify.notify_one();
            return;
        };
        let lost = Lost::of(&slot.lock().unwrap_or_else(|e| e.into_inner()));
        lock(&state.state).reconnecting =
            Some(reason.unwrap_or_else(|| "the daemon closed the connection".to_string()));
        state.notify.notify_one();
        incoming = loop {
            let mut client = match reconnect.connect(&lost).await {
                Ok(client) => client,
                Err(gave_up) => {
                    lock(&state.state).closed = Some(Some(gave_up.to_string()));
                    state.notify.notify_one();
                    return;
                }
            };
            let Some(incoming) = client.take_events() else {
                continue;
            };
            match subscribe(&client).await {
                Ok(()) => {
                    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(client);
                    break incoming;
                }
                Err(err) if err.connection_lost() => continue,
                Err(err) => {
                    lock(&state.state).closed = Some(Some(format!(
                        "the daemon is back but refused the summaries: {err}"
                    )));
                    state.notify.notify_one();
                    return;
                }
            }
        };
        lock(&state.state).resyncing = Some(HashSet::new());
    }
}

/// The most sessions a feed keeps summaries of.
pub const MAX_SESSIONS: usize = 10_000;

/// Applies frames until the connection ends; returns why it ended.
async fn pass_on(incoming: &mut Events, state: &Shared) -> Option<String> {
    while let Some(frame) = incoming.recv().await {
        let mut s = lock(&state.state);
        match frame {
            Incoming::Summary(summary) => {
                let id = summary.info.id.clone();
                // A daemon holds as many sessions as its disk; one that claims more than any
                // board can show is not followed further.
                if s.sessions.len() >= MAX_SESSIONS && !s.sessions.contains_key(&id) {
                    return Some(format!(
                        "the daemon sent the summaries of more than {MAX_SESSIONS} sessions; \
                         this client follows at most that many"
                    ));
                }
                if let Some(seen) = &mut s.resyncing {
                    seen.insert(id.clone());
                }
                s.removed.remove(&id);
                s.changed.insert(id.clone());
                s.sessions.insert(id, *summary);
            }
            Incoming::SummaryRemoved { session } => {
                s.sessions.remove(&session);
                s.changed.remove(&session);
                s.removed.insert(session);
            }
            Incoming::SummariesReady { .. } => {
                s.ready = true;
                if let Some(seen) = s.resyncing.take() {
                    // Deleted while the daemon was away.
                    let gone: Vec<SessionId> = s
                        .sessions
                        .keys()
                        .filter(|id| !seen.contains(*id))
                        .cloned()
                        .collect();
                    for id in gone {
                        s.sessions.remove(&id);
                        s.changed.remove(&id);
                        s.removed.insert(id);
                    }
                    s.reconnected = true;
                }
            }
            Incoming::Closed(reason) => return reason,
            Incoming::Event(_) | Incoming::Lagged { .. } | Incoming::ReplayDone { .. } => {
                continue;
            }
        }
        drop(s);
        state.notify.notify_one();
    }
    None
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}
