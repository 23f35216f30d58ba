//! Checkpoints (SPEC §13): the state of a session's directory recorded before each run's first
//! change and at its end, so that what the run did (through any tool, `bash` included) can be
//! shown and undone.
//!
//! Each session has a shadow git object store under `<data>/sessions/<id>/checkpoints/`, a bare
//! repository whose work tree is the session directory for the length of one operation. The
//! user's own `.git` is never read or written: the shadow store has its own index, honours the
//! directory's `.gitignore` files, and stores bytes exactly as they are (its `info/attributes`
//! turns every filter off). A run's checkpoints are commits under `refs/runs/<run>/start` and
//! `refs/runs/<run>/end`.
//!
//! Everything here blocks (file I/O, hashing); callers run it off the async threads.

mod config;
mod diff;
mod rewind;
mod snapshot;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use git2::{Oid, Repository, RepositoryInitOptions};
use protocol::RunId;
use serde::{Deserialize, Serialize};

pub use config::CheckpointConfig;
pub use snapshot::Snapshot;
use snapshot::Staging;

/// Which end of a run a checkpoint records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Before the run's first tool that may change files.
    Start,
    /// When the run ended.
    End,
}

impl Point {
    fn name(self) -> &'static str {
        match self {
            Point::Start => "start",
            Point::End => "end",
        }
    }
}

/// What a checkpoint knows beyond its tree: the modes git does not keep, and the files it
/// could not store. Kept as JSON in the checkpoint commit's message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extras {
    /// Permission bits of files whose mode is neither 0644 nor 0755, by path.
    #[serde(default)]
    pub modes: BTreeMap<String, u32>,
    /// Files over the size limit and nested repositories, by path.
    #[serde(default)]
    pub not_stored: Vec<String>,
}

/// A recorded checkpoint.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The directory's tree.
    pub tree: Oid,
    /// What the tree does not say.
    pub extras: Extras,
}

/// Why a checkpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The shadow store failed.
    #[error("checkpoint store: {0}")]
    Git(#[from] git2::Error),
    /// A file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The directory is too large to record.
    #[error(
        "the session directory has more than {0} files (not counting ignored ones): no checkpoint is recorded; raise `checkpoints.max_files` or add a .gitignore"
    )]
    TooManyFiles(usize),
    /// The run has no checkpoint.
    #[error("{0}")]
    Missing(String),
}

/// One session's checkpoints. Operations on the store are serialised: one at a time writes the
/// shadow index.
pub struct Checkpoints {
    store: PathBuf,
    cwd: PathBuf,
    busy: Mutex<()>,
}

/// What diff and rewind say before any run recorded a checkpoint.
const NOTHING_YET: &str = "no run of this session has changed files yet";

const ATTRIBUTES: &str = "# Bytes are stored as they are: no end-of-line conversion, no filters.\n* -text -ident -filter\n";

impl Checkpoints {
    /// The checkpoints kept in `store` of the session directory `cwd`; nothing is created until
    /// the first checkpoint.
    pub fn new(store: PathBuf, cwd: PathBuf) -> Checkpoints {
        Checkpoints {
            store,
            cwd,
            busy: Mutex::new(()),
        }
    }

    /// The shadow store's directory.
    pub fn store(&self) -> &Path {
        &self.store
    }

    /// Opens the shadow store with the session directory as its work tree, creating it first
    /// if needed.
    fn open(&self, create: bool) -> Result<Repository, CheckpointError> {
        let repo = match Repository::open_bare(&self.store) {
            Ok(repo) => repo,
            Err(_) if create => {
                let repo = Repository::init_opts(
                    &self.store,
                    RepositoryInitOptions::new().bare(true).mkdir(true),
                )?;
                let mut config = repo.config()?;
                // The user's global settings must not change what is stored.
                config.set_bool("core.autocrlf", false)?;
                config.set_bool("core.filemode", true)?;
                config.set_bool("core.symlinks", true)?;
                config.set_bool("gc.auto", false)?;
                std::fs::create_dir_all(self.store.join("info"))?;
                std::fs::write(self.store.join("info").join("attributes"), ATTRIBUTES)?;
                repo
            }
            Err(_) => {
                return Err(CheckpointError::Missing(NOTHING_YET.into()));
            }
        };
        repo.set_workdir(&self.cwd, false)?;
        Ok(repo)
    }

