//! Checkpoints (docs/architecture.md#checkpoints-fork-and-worktrees): the state of a session's
//! directory recorded before each run's first change and at its end, so that what the run did
//! (through any tool, `bash` included) can be shown and undone.
//!
//! The shadow object store is shared by every session of a work tree (`store`); the user's
//! own `.git` is never read or written. A snapshot walks the directory as `git status` would
//! (`.gitignore` honoured) and hashes only what changed since the store's last one
//! (`stat_cache`); bytes are stored exactly as they are. A run's checkpoints are commits
//! under `refs/agentd/<session>/<run>/start` and `…/end`.
//!
//! Everything here blocks (file I/O, hashing); callers run it off the async threads.

mod config;
mod diff;
mod rewind;
mod snapshot;
mod stat_cache;
mod store;
mod walk;
mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use git2::{Oid, Repository};
use protocol::RunId;
use serde::{Deserialize, Serialize};

pub use config::CheckpointConfig;
pub(crate) use snapshot::Snapshot;
use snapshot::Staging;
use stat_cache::StatCache;
use store::{Store, StoreState};

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
pub(crate) struct Extras {
    /// Permission bits of files whose mode is neither 0644 nor 0755, by path.
    #[serde(default)]
    pub(crate) modes: BTreeMap<String, u32>,
    /// Files over the size limit and nested repositories, by path.
    #[serde(default)]
    pub(crate) not_stored: Vec<String>,
}

/// A recorded checkpoint.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The directory's tree.
    pub(crate) tree: Oid,
    /// What the tree does not say.
    pub(crate) extras: Extras,
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

/// One session's checkpoints. Operations on a store are serialised across its sessions.
pub struct Checkpoints {
    store: Arc<Store>,
    session: String,
    cwd: PathBuf,
    /// Where the session directory sits in the store's work tree (`sub/dir/`, or empty).
    prefix: Vec<u8>,
    /// The session's store of an older version (`<data>/sessions/<id>/checkpoints`), moved into
    /// the shared store at its first use.
    legacy: Option<PathBuf>,
}

/// What diff and rewind say before any run recorded a checkpoint.
const NOTHING_YET: &str = "no run of this session has changed files yet";

impl Checkpoints {
    /// The checkpoints of session `session` in `cwd`, in the shared store for `cwd`'s work
    /// tree under `stores` (`<data>/checkpoints`); nothing is created until the first
    /// checkpoint.
    pub fn new(stores: &Path, session: &str, cwd: PathBuf) -> Checkpoints {
        let store = Store::of(stores, &cwd);
        let real = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
        let prefix = match real.strip_prefix(&store.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => {
                let mut bytes = rel.as_os_str().as_encoded_bytes().to_vec();
                bytes.push(b'/');
                bytes
            }
            _ => Vec::new(),
        };
        Checkpoints {
            store,
            session: session.to_string(),
            cwd,
            prefix,
            legacy: None,
        }
    }

    /// Also takes over the checkpoints an older version kept in `dir` for this session.
    pub(crate) fn with_legacy(mut self, dir: PathBuf) -> Checkpoints {
        self.legacy = dir.join("HEAD").is_file().then_some(dir);
        self
    }

    /// The shared store's directory.
    pub fn store(&self) -> &Path {
        &self.store.dir
    }

    /// Opens the store (creating it first if `create`), under its lock: the state and the
    /// repository, or `NOTHING_YET` when there is no store yet.
    fn open(
        &self,
        create: bool,
    ) -> Result<(std::sync::MutexGuard<'_, StoreState>, Repository), CheckpointError> {
        let state = self.store.state.lock().unwrap_or_else(|e| e.into_inner());
        let create = create
            || self
                .legacy
                .as_ref()
                .is_some_and(|d| d.join("HEAD").is_file());
        let repo = self
            .store
            .open(create)?
            .ok_or_else(|| CheckpointError::Missing(NOTHING_YET.into()))?;
        if let Some(legacy) = &self.legacy {
            store::take_over(&repo, legacy, &self.session)?;
        }
        Ok((state, repo))
    }

