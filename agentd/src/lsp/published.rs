//! The diagnostics a server last published for each file, and the wait for the ones of a new
//! version: a publish for that version (or, from a server that gives none, any publish after the
//! change), then a short quiet spell, as some servers publish several times per version, and no
//! work the server says is pending (rust-analyzer's `quiescent`); bounded by a deadline
//! (docs/architecture.md#language-servers).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lsp_types::Diagnostic;
use tokio::sync::watch;

/// How long no new publish must come before a version's diagnostics count as settled.
const QUIET: Duration = Duration::from_millis(200);

/// The longest quiet spell waited for after a slow first publish.
const MAX_QUIET: Duration = Duration::from_millis(1500);
/// Files whose diagnostics are kept at most; a server that publishes for more is ignored for
/// the others.
const MAX_FILES: usize = 2000;
/// Diagnostics kept at most per file.
const MAX_PER_FILE: usize = 500;
/// Diagnostics kept at most over all files; a publish past it keeps what fits.
const MAX_ITEMS: usize = 50_000;
/// Characters of a diagnostic's message kept (the model is shown fewer).
const MAX_MESSAGE_CHARS: usize = 1000;

/// One publish.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    /// The document version it is for, when the server said.
    pub(crate) version: Option<i32>,
    /// The diagnostics.
    pub(crate) items: Vec<Diagnostic>,
    /// When it came.
    pub(crate) at: Instant,
}

/// A server's latest publishes, by file; cheap to clone.
#[derive(Clone)]
pub(crate) struct PublishedStore {
    files: Arc<Mutex<HashMap<PathBuf, Published>>>,
    /// Whether the server said it has work pending.
    busy: Arc<AtomicBool>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for PublishedStore {
    fn default() -> Self {
        PublishedStore {
            files: Arc::default(),
            busy: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
        }
    }
}

/// `item` with only what the daemon reads of it (range, severity, code, source, the message's
/// start): a server's related information and data can be large.
fn slim(item: &mut Diagnostic) {
    if let Some((cut, _)) = item.message.char_indices().nth(MAX_MESSAGE_CHARS) {
        item.message.truncate(cut);
    }
    item.related_information = None;
    item.data = None;
    item.code_description = None;
    item.tags = None;
    if let Some(source) = &mut item.source
        && let Some((cut, _)) = source.char_indices().nth(100)
    {
        source.truncate(cut);
    }
    if let Some(lsp_types::NumberOrString::String(code)) = &mut item.code
        && let Some((cut, _)) = code.char_indices().nth(100)
    {
        code.truncate(cut);
    }
}

impl PublishedStore {
    /// Records a publish for `path`.
    pub(crate) fn record(&self, path: PathBuf, version: Option<i32>, mut items: Vec<Diagnostic>) {
        items.truncate(MAX_PER_FILE);
        {
            let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
            if files.len() >= MAX_FILES && !files.contains_key(&path) {
                return;
            }
            let others: usize = files
                .iter()
                .filter(|(p, _)| **p != path)
                .map(|(_, f)| f.items.len())
                .sum();
            items.truncate(MAX_ITEMS.saturating_sub(others));
            items.iter_mut().for_each(slim);
            files.insert(
                path,
                Published {
                    version,
                    items,
                    at: Instant::now(),
                },
            );
        }
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Records whether the server has work pending (it said so).
    pub(crate) fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::SeqCst);
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The latest publish for `path`.
    pub(crate) fn get(&self, path: &Path) -> Option<Published> {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .cloned()
    }

    /// Forgets `path`'s diagnostics (it was closed: a later open starts its versions anew).
    pub(crate) fn forget(&self, path: &Path) {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(path);
    }

    /// Forgets everything (the server was started again and publishes anew).
    pub(crate) fn clear(&self) {
        self.files.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.busy.store(false, Ordering::SeqCst);
    }

    /// The diagnostics of `path` at `version` (sent at `sent`), once settled; `None` when none
    /// came by `deadline`.
    pub(crate) async fn settled(
        &self,
        path: &Path,
        version: i32,
        sent: Instant,
        deadline: tokio::time::Instant,
    ) -> Option<Published> {
        let mut changes = self.changed.subscribe();
        let fresh = |p: &Published| match p.version {
            Some(v) => v >= version,
            None => p.at >= sent,
        };
        // The first publish for the version.
        let mut last = loop {
            changes.borrow_and_update();
            if let Some(found) = self.get(path).filter(|p| fresh(p)) {
                break found;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return None },
                () = tokio::time::sleep_until(deadline) => return None,
            }
        };
        // Then quiet: no newer publish for a while. A server that was slow to publish (a
        // loaded machine, a cold start) is slow with its later passes too (pyright publishes
        // the syntax pass before the checker's): the spell is at least as long as the first
        // publish took, up to `MAX_QUIET`.
        let quiet = QUIET
            .max(last.at.saturating_duration_since(sent))
            .min(MAX_QUIET);
        loop {
            let quiet_end = tokio::time::Instant::from_std(last.at + quiet).min(deadline);
            tokio::time::sleep_until(quiet_end).await;
            match self.get(path) {
                Some(newer) if newer.at > last.at && tokio::time::Instant::now() < deadline => {
                    last = newer;
                }
                Some(newer) => {
                    last = newer;
                    break;
                }
                None => break,
            }
        }
        // And no work pending that may publish more.
        while self.busy.load(Ordering::SeqCst) {
            changes.borrow_and_update();
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        Some(self.get(path).filter(|p| p.at >= last.at).unwrap_or(last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_wait_ends_on_the_versions_publish_and_not_before() {
        let store = PublishedStore::default();
        let path = PathBuf::from("/p/m.py");
        store.record(path.clone(), Some(1), Vec::new());
        let sent = Instant::now();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let waiting = {
            let (store, path) = (store.clone(), path.clone());
            tokio::spawn(async move { store.settled(&path, 2, sent, deadline).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        store.record(path.clone(), Some(2), vec![Diagnostic::default()]);
        let found = waiting.await.unwrap().unwrap();
        assert_eq!(found.version, Some(2));
        assert_eq!(found.items.len(), 1);
        let none = store
            .settled(
                &path,
                3,
                Instant::now(),
                tokio::time::Instant::now() + Duration::from_millis(20),
            )
            .await;
        assert!(none.is_none());
    }

    #[tokio::test]
    async fn a_server_with_work_pending_is_waited_for() {
        let store = PublishedStore::default();
        let path = PathBuf::from("/p/lib.rs");
        store.set_busy(true);
        store.record(path.clone(), Some(1), Vec::new());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let waiting = {
            let (store, path) = (store.clone(), path.clone());
            tokio::spawn(async move { store.settled(&path, 1, Instant::now(), deadline).await })
        };
        tokio::time::sleep(QUIET * 2).await;
        assert!(!waiting.is_finished());
        store.record(path.clone(), Some(1), vec![Diagnostic::default()]);
        store.set_busy(false);
        assert_eq!(waiting.await.unwrap().unwrap().items.len(), 1);
    }
}