    /// Records the directory's state as `point` of `run`.
    pub fn record(
        &self,
        run: RunId,
        point: Point,
        limits: &CheckpointConfig,
    ) -> Result<Checkpoint, CheckpointError> {
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let repo = self.open(true)?;
        let odb = repo.odb()?;
        let staging = Staging::new(&odb)?;
        let (snapshot, mut index) = snapshot::take(&repo, &self.cwd, limits)?;
        let tree = repo.find_tree(snapshot.tree)?;
        let signature = git2::Signature::new(
            "agentd",
            "agentd@localhost",
            &git2::Time::new((crate::now_ms() / 1000) as i64, 0),
        )?;
        let message = format!(
            "run {run} {}\n\n{}",
            point.name(),
            serde_json::to_string(&snapshot.extras).unwrap_or_default()
        );
        let commit = repo.commit(None, &signature, &signature, &message, &tree, &[])?;
        // Objects first, then the index that counts on them, then the name of the checkpoint.
        staging.persist(&repo, &self.store, commit)?;
        index.write()?;
        repo.reference(&ref_name(run, point), commit, true, "checkpoint")?;
        Ok(Checkpoint {
            tree: snapshot.tree,
            extras: snapshot.extras,
        })
    }

    /// Forgets the start of `run`, which changed nothing (its objects stay, unreferenced).
    pub fn forget(&self, run: RunId) {
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(repo) = self.open(false)
            && let Ok(mut reference) = repo.find_reference(&ref_name(run, Point::Start))
        {
            let _ = reference.delete();
        }
    }

    /// The checkpoint `point` of `run`, if it was recorded.
    fn load(repo: &Repository, run: RunId, point: Point) -> Option<Checkpoint> {
        let reference = repo.find_reference(&ref_name(run, point)).ok()?;
        let commit = reference.peel_to_commit().ok()?;
        let extras = commit
            .message()
            .ok()
            .and_then(|m| m.split_once("\n\n"))
            .and_then(|(_, body)| serde_json::from_str(body).ok())
            .unwrap_or_default();
        Some(Checkpoint {
            tree: commit.tree_id(),
            extras,
        })
    }

    /// The runs that have a start checkpoint, in order.
    fn runs(repo: &Repository) -> Vec<RunId> {
        let mut runs: Vec<RunId> = repo
            .references_glob("refs/runs/*/start")
            .map(|mut refs| {
                refs.names()
                    .flatten()
                    .filter_map(|name| name.split('/').nth(2)?.parse().ok())
                    .map(RunId)
                    .collect()
            })
            .unwrap_or_default();
        runs.sort();
        runs
    }

    /// `run`, or the last run with a checkpoint; an error names what is missing.
    fn pick(runs: &[RunId], run: Option<RunId>) -> Result<RunId, CheckpointError> {
        match run {
            Some(run) if runs.contains(&run) => Ok(run),
            Some(run) => Err(CheckpointError::Missing(format!(
                "run {run} has no checkpoint: it ran no tool that could change files (or checkpoints were off)"
            ))),
            None => runs
                .last()
                .copied()
                .ok_or_else(|| CheckpointError::Missing(NOTHING_YET.into())),
        }
    }

    /// Where `run` (one of `runs`) ended: its end checkpoint, else [`Checkpoints::next_start`].
    fn end_of(repo: &Repository, runs: &[RunId], run: RunId) -> Option<Checkpoint> {
        Self::load(repo, run, Point::End).or_else(|| Self::next_start(repo, runs, run))
    }

    /// The start of the run after `run`, where a run the daemon did not live to finish ended;
    /// `None` when it is still going, or was the last.
    fn next_start(repo: &Repository, runs: &[RunId], run: RunId) -> Option<Checkpoint> {
        runs.iter()
            .find(|r| **r > run)
            .and_then(|next| Self::load(repo, *next, Point::Start))
    }
}

fn ref_name(run: RunId, point: Point) -> String {
    format!("refs/runs/{run}/{}", point.name())
}

#[cfg(test)]
mod tests;