    /// The stat cache of the store, read at its first use.
    fn cache<'a>(&self, state: &'a mut StoreState) -> &'a mut StatCache {
        state
            .cache
            .get_or_insert_with(|| StatCache::load(&self.store.cache_file()))
    }

    /// A snapshot of the directory now, only to compare with: nothing reaches the disk.
    fn look(
        &self,
        state: &mut StoreState,
        odb: &git2::Odb,
        limits: &CheckpointConfig,
    ) -> Result<Snapshot, CheckpointError> {
        self.walk(state, limits)?;
        Ok(self.take(state, odb, limits)?.snapshot)
    }

    /// The files of the session directory now: looked at again only where the watch of the
    /// last walk of this directory (by any session) saw changes, else all of them (and watched
    /// from now on).
    fn walk(
        &self,
        state: &mut StoreState,
        limits: &CheckpointConfig,
    ) -> Result<(), CheckpointError> {
        let too_many = |_| CheckpointError::TooManyFiles(limits.max_files);
        let walked = match state.walks.remove(&self.cwd) {
            Some((before, Some(mut watch))) => {
                let changes = watch.changes();
                let walked =
                    walk::rewalk(&self.cwd, &before, &changes, limits.max_files, &mut watch)
                        .map_err(too_many)?;
                (walked, Some(watch))
            }
            _ => {
                let mut watch = watch::Watch::new();
                let walked =
                    walk::walk(&self.cwd, limits.max_files, watch.as_mut()).map_err(too_many)?;
                (walked, watch)
            }
        };
        state.walks.insert(self.cwd.clone(), walked);
        Ok(())
    }

    /// A snapshot of what the last walk of the session directory found.
    fn take(
        &self,
        state: &mut StoreState,
        odb: &git2::Odb,
        limits: &CheckpointConfig,
    ) -> Result<snapshot::Taken, CheckpointError> {
        if state.cache.is_none() {
            state.cache = Some(StatCache::load(&self.store.cache_file()));
        }
        let StoreState {
            cache,
            walks,
            trees,
            ..
        } = state;
        let (Some(cache), Some((walked, _))) = (cache.as_ref(), walks.get(&self.cwd)) else {
            return Err(CheckpointError::Missing(
                "the directory was not walked".into(),
            ));
        };
        snapshot::take(odb, cache, trees, &self.prefix, &self.cwd, walked, limits)
    }

    /// Records the directory's state as `point` of `run`.
    pub fn record(
        &self,
        run: RunId,
        point: Point,
        limits: &CheckpointConfig,
    ) -> Result<Checkpoint, CheckpointError> {
        let (mut state, repo) = self.open(true)?;
        let odb = repo.odb()?;
        let staging = Staging::new(&odb)?;
        self.walk(&mut state, limits)?;
        let snapshot::Taken {
            snapshot,
            update,
            written,
        } = self.take(&mut state, &odb, limits)?;
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
        // Objects first, then the cache that counts on them, then the name of the checkpoint.
        staging.persist(&repo, commit, &written)?;
        let cache = self.cache(&mut state);
        state.unsaved += update.apply(cache);
        self.store.save_cache(&mut state, false);
        repo.reference(&self.ref_name(run, point), commit, true, "checkpoint")?;
        self.store.maintain(&mut state, &repo)?;
        Ok(Checkpoint {
            tree: snapshot.tree,
            extras: snapshot.extras,
        })
    }

    /// Drops this session's checkpoints (the session is deleted); the store goes when no
    /// session is left in it.
    pub(crate) fn delete(&self) -> Result<(), CheckpointError> {
        self.store.forget_session(&self.session)
    }

    /// Forgets the checkpoints of `run`, which changed nothing (their objects stay,
    /// unreferenced, until the store is repacked).
    pub(crate) fn forget(&self, run: RunId) {
        if let Ok((_state, repo)) = self.open(false) {
            for point in [Point::Start, Point::End] {
                if let Ok(mut reference) = repo.find_reference(&self.ref_name(run, point)) {
                    let _ = reference.delete();
                }
            }
        }
    }

    /// The checkpoint `point` of `run`, if one was recorded (by this daemon or an earlier one).
    pub(crate) fn recorded(&self, run: RunId, point: Point) -> Option<Checkpoint> {
        let (_state, repo) = self.open(false).ok()?;
        self.load(&repo, run, point)
    }

    /// The checkpoint `point` of `run`, if it was recorded.
    fn load(&self, repo: &Repository, run: RunId, point: Point) -> Option<Checkpoint> {
        let reference = repo.find_reference(&self.ref_name(run, point)).ok()?;
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
    fn runs(&self, repo: &Repository) -> Vec<RunId> {
        let mut runs: Vec<RunId> = repo
            .references_glob(&format!("refs/agentd/{}/*/start", self.session))
            .map(|mut refs| {
                refs.names()
                    .flatten()
                    .filter_map(|name| name.split('/').nth(3)?.parse().ok())
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
    fn end_of(&self, repo: &Repository, runs: &[RunId], run: RunId) -> Option<Checkpoint> {
        self.load(repo, run, Point::End)
            .or_else(|| self.next_start(repo, runs, run))
    }

    /// The start of the run after `run`, where a run the daemon did not live to finish ended;
    /// `None` when it is still going, or was the last.
    fn next_start(&self, repo: &Repository, runs: &[RunId], run: RunId) -> Option<Checkpoint> {
        runs.iter()
            .find(|r| **r > run)
            .and_then(|next| self.load(repo, *next, Point::Start))
    }

    fn ref_name(&self, run: RunId, point: Point) -> String {
        format!("refs/agentd/{}/{run}/{}", self.session, point.name())
    }
}

#[cfg(test)]
mod tests;
