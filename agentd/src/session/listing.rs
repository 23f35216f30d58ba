//! A session's listing as the daemon's registry sees it: the session publishes each change,
//! the registry reads the latest when asked, and neither holds a reference to the other.

use std::sync::Arc;

use protocol::SessionInfo;
use tokio::sync::watch;

/// The latest listing of one session; cheap to clone.
#[derive(Clone)]
pub struct Listing(Arc<watch::Sender<SessionInfo>>);

impl Listing {
    /// A listing starting as `info`.
    pub fn new(info: SessionInfo) -> Listing {
        Listing(Arc::new(watch::Sender::new(info)))
    }

    /// Publishes a new listing.
    pub fn publish(&self, info: SessionInfo) {
        self.0.send_replace(info);
    }

    /// Changes the listing in place.
    pub fn update(&self, change: impl FnOnce(&mut SessionInfo)) {
        self.0.send_modify(change);
    }

    /// The latest listing.
    pub fn get(&self) -> SessionInfo {
        self.0.borrow().clone()
    }

    /// Reads the latest listing without copying it.
    pub fn with<R>(&self, read: impl FnOnce(&SessionInfo) -> R) -> R {
        read(&self.0.borrow())
    }
}
