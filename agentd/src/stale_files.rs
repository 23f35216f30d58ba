//! The stale-file guard (docs/architecture.md#tools): each session remembers the content of the
//! files its agent read, the daemon watches those files, an outside change is reported to the
//! session's clients, and `edit`/`write` refuse a file that changed since it was last read. The
//! agent's own writes update what the session remembers before they touch the disk, so they never
//! count as outside changes.

use std::collections::HashMap;
use std::hash::Hasher;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// Files up to this size are remembered by the stale-file guard; larger ones are not tracked.
pub(crate) const TRACKED_BYTES: u64 = 16 * 1024 * 1024;

/// What a session remembers of one file: a hash of its content and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    hash: u64,
    len: u64,
}

impl Stamp {
    /// The stamp of `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> Stamp {
        let mut builder = StampBuilder::default();
        builder.write(bytes);
        builder.finish()
    }

    /// The stamp of the regular file at `path`, read in pieces; `None` when it cannot be read,
    /// is not a regular file, or is too large to be tracked.
    fn of_file(path: &Path) -> Option<Stamp> {
        let mut file = crate::regular_file::open(path).ok()?;
        let mut builder = StampBuilder::default();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = file.read(&mut buf).ok()?;
            if n == 0 {
                return Some(builder.finish());
            }
            builder.write(buf.get(..n)?);
            if builder.len > TRACKED_BYTES {
                return None;
            }
        }
    }
}

/// Builds a [`Stamp`] from a file's content as it is read, piece by piece.
#[derive(Default)]
pub(crate) struct StampBuilder {
    hasher: std::collections::hash_map::DefaultHasher,
    len: u64,
}

impl StampBuilder {
    /// Adds the next piece of content.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        self.hasher.write(bytes);
        self.len += bytes.len() as u64;
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The stamp of everything written.
    pub(crate) fn finish(self) -> Stamp {
        Stamp {
            hash: self.hasher.finish(),
            len: self.len,
        }
    }
}

/// Why a change to a file is refused until the agent reads it (again).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Stale {
    /// The agent never read the file in this session.
    #[error("{shown} was not read in this session, so what would change is not known")]
    NotRead {
        /// The file as the model names it.
        shown: String,
    },
    /// The file changed on disk since the agent last read it.
    #[error("the file changed on disk since you last read it (someone else edited it)")]
    Changed,
}

/// The files one session has read.
pub(crate) struct FileTracker {
    files: Mutex<HashMap<PathBuf, Stamp>>,
    /// Reported outside changes, so one change is reported once.
    reported: Mutex<HashMap<PathBuf, Option<Stamp>>>,
    watch: Box<dyn Fn(&Path) + Send + Sync>,
}

impl std::fmt::Debug for FileTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileTracker").finish_non_exhaustive()
    }
}

impl FileTracker {
    /// A tracker that asks `watch` to watch every file it starts to track.
    pub(crate) fn new(watch: impl Fn(&Path) + Send + Sync + 'static) -> FileTracker {
        FileTracker {
            files: Mutex::default(),
            reported: Mutex::default(),
            watch: Box::new(watch),
        }
    }

    /// Remembers that the agent read `path`, whose content has `stamp`.
    pub(crate) fn read(&self, path: &Path, stamp: Stamp) {
        self.remember(path, stamp);
        self.reported
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(path);
    }

    /// Remembers `stamp` as the content the agent knows of `path`, watching it from now on.
    fn remember(&self, path: &Path, stamp: Stamp) {
        let first = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), stamp)
            .is_none();
        if first {
            (self.watch)(path);
        }
    }

    /// Refuses a change to a file the agent has not read (`shown` is how it names the file),
    /// or whose content changed since it last read it.
    pub(crate) fn check_read(&self, path: &Path, shown: &str) -> Result<(), Stale> {
        let known = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(path);
        if !known {
            return Err(Stale::NotRead {
                shown: shown.to_string(),
            });
        }
        self.check_unchanged(path)
    }

    /// Refuses a write to a tracked file whose content changed since the agent last read it.
    pub(crate) fn check_unchanged(&self, path: &Path) -> Result<(), Stale> {
        let known = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .copied();
        match known {
            Some(stamp) if Stamp::of_file(path) != Some(stamp) => Err(Stale::Changed),
            _ => Ok(()),
        }
    }

    /// Remembers the content the agent is about to write, so that its own write is not taken
    /// for an outside change.
    pub(crate) fn writing(&self, path: &Path, bytes: &[u8]) {
        self.remember(path, Stamp::of(bytes));
    }

    /// Whether `path` now differs from what the agent knows, not yet reported. Marks it
    /// reported.
    pub(crate) fn changed_outside(&self, path: &Path) -> bool {
        let Some(known) = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .copied()
        else {
            return false;
        };
        let now = Stamp::of_file(path);
        if now == Some(known) {
            return false;
        }
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        if reported.get(path) == Some(&now) {
            return false;
        }
        reported.insert(path.to_path_buf(), now);
        true
    }
}

