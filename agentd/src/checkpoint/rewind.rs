//! Rewinding: the session directory put back as it was before a run, undoing that run and every
//! later one. Only the files those runs changed are touched; one that was changed again outside
//! the agent since (its content is not what the agent left) is kept unless forced.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Tree};
use protocol::{RewindReport, RunId};

use super::CheckpointConfig;
use super::{Checkpoint, CheckpointError, Checkpoints, Point, snapshot};

/// A file as a checkpoint holds it: its blob and git file mode; `None` when it is absent.
type Entry = Option<(Oid, i32)>;

/// Paths the runs changed, each with what the last run to change it left (`None`: unknown).
type Touched = BTreeMap<PathBuf, Option<Entry>>;

const LINK: i32 = 0o120000;
const EXECUTABLE: i32 = 0o100755;

impl Checkpoints {
    /// Puts the directory back as it was before `run` (the last run with a checkpoint, when
    /// `None`). With `dry_run`, only says what it would do.
    pub fn rewind(
        &self,
        run: Option<RunId>,
        force: bool,
        dry_run: bool,
        limits: &CheckpointConfig,
    ) -> Result<RewindReport, CheckpointError> {
        let (mut state, repo) = self.open(false)?;
        let odb = repo.odb()?;
        // The directory as it is now is only compared with: its snapshot stays in memory.
        let _staging = snapshot::Staging::new(&odb)?;
        let runs = self.runs(&repo);
        let run = Self::pick(&runs, run)?;
        let before = self
            .load(&repo, run, Point::Start)
            .ok_or_else(|| CheckpointError::Missing(format!("run {run} has no checkpoint")))?;
        let now = self.look(&mut state, &odb, limits)?;
        let now = Checkpoint {
            tree: now.tree,
            extras: now.extras,
        };
        let (touched, not_stored) = self.touched_since(&repo, &runs, run, &now)?;
        let (before_tree, now_tree) = (repo.find_tree(before.tree)?, repo.find_tree(now.tree)?);
        let mut report = RewindReport {
            run,
            restored: Vec::new(),
            removed: Vec::new(),
            kept: Vec::new(),
            failed: not_stored
                .into_iter()
                .map(|path| format!("{path}: not stored (over the size limit, or a repository)"))
                .collect(),
            dry_run,
        };
        let (mut writes, mut removals) = (Vec::new(), Vec::new());
        for (path, left_by_agent) in touched {
            let target = entry(&before_tree, &path);
            let current = entry(&now_tree, &path);
            if current == target {
                continue;
            }
            // Changed since the agent left it, unknown, or too large to compare: the user's.
            let theirs =
                left_by_agent != Some(current) || now.extras.not_stored.contains(&shown(&path));
            if theirs && !force {
                report.kept.push(shown(&path));
                continue;
            }
            match target {
                None => removals.push(path),
                Some(blob) => writes.push((path, blob)),
            }
        }
        if dry_run {
            report.removed = removals.iter().map(|p| shown(p)).collect();
            report.restored = writes.iter().map(|(p, _)| shown(p)).collect();
            return Ok(report);
        }
        let mut failed = Vec::new();
        removals.retain(|path| match remove(&self.cwd, path) {
            Ok(()) => true,
            Err(err) => {
                failed.push(format!("{}: {err}", shown(path)));
                false
            }
        });
        remove_emptied_dirs(&self.cwd, &removals, &before_tree);
        report.removed = removals.iter().map(|p| shown(p)).collect();
        for (path, (blob, mode)) in writes {
            let exact = before.extras.modes.get(&shown(&path)).copied();
            match write(&repo, &self.cwd, &path, blob, mode, exact) {
                Ok(()) => report.restored.push(shown(&path)),
                Err(err) => failed.push(format!("{}: {err}", shown(&path))),
            }
        }
        report.failed.extend(failed);
        Ok(report)
    }
}

