//! One subscription for the whole daemon (docs/architecture.md#the-board): every session publishes
//! its summary to the hub when it changes, and each `SubscribeSummaries` client has a [`Watcher`]
//! that keeps only the latest summary of each changed session, so a slow client costs a map, never
//! a queue. [`forward()`] sends them at most ten times a second per session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use protocol::{SessionId, SessionSummary};
use tokio::sync::Notify;

mod forward;

pub(crate) use forward::forward;

/// Where sessions publish their summaries; cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct SummaryHub(Arc<Mutex<Vec<Weak<Watcher>>>>);

/// One client's view of the changes: the latest summary of each session changed since it last
/// looked (`None` for a deleted session).
#[derive(Default)]
pub(crate) struct Watcher {
    changes: Mutex<HashMap<SessionId, Option<SessionSummary>>>,
    notify: Notify,
}

impl Watcher {
    /// The changes since the last call.
    pub(crate) fn take(&self) -> HashMap<SessionId, Option<SessionSummary>> {
        std::mem::take(&mut *lock(&self.changes))
    }

    /// Waits until something changed since the last [`Watcher::take`].
    pub(crate) async fn changed(&self) {
        self.notify.notified().await;
    }
}

impl SummaryHub {
    /// A new watcher of every change from now on; it stops with its last reference.
    pub fn watch(&self) -> Arc<Watcher> {
        let watcher = Arc::new(Watcher::default());
        let mut watchers = lock(&self.0);
        watchers.retain(|w| w.strong_count() > 0);
        watchers.push(Arc::downgrade(&watcher));
        watcher
    }

    /// A session's summary changed.
    pub(crate) fn changed(&self, summary: &SessionSummary) {
        self.tell(&summary.info.id, || Some(summary.clone()));
    }

    /// A session was deleted.
    pub(crate) fn removed(&self, id: &SessionId) {
        self.tell(id, || None);
    }

    fn tell(&self, id: &SessionId, change: impl Fn() -> Option<SessionSummary>) {
        let mut watchers = lock(&self.0);
        if watchers.is_empty() {
            return;
        }
        watchers.retain(|weak| match weak.upgrade() {
            Some(watcher) => {
                lock(&watcher.changes).insert(id.clone(), change());
                // One forwarder waits per watcher: a permit is kept when it is busy.
                watcher.notify.notify_one();
                true
            }
            None => false,
        });
    }
}

/// Locks `mutex`, also after a panic elsewhere (the data is a plain map).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests;
