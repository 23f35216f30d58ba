//! What a run changed in the session directory, and what undoing it did
//! (docs/architecture.md#checkpoints-fork-and-worktrees).

use serde::{Deserialize, Serialize};

use crate::run::RunId;

/// How one file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeKind {
    /// The file was created.
    Added,
    /// Its content or mode changed.
    Modified,
    /// It was deleted.
    Deleted,
}

/// One changed file of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The path, relative to the session directory.
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Lines added (0 for a binary file).
    pub added: u32,
    /// Lines removed (0 for a binary file).
    pub removed: u32,
    /// Whether git sees the file as binary (the patch then says only that it differs).
    pub binary: bool,
}

/// A run's changes to the session directory, from its checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunDiff {
    /// The run.
    pub run: RunId,
    /// The changed files, in path order.
    pub files: Vec<FileChange>,
    /// The unified diff (git's format), possibly cut short.
    pub patch: String,
    /// Whether `patch` was cut at the size limit.
    pub truncated: bool,
    /// Files over the checkpoint size limit, or nested repositories: their changes are not
    /// recorded, and a rewind cannot restore them.
    pub not_stored: Vec<String>,
    /// Whether the run had no end checkpoint (it is running, or the daemon stopped during it):
    /// the diff then goes up to the directory as it is now.
    pub open: bool,
}

/// What a rewind did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindReport {
    /// The run whose start the directory went back to.
    pub run: RunId,
    /// Files written back as they were before the run (changed or deleted since).
    pub restored: Vec<String>,
    /// Files the runs created, removed.
    pub removed: Vec<String>,
    /// Files changed outside the agent since the runs; left alone (without `force`).
    pub kept: Vec<String>,
    /// Files that could not be restored, with why (not stored, in the way, unwritable).
    pub failed: Vec<String>,
    /// Whether nothing was changed because this was a dry run.
    pub dry_run: bool,
}