/// A file change seen by the watcher, for the session that tracks the file.
pub(crate) type Notice = Box<dyn Fn(&Path) + Send + Sync>;

/// The daemon's one file watcher: it watches the directories of tracked files and tells the
/// sessions tracking a file when it changes.
#[derive(Clone)]
pub(crate) struct FileWatcher {
    inner: Arc<Mutex<WatchState>>,
}

struct WatchState {
    watcher: Option<RecommendedWatcher>,
    dirs: HashMap<PathBuf, usize>,
    /// Who is told of changes to each file: the owner (a session) and its notice.
    files: HashMap<PathBuf, Vec<(u64, Arc<Notice>)>>,
}

impl FileWatcher {
    /// Starts the watcher; changes are handled on a task of the current runtime.
    pub(crate) fn start() -> FileWatcher {
        let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
        // notify calls back on its own thread: hand the paths over to the runtime.
        let watcher = notify::recommended_watcher(move |result: notify::Result<notify::Event>| {
            if let Ok(event) = result
                && !event.kind.is_access()
            {
                for path in event.paths {
                    let _ = tx.send(path);
                }
            }
        });
        let watcher = match watcher {
            Ok(watcher) => Some(watcher),
            Err(err) => {
                tracing::warn!("file watching is unavailable: {err}");
                None
            }
        };
        let inner = Arc::new(Mutex::new(WatchState {
            watcher,
            dirs: HashMap::new(),
            files: HashMap::new(),
        }));
        let state = inner.clone();
        tokio::spawn(async move {
            while let Some(path) = rx.recv().await {
                let notices = state
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .files
                    .get(&path)
                    .cloned()
                    .unwrap_or_default();
                for (_, notice) in notices {
                    notice(&path);
                }
            }
        });
        FileWatcher { inner }
    }

    /// Calls `notice` whenever `path` changes, until `owner` is forgotten.
    pub fn watch(&self, path: &Path, owner: u64, notice: Arc<Notice>) {
        let mut state = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        state
            .files
            .entry(path.to_path_buf())
            .or_default()
            .push((owner, notice));
        // Directories are watched rather than files, so that files replaced by rename (as
        // editors save) stay watched.
        let Some(dir) = path.parent().map(Path::to_path_buf) else {
            return;
        };
        let count = state.dirs.entry(dir.clone()).or_insert(0);
        *count += 1;
        if *count == 1
            && let Some(watcher) = state.watcher.as_mut()
            && let Err(err) = watcher.watch(&dir, RecursiveMode::NonRecursive)
        {
            tracing::debug!(dir = %dir.display(), "cannot watch: {err}");
        }
    }
}

impl FileWatcher {
    /// Stops telling `owner` of changes; directories nobody needs are no longer watched.
    pub(crate) fn forget(&self, owner: u64) {
        let mut state = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut released: Vec<PathBuf> = Vec::new();
        state.files.retain(|path, notices| {
            let before = notices.len();
            notices.retain(|(o, _)| *o != owner);
            if let Some(dir) = path.parent() {
                released.extend(std::iter::repeat_n(
                    dir.to_path_buf(),
                    before - notices.len(),
                ));
            }
            !notices.is_empty()
        });
        for dir in released {
            let count = state.dirs.entry(dir.clone()).or_insert(1);
            *count -= 1;
            if *count == 0 {
                state.dirs.remove(&dir);
                if let Some(watcher) = state.watcher.as_mut() {
                    let _ = watcher.unwatch(&dir);
                }
            }
        }
    }

    /// Files and directories watched now.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        let state = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (state.files.len(), state.dirs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_since_it_was_read_is_refused_and_own_writes_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one").unwrap();
        let tracker = FileTracker::new(|_| {});
        tracker.read(&path, Stamp::of(b"one"));
        assert!(tracker.check_unchanged(&path).is_ok());
        tracker.writing(&path, b"two");
        std::fs::write(&path, "two").unwrap();
        assert!(!tracker.changed_outside(&path), "our own write");
        std::fs::write(&path, "three").unwrap();
        assert!(tracker.changed_outside(&path));
        assert!(!tracker.changed_outside(&path), "reported once");
        assert_eq!(tracker.check_unchanged(&path), Err(Stale::Changed));
    }

    #[tokio::test]
    async fn forgetting_an_owner_drops_its_watches_and_unneeded_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let watcher = FileWatcher::start();
        let notice = || Arc::new(Box::new(|_: &Path| {}) as Notice);
        watcher.watch(&dir.path().join("a"), 1, notice());
        watcher.watch(&dir.path().join("sub/b"), 1, notice());
        watcher.watch(&dir.path().join("a"), 2, notice());
        assert_eq!(watcher.counts(), (2, 2));
        watcher.forget(1);
        // `a` is still watched for owner 2; `sub` is no longer needed.
        assert_eq!(watcher.counts(), (1, 1));
        watcher.forget(2);
        assert_eq!(watcher.counts(), (0, 0));
    }
}