impl Checkpoints {
    /// Every path the runs from `run` on changed, with the state the last run that changed it left
    /// it in (`None` when that run's end was not recorded: the daemon stopped during it, so what
    /// came after cannot be told from what it did); and the files those runs' checkpoints could not
    /// store. `runs` are the runs with a checkpoint, in order.
    fn touched_since(
        &self,
        repo: &Repository,
        runs: &[RunId],
        run: RunId,
        now: &Checkpoint,
    ) -> Result<(Touched, BTreeSet<String>), CheckpointError> {
        let mut touched = BTreeMap::new();
        let mut not_stored = BTreeSet::new();
        for &later in runs.iter().filter(|r| **r >= run) {
            let Some(start) = self.load(repo, later, Point::Start) else {
                continue;
            };
            let (end, known) = match self.load(repo, later, Point::End) {
                Some(end) => (end, true),
                None => (
                    self.next_start(repo, runs, later)
                        .unwrap_or_else(|| now.clone()),
                    false,
                ),
            };
            not_stored.extend(start.extras.not_stored.iter().cloned());
            not_stored.extend(end.extras.not_stored.iter().cloned());
            let (old, new) = (repo.find_tree(start.tree)?, repo.find_tree(end.tree)?);
            let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
            for delta in diff.deltas() {
                for file in [delta.old_file(), delta.new_file()] {
                    // Names are bytes: one that is not UTF-8 is still restored under its own name.
                    if let Some(bytes) = file.path_bytes() {
                        let path = PathBuf::from(std::ffi::OsStr::from_bytes(bytes));
                        let left = known.then(|| entry(&new, &path));
                        touched.insert(path, left);
                    }
                }
            }
        }
        Ok((touched, not_stored))
    }
}

/// A path as the user reads it.
fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn entry(tree: &Tree, path: &Path) -> Entry {
    let entry = tree.get_path(path).ok()?;
    (entry.kind() == Some(git2::ObjectType::Blob)).then(|| (entry.id(), entry.filemode()))
}

/// Refuses a path whose parent directories are not plain directories inside `cwd`: a symlink
/// put in the way must not send a write elsewhere.
fn checked_parent(cwd: &Path, relative: &Path, create: bool) -> std::io::Result<PathBuf> {
    let mut dir = cwd.to_path_buf();
    if let Some(parent) = relative.parent() {
        for part in parent.components() {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(std::io::Error::other(format!(
                        "{} is in the way (not a directory)",
                        dir.strip_prefix(cwd).unwrap_or(&dir).display()
                    )));
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound && create => {
                    std::fs::create_dir(&dir)?;
                }
                Err(err) => return Err(err),
            }
        }
    }
    Ok(dir.join(relative.file_name().unwrap_or_default()))
}

fn remove(cwd: &Path, path: &Path) -> std::io::Result<()> {
    let full = checked_parent(cwd, path, false)?;
    match std::fs::symlink_metadata(&full) {
        Ok(meta) if meta.is_dir() => Err(std::io::Error::other("is a directory now")),
        Ok(_) => std::fs::remove_file(&full),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

/// Removes the directories that removing `removed` left empty, unless the checkpoint had them.
fn remove_emptied_dirs(cwd: &Path, removed: &[PathBuf], before: &Tree) {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for path in removed {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(d.to_path_buf());
            dir = d.parent();
        }
    }
    // Deepest first, so a parent is tried after its children.
    for dir in dirs.iter().rev() {
        let existed = before
            .get_path(dir)
            .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Tree));
        if !existed {
            // Fails (and is left) when the directory is not empty.
            let _ = std::fs::remove_dir(cwd.join(dir));
        }
    }
}

/// Writes a stored file back: its content through a temporary file renamed over the path, with
/// its exact mode, or the symlink it was.
fn write(
    repo: &Repository,
    cwd: &Path,
    path: &Path,
    blob: Oid,
    mode: i32,
    exact: Option<u32>,
) -> Result<(), CheckpointError> {
    let full = checked_parent(cwd, path, true)?;
    if std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir()) {
        return Err(std::io::Error::other("a directory is in the way").into());
    }
    let blob = repo.find_blob(blob)?;
    if mode == LINK {
        let _ = std::fs::remove_file(&full);
        std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(blob.content()), &full)?;
        return Ok(());
    }
    let dir = full.parent().unwrap_or(cwd);
    let mut tmp = tempfile::Builder::new()
        .prefix(".agentd-rewind-")
        .tempfile_in(dir)?;
    tmp.write_all(blob.content())?;
    let bits = exact.unwrap_or(if mode == EXECUTABLE { 0o755 } else { 0o644 });
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(bits))?;
    tmp.persist(&full).map_err(|e| e.error)?;
    Ok(())
}
