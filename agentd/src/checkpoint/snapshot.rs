//! Taking a snapshot: the session directory's files (not the ignored ones) into the shadow
//! store's index and a tree. The index keeps each file's stat data, so a second snapshot hashes
//! only what changed since the first.
//!
//! New objects go to memory first ([`Staging`]) and reach the disk as one pack per checkpoint:
//! ten thousand small files are one file in the store, not ten thousand, and a snapshot that is
//! only compared with (a diff or rewind against the directory as it is) writes nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use std::io::Write;

use git2::{Index, IndexAddOption, Mempack, Odb, Oid, Repository};

use super::CheckpointConfig;
use super::{CheckpointError, Extras};

/// The directory's state: a tree in the shadow store, and what the tree does not say.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The tree.
    pub tree: Oid,
    /// Exact modes and files not stored.
    pub extras: Extras,
}

/// The objects a snapshot made, held in memory until [`Staging::persist`].
pub(super) struct Staging<'odb> {
    mempack: Mempack<'odb>,
}

impl<'odb> Staging<'odb> {
    /// Sends the new objects of `odb` (the store's object database) to memory from now on.
    pub(super) fn new(odb: &'odb Odb<'odb>) -> Result<Staging<'odb>, CheckpointError> {
        Ok(Staging {
            mempack: odb.add_new_mempack_backend(1000)?,
        })
    }

    /// Writes the objects of `commit` that the store on disk (`store`) lacks as one pack.
    pub(super) fn persist(
        &self,
        repo: &Repository,
        store: &Path,
        commit: Oid,
    ) -> Result<(), CheckpointError> {
        // A second handle sees only what is on disk.
        let disk = Repository::open_bare(store)?;
        let disk = disk.odb()?;
        let mut pack = repo.packbuilder()?;
        pack.insert_object(commit, None)?;
        insert_new(repo, &disk, &mut pack, repo.find_commit(commit)?.tree_id())?;
        let mut bytes = git2::Buf::new();
        pack.write_buf(&mut bytes)?;
        let odb = repo.odb()?;
        let mut writer = odb.packwriter()?;
        writer.write_all(&bytes)?;
        writer.commit()?;
        self.mempack.reset()?;
        Ok(())
    }
}

/// Adds to `pack` the objects of `tree` that are not on `disk`. A tree on disk has all of its
/// objects there (only whole checkpoints are written), so unchanged directories are skipped.
fn insert_new(
    repo: &Repository,
    disk: &Odb,
    pack: &mut git2::PackBuilder,
    tree: Oid,
) -> Result<(), CheckpointError> {
    if disk.exists(tree) {
        return Ok(());
    }
    pack.insert_object(tree, None)?;
    for entry in repo.find_tree(tree)?.iter() {
        match entry.kind() {
            Some(git2::ObjectType::Tree) => insert_new(repo, disk, pack, entry.id())?,
            Some(git2::ObjectType::Blob) if !disk.exists(entry.id()) => {
                pack.insert_object(entry.id(), None)?
            }
            _ => {}
        }
    }
    Ok(())
}

/// Records the work tree of `repo` (the session directory `cwd`) as a tree. The index that
/// says so is returned unwritten: it may be written only once its objects are persisted.
pub(super) fn take(
    repo: &Repository,
    cwd: &Path,
    limits: &CheckpointConfig,
) -> Result<(Snapshot, Index), CheckpointError> {
    let mut index = repo.index()?;
    let already = index.len();
    let mut added = 0usize;
    let mut not_stored: Vec<std::path::PathBuf> = Vec::new();
    let mut too_many = false;
    // Called for each new or changed file: 0 stores it, 1 skips it, a negative value stops.
    let mut check = |path: &Path, _: &[u8]| -> i32 {
        // A directory reported as such holds a repository of its own.
        if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
            not_stored.push(path.components().collect());
            return 1;
        }
        match std::fs::symlink_metadata(cwd.join(path)) {
            Ok(meta) if meta.is_file() && meta.len() > limits.max_file_bytes => {
                not_stored.push(path.to_path_buf());
                return 1;
            }
            _ => {}
        }
        added += 1;
        if already + added > limits.max_files {
            too_many = true;
            return -1;
        }
        0
    };
    let outcome = index
        .add_all(["*"], IndexAddOption::DEFAULT, Some(&mut check))
        .and_then(|()| index.update_all(["*"], Some(&mut check)));
    if too_many {
        return Err(CheckpointError::TooManyFiles(limits.max_files));
    }
    outcome?;
    // A file that grew over the limit must not keep its older content in the checkpoint.
    for path in &not_stored {
        let _ = index.remove_path(path);
        let _ = index.remove_dir(path, 0);
    }
    let mut not_stored: Vec<String> = not_stored
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    not_stored.sort();
    not_stored.dedup();
    let tree = index.write_tree()?;
    let extras = Extras {
        modes: exact_modes(&index, cwd),
        not_stored,
    };
    Ok((Snapshot { tree, extras }, index))
}

/// The permission bits git would not restore: those of files whose mode is neither 0644 nor
/// 0755 (a private 0600 file must not come back world-readable).
fn exact_modes(index: &git2::Index, cwd: &Path) -> std::collections::BTreeMap<String, u32> {
    let mut modes = std::collections::BTreeMap::new();
    for entry in index.iter() {
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        let Ok(meta) = std::fs::symlink_metadata(cwd.join(&path)) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let bits = meta.permissions().mode() & 0o7777;
        if bits != 0o644 && bits != 0o755 {
            modes.insert(path, bits);
        }
    }
    modes
}
