//! Taking a snapshot: the session directory's files (not the ignored ones) as a tree in the
//! shadow store. Its cost is about what `git status` costs: the walk reads stat data only,
//! and only files whose stat data changed since the store's last snapshot (or that are racily
//! clean) are read and hashed, on two threads.
//!
//! New objects go to memory first ([`Staging`]) and reach the disk as one pack per checkpoint:
//! ten thousand small files are one file in the store, not ten thousand, and a snapshot that is
//! only compared with (a diff or rewind against the directory as it is) writes nothing.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use git2::{Mempack, ObjectType, Odb, Oid, Repository};

use super::stat_cache::{Cached, StatCache};
use super::walk::{self, Found, Kind};
use super::{CheckpointConfig, CheckpointError, Extras};

/// Git's file modes.
const BLOB: u32 = 0o100644;
const EXECUTABLE: u32 = 0o100755;
const LINK: u32 = 0o120000;
const TREE: u32 = 0o40000;

/// The directory's state: a tree in the shadow store, and what the tree does not say.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The tree.
    pub tree: Oid,
    /// Exact modes and files not stored.
    pub extras: Extras,
}

/// What a snapshot learnt for the stat cache: every file under `prefix` now. Applied only once
/// the objects it names are on disk.
#[derive(Debug)]
pub(super) struct CacheUpdate {
    prefix: Vec<u8>,
    entries: Vec<(Vec<u8>, Cached)>,
}

impl CacheUpdate {
    /// Makes `cache` say what this snapshot saw.
    pub(super) fn apply(self, cache: &mut StatCache) {
        let under: Vec<Vec<u8>> = cache
            .entries
            .range(self.prefix.clone()..)
            .take_while(|(path, _)| path.starts_with(&self.prefix))
            .map(|(path, _)| path.clone())
            .collect();
        for path in under {
            cache.entries.remove(&path);
        }
        cache.entries.extend(self.entries);
    }
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
            Some(ObjectType::Tree) => insert_new(repo, disk, pack, entry.id())?,
            Some(ObjectType::Blob) if !disk.exists(entry.id()) => {
                pack.insert_object(entry.id(), None)?
            }
            _ => {}
        }
    }
    Ok(())
}

/// A file to store: its path in the tree, git mode and blob.
struct Stored {
    path: Vec<u8>,
    mode: u32,
    oid: Oid,
}

/// Records the session directory `cwd` (at `prefix` in the work tree whose stat cache is
/// `cache`) as a tree of `odb`'s repository. The cache is not changed: what the snapshot
/// learnt comes back as a [`CacheUpdate`], to apply once its objects are on disk.
pub(super) fn take(
    odb: &Odb,
    cache: &StatCache,
    prefix: &[u8],
    cwd: &Path,
    limits: &CheckpointConfig,
) -> Result<(Snapshot, CacheUpdate), CheckpointError> {
    let walked = walk::walk(cwd, limits.max_files)
        .map_err(|_| CheckpointError::TooManyFiles(limits.max_files))?;
    let key = |path: &[u8]| [prefix, path].concat();
    let mut not_stored: Vec<Vec<u8>> = walked.nested.clone();
    let mut stored = Vec::with_capacity(walked.files.len());
    let mut update = Vec::with_capacity(walked.files.len());
    let mut to_hash = Vec::new();
    let mut modes = BTreeMap::new();
    for found in &walked.files {
        if found.kind == Kind::File && found.stat.size > limits.max_file_bytes {
            not_stored.push(found.path.clone());
            continue;
        }
        if found.kind == Kind::File {
            let bits = found.stat.mode & 0o7777;
            if bits != 0o644 && bits != 0o755 {
                modes.insert(String::from_utf8_lossy(&found.path).into_owned(), bits);
            }
        }
        match cache.unchanged(&key(&found.path), &found.stat) {
            Some(oid) => {
                stored.push(Stored {
                    path: found.path.clone(),
                    mode: mode_of(found),
                    oid,
                });
                update.push((
                    key(&found.path),
                    Cached {
                        stat: found.stat,
                        oid,
                    },
                ));
            }
            None => to_hash.push(found),
        }
    }
    for (found, hashed) in hash_all(cwd, &to_hash, limits.max_file_bytes) {
        match hashed {
            Hashed::Blob(oid, bytes) => {
                if !odb.exists(oid) {
                    odb.write(ObjectType::Blob, &bytes)?;
                }
                stored.push(Stored {
                    path: found.path.clone(),
                    mode: mode_of(found),
                    oid,
                });
                update.push((
                    key(&found.path),
                    Cached {
                        stat: found.stat,
                        oid,
                    },
                ));
            }
            Hashed::TooLarge => not_stored.push(found.path.clone()),
            // Gone since the walk: it is not in the snapshot.
            Hashed::Gone => {}
        }
    }
    stored.sort_by(|a, b| a.path.cmp(&b.path));
    let tree = write_tree(odb, &stored)?;
    let mut not_stored: Vec<String> = not_stored
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    not_stored.sort();
    not_stored.dedup();
    let snapshot = Snapshot {
        tree,
        extras: Extras { modes, not_stored },
    };
    let update = CacheUpdate {
        prefix: prefix.to_vec(),
        entries: update,
    };
    Ok((snapshot, update))
}

