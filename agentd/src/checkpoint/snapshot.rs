//! Taking a snapshot: the session directory's files (not the ignored ones) into the shadow
//! store's index and a tree. The index keeps each file's stat data, so a second snapshot hashes
//! only what changed since the first.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::{IndexAddOption, Oid, Repository};

use super::{CheckpointError, Extras};
use crate::config::CheckpointConfig;

/// The directory's state: a tree in the shadow store, and what the tree does not say.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The tree.
    pub tree: Oid,
    /// Exact modes and files not stored.
    pub extras: Extras,
}

/// Records the work tree of `repo` (the session directory `cwd`) as a tree.
pub(super) fn take(
    repo: &Repository,
    cwd: &Path,
    limits: &CheckpointConfig,
) -> Result<Snapshot, CheckpointError> {
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
        // The index keeps what was hashed so far; the next snapshot starts from it.
        let _ = index.write();
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
    index.write()?;
    Ok(Snapshot {
        tree,
        extras: Extras {
            modes: exact_modes(&index, cwd),
            not_stored,
        },
    })
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
