//! The shadow object stores of checkpoints (docs/architecture.md#checkpoints-fork-and-worktrees):
//! one per work tree (the repository's top, or the session directory outside a repository) under
//! `<data>/checkpoints/`, shared by every session working there, with refs per session and run. A
//! store is created, without any template (no hooks, no samples), at the first checkpoint; the
//! sessions of a process share one lock and one stat cache per store. A store no session refers to
//! is removed, and the objects no ref reaches are dropped when the store is repacked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use git2::Repository;

use super::CheckpointError;
use super::stat_cache::StatCache;

/// The file in a store that names the work tree it belongs to.
const ROOT_FILE: &str = "agentd-root";
/// The stat cache's file in a store.
const CACHE_FILE: &str = "agentd-stat-cache";
/// Packs past which a store is repacked into one (each checkpoint writes one pack).
const MAX_PACKS: usize = 64;

/// One store, as the sessions of this process share it.
#[derive(Debug)]
pub(crate) struct Store {
    /// The store's directory.
    pub(crate) dir: PathBuf,
    /// The work tree's root (the repository's top, or the session directory).
    pub(crate) root: PathBuf,
    /// Held while the store is used: one operation at a time writes it.
    pub(crate) state: Mutex<StoreState>,
}

/// What is kept of a store between operations.
#[derive(Debug, Default)]
pub(crate) struct StoreState {
    /// The stat cache, once read.
    pub(crate) cache: Option<StatCache>,
    /// By session directory: what its last walk saw, and the watch that tells what changed
    /// since.
    pub(crate) walks: HashMap<PathBuf, (super::walk::Walked, Option<super::watch::Watch>)>,
    /// The trees of the last snapshots, by directory.
    pub(crate) trees: super::snapshot::TreeCache,
    /// Entries of the stat cache changed since it was last written.
    pub(crate) unsaved: usize,
    /// When the stat cache was last written.
    pub(crate) saved_at: Option<std::time::Instant>,
}

/// Changed entries past which the stat cache is written at once; fewer wait up to
/// [`SAVE_EVERY`] (or the store's end). A cache on disk that is behind costs only hashing
/// again what changed since: it is never wrong, as each entry says what its file held.
const SAVE_AFTER: usize = 256;
const SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl Store {
    /// The store of the work tree `cwd` belongs to, under `stores` (`<data>/checkpoints`).
    pub(crate) fn of(stores: &Path, cwd: &Path) -> Arc<Store> {
        let root = work_tree_root(cwd);
        let dir = stores.join(format!(
            "{:016x}",
            fnv1a(root.as_os_str().as_encoded_bytes())
        ));
        static OPEN: OnceLock<Mutex<HashMap<PathBuf, Arc<Store>>>> = OnceLock::new();
        let mut open = OPEN
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        open.retain(|_, store| Arc::strong_count(store) > 1);
        open.entry(dir.clone())
            .or_insert_with(|| {
                Arc::new(Store {
                    dir,
                    root,
                    state: Mutex::default(),
                })
            })
            .clone()
    }

    /// Opens the store's repository; creates it first when `create`. `None` when it does not
    /// exist and may not be created.
    pub(crate) fn open(&self, create: bool) -> Result<Option<Repository>, CheckpointError> {
        if self.dir.join("HEAD").is_file() {
            return Ok(Some(Repository::open_bare(&self.dir)?));
        }
        if !create {
            return Ok(None);
        }
        self.create()?;
        Ok(Some(Repository::open_bare(&self.dir)?))
    }

    /// Makes the store: only what git needs to open it, written aside and renamed into place.
    fn create(&self) -> Result<(), CheckpointError> {
        let parent = self.dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        let tmp = tempfile::Builder::new()
            .prefix(".new-")
            .tempdir_in(parent)?;
        for dir in ["objects/pack", "objects/info", "refs"] {
            std::fs::create_dir_all(tmp.path().join(dir))?;
        }
        std::fs::write(tmp.path().join("HEAD"), "ref: refs/heads/main\n")?;
        std::fs::write(
            tmp.path().join("config"),
            // No delta search when packing: checkpoints are many small packs, and a repack of
            // everything must cost little.
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfilemode = true\n\tsymlinks = true\n[gc]\n\tauto = 0\n[pack]\n\twindow = 0\n\tdepth = 0\n",
        )?;
        std::fs::write(
            tmp.path().join(ROOT_FILE),
            self.root.as_os_str().as_encoded_bytes(),
        )?;
        let made = tmp.keep();
        if std::fs::rename(&made, &self.dir).is_err() {
            // Made meanwhile by someone else: theirs is as good.
            let _ = std::fs::remove_dir_all(&made);
            if !self.dir.join("HEAD").is_file() {
                return Err(std::io::Error::other(format!(
                    "cannot create the checkpoint store {}",
                    self.dir.display()
                ))
                .into());
            }
        }
        Ok(())
    }

    /// The stat cache's file.
    pub(crate) fn cache_file(&self) -> PathBuf {
        self.dir.join(CACHE_FILE)
    }

    /// Writes the stat cache if enough changed or enough time passed (or `now`).
    pub(crate) fn save_cache(&self, state: &mut StoreState, now: bool) {
        let due = now
            || state.unsaved >= SAVE_AFTER
            || state.saved_at.is_none_or(|at| at.elapsed() >= SAVE_EVERY);
        if state.unsaved == 0 || !due || !self.dir.is_dir() {
            return;
        }
        if let Some(cache) = &mut state.cache {
            match cache.save(&self.cache_file()) {
                Ok(()) => {
                    state.unsaved = 0;
                    state.saved_at = Some(std::time::Instant::now());
                }
                Err(err) => tracing::warn!("cannot save the checkpoint stat cache: {err}"),
            }
        }
    }

    /// Drops every ref of `session`; removes the store when no session is left in it, and
    /// repacks it (dropping what no ref reaches) otherwise.
    pub(crate) fn forget_session(&self, session: &str) -> Result<(), CheckpointError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(repo) = self.open(false)? else {
            return Ok(());
        };
        let prefix = format!("refs/agentd/{session}/");
        let mut left = 0;
        for reference in repo.references()?.flatten() {
            match reference.name() {
                Ok(name) if name.starts_with(&prefix) => {
                    let mut reference = reference;
                    reference.delete()?;
                }
                _ => left += 1,
            }
        }
        if left == 0 {
            drop(repo);
            *state = StoreState::default();
            std::fs::remove_dir_all(&self.dir)?;
            return Ok(());
        }
        repack(&repo, &self.dir)?;
        self.prune_cache(&mut state, &repo)
    }

    /// Repacks the store when its packs have piled up.
    pub(crate) fn maintain(
        &self,
        state: &mut StoreState,
        repo: &Repository,
    ) -> Result<(), CheckpointError> {
        if packs(&self.dir).len() > MAX_PACKS {
            repack(repo, &self.dir)?;
            self.prune_cache(state, repo)?;
        }
        Ok(())
    }

    /// Drops from the stat cache the files whose objects a repack removed: they are hashed
    /// again next time.
    fn prune_cache(
        &self,
        state: &mut StoreState,
        repo: &Repository,
    ) -> Result<(), CheckpointError> {
        let odb = repo.odb()?;
        let cache = state
            .cache
            .get_or_insert_with(|| StatCache::load(&self.cache_file()));
        cache.entries.retain(|_, cached| odb.exists(cached.oid));
        cache.save(&self.cache_file())?;
        state.unsaved = 0;
        Ok(())
    }
}

