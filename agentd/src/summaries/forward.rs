//! Sends one client the summaries: every session once, then changes, each session at most
//! ten times a second (a change that comes sooner waits, and only its latest form is sent).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use protocol::{ServerFrame, SessionId, SessionSummary};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Watcher;

/// The least time between two summaries of one session.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Sends `snapshot`, `SummariesReady`, then what `watcher` sees, until the client is gone.
pub async fn forward(
    snapshot: Vec<SessionSummary>,
    watcher: Arc<Watcher>,
    out: mpsc::Sender<ServerFrame>,
) {
    let sessions = snapshot.len() as u64;
    for summary in snapshot {
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
    let mut sent: HashMap<SessionId, Instant> = HashMap::new();
    let mut waiting: HashMap<SessionId, Option<SessionSummary>> = HashMap::new();
    loop {
        let due = waiting
            .keys()
            .filter_map(|id| sent.get(id))
            .min()
            .map(|at| *at + MIN_INTERVAL);
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
            .keys()
            .filter(|id| sent.get(*id).is_none_or(|at| *at + MIN_INTERVAL <= now))
            .cloned()
            .collect();
        for id in ready {
            let Some(change) = waiting.remove(&id) else {
                continue;
            };
            let frame = match change {
                Some(summary) => {
                    sent.insert(id, now);
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
        // Times of sessions quiet for a while are not needed any more.
        if sent.len() > 4 * waiting.len() + 1024 {
            sent.retain(|_, at| now.duration_since(*at) < MIN_INTERVAL);
        }
    }
}
