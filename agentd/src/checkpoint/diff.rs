//! What a run changed: the difference between its start and end checkpoints, as a file list
//! and a unified diff in git's format.

use git2::{Delta, DiffFormat, DiffOptions, Repository, Tree};
use protocol::{ChangeKind, FileChange, RunDiff, RunId};

use super::CheckpointConfig;
use super::{CheckpointError, Checkpoints, snapshot};

/// The largest patch sent; a longer one is cut with a note (the file list stays whole).
pub(crate) const MAX_PATCH_BYTES: usize = 4 << 20;

impl Checkpoints {
    /// What `run` (the last run with a checkpoint, when `None`) changed. A run without an end
    /// checkpoint is compared with the directory as it is now.
    pub fn diff(
        &self,
        run: Option<RunId>,
        limits: &CheckpointConfig,
    ) -> Result<RunDiff, CheckpointError> {
        let (mut state, repo) = self.open(false)?;
        let odb = repo.odb()?;
        // A snapshot of the directory as it is is only compared with: it stays in memory.
        let _staging = snapshot::Staging::new(&odb)?;
        let runs = self.runs(&repo);
        let run = Self::pick(&runs, run)?;
        let start = self
            .load(&repo, run, super::Point::Start)
            .ok_or_else(|| CheckpointError::Missing(format!("run {run} has no checkpoint")))?;
        let (end, open) = match self.end_of(&repo, &runs, run) {
            Some(end) => (end, false),
            None => {
                let now = self.look(&mut state, &odb, limits)?;
                (
                    super::Checkpoint {
                        tree: now.tree,
                        extras: now.extras,
                    },
                    true,
                )
            }
        };
        let (old, new) = (repo.find_tree(start.tree)?, repo.find_tree(end.tree)?);
        let (files, patch, truncated) = changes(&repo, &old, &new, MAX_PATCH_BYTES)?;
        let mut not_stored = start.extras.not_stored;
        not_stored.extend(end.extras.not_stored);
        not_stored.sort();
        not_stored.dedup();
        Ok(RunDiff {
            run,
            files,
            patch,
            truncated,
            not_stored,
            open,
        })
    }
}

/// The changed files between two trees, and their patch cut at `max_patch` bytes.
pub(super) fn changes(
    repo: &Repository,
    old: &Tree,
    new: &Tree,
    max_patch: usize,
) -> Result<(Vec<FileChange>, String, bool), CheckpointError> {
    let mut options = DiffOptions::new();
    options.context_lines(3).show_binary(false);
    let diff = repo.diff_tree_to_tree(Some(old), Some(new), Some(&mut options))?;
    let mut files = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        let kind = match delta.status() {
            Delta::Added => ChangeKind::Added,
            Delta::Deleted => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        let file = delta.new_file().path().or(delta.old_file().path());
        let path = file
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (mut added, mut removed, mut binary) = (0, 0, delta.flags().is_binary());
        if let Ok(Some(patch)) = git2::Patch::from_diff(&diff, i) {
            if let Ok((_, adds, dels)) = patch.line_stats() {
                (added, removed) = (adds as u32, dels as u32);
            }
            binary |= patch.delta().flags().is_binary();
        }
        files.push(FileChange {
            path,
            kind,
            added,
            removed,
            binary,
        });
    }
    let mut patch = Vec::new();
    let mut truncated = false;
    diff.print(DiffFormat::Patch, |_, _, line| {
        let origin = line.origin();
        let extra = if matches!(origin, '+' | '-' | ' ') {
            1
        } else {
            0
        };
        if patch.len() + line.content().len() + extra > max_patch {
            truncated = true;
            return false;
        }
        if extra == 1 {
            patch.push(origin as u8);
        }
        patch.extend_from_slice(line.content());
        true
    })
    .or_else(|e| if truncated { Ok(()) } else { Err(e) })?;
    Ok((
        files,
        String::from_utf8_lossy(&patch).into_owned(),
        truncated,
    ))
}
