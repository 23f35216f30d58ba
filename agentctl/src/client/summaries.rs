//! The board's feed (SPEC §17): one subscription to every session's summary. A task keeps the
//! latest summary of each session as frames arrive, so a front end that looks only now and then
//! (the board while it shows a chat) holds a map, never a growing queue.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::{Reply, Request, SessionId, SessionSummary};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::connection::{Client, ClientError, Incoming};

/// Every session's latest summary, kept up to date by the daemon.
pub struct Summaries {
    client: Client,
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
    /// The connection ended, with the reason when one was given.
    pub closed: Option<Option<String>>,
}

impl Summaries {
    /// Subscribes `client` to every session's summary.
    pub async fn follow(mut client: Client) -> Result<Summaries, ClientError> {
        let Some(mut incoming) = client.take_incoming() else {
            return Err(ClientError::Unexpected(
                "the connection's frames are already taken".to_string(),
            ));
        };
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        let task = tokio::spawn(async move {
            while let Some(frame) = incoming.recv().await {
                let mut s = lock(&state.state);
                match frame {
                    Incoming::Summary(summary) => {
                        let id = summary.info.id.clone();
                        s.removed.remove(&id);
                        s.changed.insert(id.clone());
                        s.sessions.insert(id, *summary);
                    }
                    Incoming::SummaryRemoved { session } => {
                        s.sessions.remove(&session);
                        s.changed.remove(&session);
                        s.removed.insert(session);
                    }
                    Incoming::SummariesReady { .. } => s.ready = true,
                    Incoming::Closed(reason) => s.closed = Some(reason),
                    Incoming::Event(_) | Incoming::Lagged { .. } | Incoming::ReplayDone { .. } => {
                        continue;
                    }
                }
                let closed = s.closed.is_some();
                drop(s);
                state.notify.notify_one();
                if closed {
                    return;
                }
            }
        });
        match client.request(Request::SubscribeSummaries).await {
            Ok(Reply::Done) => Ok(Summaries {
                client,
                state: shared,
                task,
            }),
            Ok(other) => {
                task.abort();
                Err(ClientError::Unexpected(format!("{other:?}")))
            }
            Err(err) => {
                task.abort();
                Err(err)
            }
        }
    }

    /// The connection, for the front end's own requests (answers, cancels).
    pub fn client(&self) -> &Client {
        &self.client
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
            ..Changes::default()
        };
        if !s.ready {
            return changes;
        }
        changes.ready = !s.told_ready;
        s.told_ready = true;
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

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}
