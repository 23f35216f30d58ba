//! A session's listing and summary as the daemon's registry sees it: the session publishes each
//! change, the registry reads the latest when asked, the board's watchers hear of it
//! (docs/architecture.md#the-board), and neither the session nor the registry holds a reference to
//! the other.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use protocol::{SessionInfo, SessionSummary};

use crate::summaries::SummaryHub;

/// The latest listing and summary of one session; cheap to clone.
#[derive(Clone)]
pub(crate) struct Listing(Arc<Inner>);

struct Inner {
    summary: Mutex<SessionSummary>,
    hub: SummaryHub,
    /// The session was deleted: what its actor still publishes while it closes is not told.
    retired: AtomicBool,
}

impl Listing {
    /// A listing starting as `summary`, whose changes `hub` hears of.
    pub(crate) fn new(summary: SessionSummary, hub: SummaryHub) -> Listing {
        hub.changed(&summary);
        Listing(Arc::new(Inner {
            summary: Mutex::new(summary),
            hub,
            retired: AtomicBool::new(false),
        }))
    }

    /// The session is gone: watchers are told so, and nothing it publishes from now on.
    pub(crate) fn retire(&self) {
        let current = self.lock();
        self.0.retired.store(true, Ordering::Release);
        self.0.hub.removed(&current.info.id);
    }

    /// Publishes a new summary; watchers hear of it when it differs from the last.
    pub(crate) fn publish(&self, summary: SessionSummary) {
        let mut current = self.lock();
        if *current != summary {
            *current = summary;
            self.tell(&current);
        }
    }

    /// Changes the listing in place.
    pub(crate) fn update(&self, change: impl FnOnce(&mut SessionInfo)) {
        let mut current = self.lock();
        let before = current.info.clone();
        change(&mut current.info);
        if current.info != before {
            self.tell(&current);
        }
    }

    /// The latest listing.
    pub(crate) fn get(&self) -> SessionInfo {
        self.lock().info.clone()
    }

    /// The latest summary.
    pub(crate) fn summary(&self) -> SessionSummary {
        self.lock().clone()
    }

    /// Reads the latest listing without copying it.
    pub(crate) fn with<R>(&self, read: impl FnOnce(&SessionInfo) -> R) -> R {
        read(&self.lock().info)
    }

    fn tell(&self, summary: &SessionSummary) {
        if !self.0.retired.load(Ordering::Acquire) {
            self.0.hub.changed(summary);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SessionSummary> {
        self.0
            .summary
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