/// Moves the checkpoints an older version kept per session (`legacy`, with refs
/// `refs/runs/<run>/<point>`) into `repo` as `session`'s, then removes the old store.
pub(crate) fn take_over(
    repo: &Repository,
    legacy: &Path,
    session: &str,
) -> Result<(), CheckpointError> {
    if !legacy.join("HEAD").is_file() {
        return Ok(());
    }
    let old = Repository::open_bare(legacy)?;
    let mut builder = old.packbuilder()?;
    let mut refs = Vec::new();
    for reference in old.references_glob("refs/runs/*")?.flatten() {
        if let (Ok(name), Some(oid)) = (reference.name(), reference.target()) {
            builder.insert_commit(oid)?;
            let rest = name.trim_start_matches("refs/runs/");
            refs.push((format!("refs/agentd/{session}/{rest}"), oid));
        }
    }
    if !refs.is_empty() {
        let mut bytes = git2::Buf::new();
        builder.write_buf(&mut bytes)?;
        let odb = repo.odb()?;
        let mut writer = odb.packwriter()?;
        std::io::Write::write_all(&mut writer, &bytes)?;
        writer.commit()?;
        for (name, oid) in refs {
            repo.reference(&name, oid, true, "taken over from the session's own store")?;
        }
    }
    drop(builder);
    drop(old);
    std::fs::remove_dir_all(legacy)?;
    Ok(())
}

impl Drop for Store {
    fn drop(&mut self) {
        let mut state = std::mem::take(self.state.get_mut().unwrap_or_else(|e| e.into_inner()));
        self.save_cache(&mut state, true);
    }
}

/// Writes everything a ref reaches as one pack and removes the other packs: what no ref
/// reaches is gone.
fn repack(repo: &Repository, dir: &Path) -> Result<(), CheckpointError> {
    let old = packs(dir);
    let mut builder = repo.packbuilder()?;
    for reference in repo.references()?.flatten() {
        if let Some(oid) = reference.target() {
            builder.insert_commit(oid)?;
        }
    }
    let mut bytes = git2::Buf::new();
    builder.write_buf(&mut bytes)?;
    let odb = repo.odb()?;
    let mut writer = odb.packwriter()?;
    std::io::Write::write_all(&mut writer, &bytes)?;
    let written = writer.commit()?;
    let keep = format!("pack-{written}");
    for pack in old {
        let stem = pack.file_stem().map(|s| s.to_string_lossy().into_owned());
        if stem.as_deref() == Some(keep.as_str()) {
            continue;
        }
        for ext in ["pack", "idx", "rev", "keep"] {
            let _ = std::fs::remove_file(pack.with_extension(ext));
        }
    }
    Ok(())
}

/// The `.pack` files of a store.
fn packs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("objects/pack"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "pack"))
                .collect()
        })
        .unwrap_or_default()
}

/// The top of the git work tree `cwd` is in, else `cwd` itself. Only looks for a `.git`: the
/// user's repository is never opened.
pub(crate) fn work_tree_root(cwd: &Path) -> PathBuf {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut dir = Some(cwd.as_path());
    while let Some(d) = dir {
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            return d.to_path_buf();
        }
        dir = d.parent();
    }
    cwd
}

/// FNV-1a, for a store's directory name.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}