fn mode_of(found: &Found) -> u32 {
    match found.kind {
        Kind::Link => LINK,
        Kind::File if found.stat.mode & 0o100 != 0 => EXECUTABLE,
        Kind::File => BLOB,
    }
}

/// A file's content, hashed.
enum Hashed {
    Blob(Oid, Vec<u8>),
    TooLarge,
    Gone,
}

/// Reads and hashes `files` (relative to `cwd`) on two threads.
fn hash_all<'a>(cwd: &Path, files: &[&'a Found], max_bytes: u64) -> Vec<(&'a Found, Hashed)> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(files.len()));
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(found) = files.get(i) else { break };
            let hashed = hash_one(cwd, found, max_bytes);
            done.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((*found, hashed));
        }
    };
    if files.len() > 64 {
        std::thread::scope(|scope| {
            scope.spawn(work);
            work();
        });
    } else {
        work();
    }
    done.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn hash_one(cwd: &Path, found: &Found, max_bytes: u64) -> Hashed {
    use std::os::unix::ffi::OsStrExt;
    let path = cwd.join(std::ffi::OsStr::from_bytes(&found.path));
    let bytes = match found.kind {
        Kind::Link => match std::fs::read_link(&path) {
            Ok(target) => target.as_os_str().as_bytes().to_vec(),
            Err(_) => return Hashed::Gone,
        },
        Kind::File => {
            // Opened without blocking: a file swapped for a FIFO since the walk reads empty.
            let Ok(file) = crate::regular_file::open_listed(&path) else {
                return Hashed::Gone;
            };
            let mut bytes = Vec::new();
            if file.take(max_bytes + 1).read_to_end(&mut bytes).is_err() {
                return Hashed::Gone;
            }
            if bytes.len() as u64 > max_bytes {
                return Hashed::TooLarge;
            }
            bytes
        }
    };
    match Oid::hash_object(ObjectType::Blob, &bytes) {
        Ok(oid) => Hashed::Blob(oid, bytes),
        Err(_) => Hashed::Gone,
    }
}

/// Writes the trees of `files` (sorted by path) and returns the top one.
fn write_tree(odb: &Odb, files: &[Stored]) -> Result<Oid, CheckpointError> {
    let entries: Vec<(&[u8], u32, Oid)> = files
        .iter()
        .map(|f| (f.path.as_slice(), f.mode, f.oid))
        .collect();
    write_level(odb, &entries)
}

fn write_level(odb: &Odb, entries: &[(&[u8], u32, Oid)]) -> Result<Oid, CheckpointError> {
    let mut children: Vec<(Vec<u8>, u32, Oid)> = Vec::new();
    let mut i = 0;
    while let Some(&(path, mode, oid)) = entries.get(i) {
        match path.iter().position(|b| *b == b'/') {
            None => {
                children.push((path.to_vec(), mode, oid));
                i += 1;
            }
            Some(slash) => {
                let dir = &path[..slash + 1];
                let end = i + entries[i..]
                    .iter()
                    .take_while(|(p, ..)| p.starts_with(dir))
                    .count();
                let below: Vec<(&[u8], u32, Oid)> = entries[i..end]
                    .iter()
                    .map(|(p, m, o)| (&p[slash + 1..], *m, *o))
                    .collect();
                children.push((path[..slash].to_vec(), TREE, write_level(odb, &below)?));
                i = end;
            }
        }
    }
    // Git orders a tree's entries by name, a directory's as if it ended with `/`.
    children.sort_by(|a, b| {
        let name = |(n, m, _): &(Vec<u8>, u32, Oid)| {
            let mut n = n.clone();
            if *m == TREE {
                n.push(b'/');
            }
            n
        };
        name(a).cmp(&name(b))
    });
    let mut bytes = Vec::with_capacity(children.len() * 40);
    for (name, mode, oid) in &children {
        bytes.extend_from_slice(format!("{mode:o} ").as_bytes());
        bytes.extend_from_slice(name);
        bytes.push(0);
        bytes.extend_from_slice(oid.as_bytes());
    }
    let oid = Oid::hash_object(ObjectType::Tree, &bytes)?;
    if !odb.exists(oid) {
        odb.write(ObjectType::Tree, &bytes)?;
    }
    Ok(oid)
}
