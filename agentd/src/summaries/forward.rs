//! Sends one client the summaries: every session once, then changes, at most ten a second per
//! session. A change waits until 100 ms after the session's last one was sent, and only its
//! latest form is sent; a new permission request does not wait (it is what the board is for),
//! as long as the session has not had ten summaries sent within the last second.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use protocol::{PermissionRequestId, ServerFrame, SessionId, SessionInfo, SessionSummary};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Watcher;

/// The least time between two summaries of one session, unless a request is new.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The most summaries of one session within [`WINDOW`].
const MOST_PER_WINDOW: usize = 10;
const WINDOW: Duration = Duration::from_secs(1);

/// A request as a summary lists it: the asker and the number.
type Ask = (Option<SessionId>, PermissionRequestId);

/// What was sent of one session: when (the last [`MOST_PER_WINDOW`] times) and its requests.
#[derive(Default)]
struct Sent {
    times: VecDeque<Instant>,
    asks: Vec<Ask>,
}

impl Sent {
    /// When `next` may be sent.
    fn due(&self, next: Option<&SessionSummary>) -> Instant {
        let Some(last) = self.times.back() else {
            return Instant::now();
        };
        let window = match self.times.len() {
            n if n >= MOST_PER_WINDOW => self.times[n - MOST_PER_WINDOW] + WINDOW,
            _ => *last,
        };
        let new_ask = next.is_some_and(|s| asks(s).iter().any(|a| !self.asks.contains(a)));
        let spaced = if new_ask { *last } else { *last + MIN_INTERVAL };
        window.max(spaced)
    }

    fn record(&mut self, at: Instant, summary: &SessionSummary) {
        self.times.push_back(at);
        while self.times.len() > MOST_PER_WINDOW {
            self.times.pop_front();
        }
        self.asks = asks(summary);
    }
}

fn asks(summary: &SessionSummary) -> Vec<Ask> {
    summary
        .pending
        .iter()
        .map(|p| (p.session.clone(), p.request))
        .collect()
}

/// Sends `snapshot`, `SummariesReady`, then what `watcher` sees, until the client is gone;
/// `name` fills in each listing's provider and model as the client is shown them.
pub(crate) async fn forward(
    snapshot: Vec<SessionSummary>,
    watcher: Arc<Watcher>,
    out: mpsc::Sender<ServerFrame>,
    name: impl Fn(&mut SessionInfo),
) {
    let sessions = snapshot.len() as u64;
    let mut sent: HashMap<SessionId, Sent> = HashMap::new();
    let now = Instant::now();
    for mut summary in snapshot {
        name(&mut summary.info);
        sent.entry(summary.info.id.clone())
            .or_default()
            .record(now, &summary);
        if out
            .send(ServerFrame::Summary(Box::new(summary)))
            .await
            .is_err()
        {
            return;
        }
    }
    if out
        .send(ServerFrame::SummariesReady { sessions })
        .await
        .is_err()
    {
        return;
    }
    let mut waiting: HashMap<SessionId, Option<SessionSummary>> = HashMap::new();
    loop {
        let due = waiting
            .iter()
            .filter_map(|(id, next)| sent.get(id).map(|s| s.due(next.as_ref())))
            .min();
        match due {
            Some(due) => {
                tokio::select! {
                    () = watcher.changed() => {}
                    () = tokio::time::sleep_until(due) => {}
                }
            }
            None => watcher.changed().await,
        }
        waiting.extend(watcher.take());
        let now = Instant::now();
        let ready: Vec<SessionId> = waiting
            .iter()
            .filter(|(id, next)| sent.get(*id).is_none_or(|s| s.due(next.as_ref()) <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ready {
            let Some(change) = waiting.remove(&id) else {
                continue;
            };
            let frame = match change {
                Some(mut summary) => {
                    name(&mut summary.info);
                    sent.entry(id).or_default().record(now, &summary);
                    ServerFrame::Summary(Box::new(summary))
                }
                None => {
                    sent.remove(&id);
                    ServerFrame::SummaryRemoved { session: id }
                }
            };
            if out.send(frame).await.is_err() {
                return;
            }
        }
    }
}
