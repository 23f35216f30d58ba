//! Walking the session's tree for `grep` and `glob`: in parallel with ripgrep's `ignore`
//! (honouring `.gitignore`), regular files only, stopped by a cancel; and a newest-first
//! collection that keeps only what the output can show, plus counts of the rest.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use ignore::{DirEntry, WalkState};
use tokio_util::sync::CancellationToken;

use crate::sandbox::hidden::HiddenPaths;

/// A directory walker that honours `.gitignore` (also outside a git repository) and `.ignore`,
/// shows hidden files, and never enters `.git` or what the agent may not see (`hidden`).
pub(crate) fn walker(root: &Path, hidden: Arc<HiddenPaths>) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    // Links are not followed below the root, so its real path and the names under it give
    // each entry's real path.
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let root = root.to_path_buf();
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            if hidden.is_empty() {
                return true;
            }
            let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
            !hidden.hides_real(&real_root.join(rel))
        });
    builder
}

/// Calls a visitor for every regular file under `root`, on several threads; `make_visitor`
/// makes one visitor per thread. Symlinks are not followed, so a link to a device or a FIFO is
/// never visited. `Err` when `cancel` fired before the walk was over.
pub(crate) fn walk_files<'a, V>(
    root: &Path,
    cancel: &'a CancellationToken,
    hidden: Arc<HiddenPaths>,
    mut make_visitor: impl FnMut() -> V,
) -> Result<(), Interrupted>
where
    V: FnMut(&DirEntry) + Send + 'a,
{
    walker(root, hidden).build_parallel().run(|| {
        let mut visit = make_visitor();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_file())
            {
                visit(&entry);
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// A walk was stopped by a cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted: the run was cancelled")
    }
}

/// The modification time of a walked file; the epoch when unknown.
pub(crate) fn modified(entry: &DirEntry) -> SystemTime {
    entry
        .metadata()
        .ok()
        .and_then(|m| m.modified().ok())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Files found, newest first (ties by path). Each file weighs the output lines it would show;
/// only the newest files whose lines fit `limit` are kept, the rest are only counted.
#[derive(Debug)]
pub(crate) struct Newest<T> {
    limit: usize,
    kept: BTreeMap<(Reverse<SystemTime>, PathBuf), (usize, T)>,
    kept_weight: usize,
    /// Files seen.
    pub(crate) files: usize,
    /// Lines of every file seen.
    pub(crate) weight: usize,
}

impl<T> Newest<T> {
    /// An empty collection that keeps `limit` lines' worth of files.
    pub(crate) fn new(limit: usize) -> Newest<T> {
        Newest {
            limit,
            kept: BTreeMap::new(),
            kept_weight: 0,
            files: 0,
            weight: 0,
        }
    }

    /// Adds a file that would show `weight` lines.
    pub(crate) fn insert(&mut self, path: PathBuf, modified: SystemTime, weight: usize, value: T) {
        self.files += 1;
        self.weight += weight;
        self.kept_weight += weight;
        self.kept.insert((Reverse(modified), path), (weight, value));
        // Drop the oldest files while the newer ones already fill the output.
        while let Some(entry) = self.kept.last_entry() {
            let last = entry.get().0;
            if self.kept_weight - last < self.limit {
                break;
            }
            self.kept_weight -= last;
            entry.remove();
        }
    }

    /// The kept files, newest first.
    pub(crate) fn into_kept(self) -> impl Iterator<Item = (PathBuf, T)> {
        self.kept
            .into_iter()
            .map(|((_, path), (_, value))| (path, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_the_newest_files_that_fill_the_limit_are_kept() {
        let mut newest = Newest::new(3);
        let at = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        for (name, secs) in [("b", 2), ("a", 1), ("d", 4), ("c", 3), ("e", 4)] {
            newest.insert(PathBuf::from(name), at(secs), 1, ());
        }
        assert_eq!((newest.files, newest.weight), (5, 5));
        let kept: Vec<PathBuf> = newest.into_kept().map(|(p, ())| p).collect();
        assert_eq!(kept, ["d", "e", "c"].map(PathBuf::from));
    }

    #[test]
    fn a_heavy_file_is_kept_when_newer_ones_do_not_fill_the_limit() {
        let mut newest = Newest::new(10);
        let at = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        newest.insert(PathBuf::from("new"), at(9), 4, ());
        newest.insert(PathBuf::from("old"), at(1), 50, ());
        newest.insert(PathBuf::from("older"), at(0), 1, ());
        let kept: Vec<PathBuf> = newest.into_kept().map(|(p, ())| p).collect();
        assert_eq!(kept, ["new", "old"].map(PathBuf::from));
    }
}
