//! The open connections, so that no client can keep others out or pin the daemon's memory:
//! - the bytes held for unfinished frames, across all connections, stay under a budget; past
//!   it the connection whose frame began first is dropped;
//! - at the connection limit, connections that said `Hello` and nothing since (no request, no
//!   subscription) are closed, oldest first, so a new client always gets in.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::ConnectionId;

/// The most bytes held for unfinished frames across all connections.
pub(crate) const FRAME_BUDGET: usize = 64 * 1024 * 1024;

/// The open connections.
#[derive(Debug)]
pub(crate) struct Connections {
    inner: Mutex<Inner>,
    budget: usize,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<u64, Entry>,
    held: usize,
}

#[derive(Debug)]
struct Entry {
    opened: Instant,
    /// No request or subscription yet.
    idle: bool,
    /// Bytes held for the frame being read, and when it began.
    partial: usize,
    partial_since: Option<Instant>,
    /// Closes the connection.
    close: CancellationToken,
}

/// A connection's place in the table; leaving the table when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    table: Arc<Connections>,
    id: u64,
    /// Fires when the table closes the connection (evicted, or its frame dropped).
    pub(crate) closed: CancellationToken,
}

impl Connections {
    /// A table whose unfinished frames may hold `budget` bytes in all.
    pub(crate) fn new(budget: usize) -> Arc<Connections> {
        Arc::new(Connections {
            inner: Mutex::default(),
            budget,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open connections.
    pub(crate) fn count(&self) -> usize {
        self.lock().entries.len()
    }

    /// Bytes held for unfinished frames now.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.lock().held
    }

    /// Takes a place for connection `id`, closing the oldest idle connection when `limit` are
    /// open; `None` when all of them are busy.
    pub(crate) fn open(self: &Arc<Self>, id: ConnectionId, limit: usize) -> Option<Slot> {
        let mut inner = self.lock();
        while inner.entries.len() >= limit.max(1) {
            let oldest = inner
                .entries
                .iter()
                .filter(|(_, e)| e.idle)
                .min_by_key(|(_, e)| e.opened)
                .map(|(id, _)| *id)?;
            if let Some(entry) = inner.entries.remove(&oldest) {
                inner.held -= entry.partial;
                entry.close.cancel();
                tracing::info!(
                    conn = oldest,
                    "closed a connection idle since Hello to let a new one in"
                );
            }
        }
        let closed = CancellationToken::new();
        inner.entries.insert(
            id.0,
            Entry {
                opened: Instant::now(),
                idle: true,
                partial: 0,
                partial_since: None,
                close: closed.clone(),
            },
        );
        Some(Slot {
            table: self.clone(),
            id: id.0,
            closed,
        })
    }
}

impl Slot {
    /// The connection sent a request or subscribed: it is no longer idle.
    pub(crate) fn busy(&self) {
        if let Some(entry) = self.table.lock().entries.get_mut(&self.id) {
            entry.idle = false;
        }
    }

    /// Asks for `bytes` more for this connection's unfinished frame. Past the budget, the
    /// connection whose frame began first is dropped until the bytes fit; false when that is
    /// this one.
    pub(crate) fn grow(&self, bytes: usize) -> bool {
        let mut inner = self.table.lock();
        if inner
            .entries
            .get(&self.id)
            .is_none_or(|e| e.close.is_cancelled())
        {
            return false;
        }
        loop {
            if inner.held + bytes <= self.table.budget {
                break;
            }
            let oldest = inner
                .entries
                .iter()
                .filter(|(_, e)| e.partial > 0)
                .min_by_key(|(_, e)| e.partial_since)
                .map(|(id, _)| *id);
            let Some(oldest) = oldest.filter(|id| *id != self.id) else {
                return false;
            };
            let entry = inner.entries.get_mut(&oldest).expect("just found");
            let freed = std::mem::take(&mut entry.partial);
            entry.partial_since = None;
            entry.close.cancel();
            inner.held -= freed;
            tracing::warn!(
                conn = oldest,
                freed,
                "dropped an unfinished frame: too many bytes held for unfinished frames"
            );
        }
        inner.held += bytes;
        if let Some(entry) = inner.entries.get_mut(&self.id) {
            entry.partial += bytes;
            entry.partial_since.get_or_insert_with(Instant::now);
        }
        true
    }

    /// The frame being read is complete (or given up): its bytes are no longer held here.
    pub(crate) fn frame_done(&self) {
        let mut inner = self.table.lock();
        let freed = inner
            .entries
            .get_mut(&self.id)
            .map(|e| {
                e.partial_since = None;
                std::mem::take(&mut e.partial)
            })
            .unwrap_or(0);
        inner.held -= freed;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.table.lock();
        if let Some(entry) = inner.entries.remove(&self.id) {
            inner.held -= entry.partial;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_limit_the_oldest_idle_connection_makes_room() {
        let table = Connections::new(FRAME_BUDGET);
        let a = table.open(ConnectionId(1), 2).unwrap();
        let b = table.open(ConnectionId(2), 2).unwrap();
        a.busy();
        let c = table.open(ConnectionId(3), 2).expect("b was idle");
        assert!(b.closed.is_cancelled());
        assert!(!a.closed.is_cancelled());
        c.busy();
        assert!(table.open(ConnectionId(4), 2).is_none(), "nobody is idle");
        assert_eq!(table.count(), 2);
    }

    #[test]
    fn past_the_budget_the_oldest_unfinished_frame_is_dropped() {
        let table = Connections::new(100);
        let a = table.open(ConnectionId(1), 10).unwrap();
        let b = table.open(ConnectionId(2), 10).unwrap();
        assert!(a.grow(60));
        assert!(b.grow(30));
        assert!(b.grow(30), "a's older frame makes room");
        assert!(a.closed.is_cancelled());
        assert_eq!(table.held(), 60);
        assert!(!b.grow(50), "b itself is now the oldest");
        b.frame_done();
        assert_eq!(table.held(), 0);
        drop(a);
        drop(b);
        assert_eq!(table.count(), 0);
    }
}
