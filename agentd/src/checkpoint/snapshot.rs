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
use super::walk::{Found, Kind, Walked};
use super::{CheckpointConfig, CheckpointError, Extras};

/// Git's file modes.
const BLOB: u32 = 0o100644;
const EXECUTABLE: u32 = 0o100755;
const LINK: u32 = 0o120000;
const TREE: u32 = 0o40000;

/// The directory's state: a tree in the shadow store, and what the tree does not say.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// The tree.
    pub(crate) tree: Oid,
    /// Exact modes and files not stored.
    pub(crate) extras: Extras,
}

/// What a snapshot learnt for the stat cache: the files under its prefix it hashed, and those
/// it no longer has. Applied only once the objects it names are on disk.
#[derive(Debug)]
pub(super) struct CacheUpdate {
    changed: Vec<(Vec<u8>, Cached)>,
    removed: Vec<Vec<u8>>,
}

impl CacheUpdate {
    /// Makes `cache` say what this snapshot saw: how many entries changed.
    pub(super) fn apply(self, cache: &mut StatCache) -> usize {
        let count = self.changed.len() + self.removed.len();
        for path in self.removed {
            cache.entries.remove(&path);
        }
        cache.entries.extend(self.changed);
        count
    }
}

/// The tree objects of the last snapshot by directory, with their bytes: a directory whose
/// entries are the same is not hashed again.
pub(super) type TreeCache = std::collections::HashMap<Vec<u8>, (Vec<u8>, Oid)>;

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

    /// Writes `commit` and the objects the snapshot wrote to memory (`written`) to the store
    /// as one pack.
    pub(super) fn persist(
        &self,
        repo: &Repository,
        commit: Oid,
        written: &[Oid],
    ) -> Result<(), CheckpointError> {
        let mut pack = repo.packbuilder()?;
        pack.insert_object(commit, None)?;
        for oid in written {
            pack.insert_object(*oid, None)?;
        }
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

/// Whether `odb` has `oid`, without rescanning its packs on a miss (this process writes them).
fn has(odb: &Odb, oid: Oid) -> bool {
    odb.exists_ext(oid, git2::OdbLookupFlags::NO_REFRESH)
}

/// A file to store: its path in the tree, git mode and blob.
struct Stored<'a> {
    path: &'a [u8],
    mode: u32,
    oid: Oid,
}

/// A snapshot taken: its tree and extras, what it learnt for the stat cache, and the objects
/// it wrote to memory.
pub(super) struct Taken {
    /// The snapshot.
    pub(crate) snapshot: Snapshot,
    /// For the stat cache, once the objects are on disk.
    pub(crate) update: CacheUpdate,
    /// New objects, in memory until persisted.
    pub(crate) written: Vec<Oid>,
}

/// Records the session directory `cwd` (at `prefix` in the work tree whose stat cache is
/// `cache`), as `walked` found it, as a tree of `odb`'s repository. Of the caches only `trees`
/// changes; what the snapshot learnt for the stat cache comes back, to apply once its objects
/// are on disk.
pub(super) fn take(
    odb: &Odb,
    cache: &StatCache,
    trees: &mut TreeCache,
    prefix: &[u8],
    cwd: &Path,
    walked: &Walked,
    limits: &CheckpointConfig,
) -> Result<Taken, CheckpointError> {
    let key = |path: &[u8]| [prefix, path].concat();
    let mut not_stored: Vec<Vec<u8>> = walked.nested.clone();
    let mut stored = Vec::with_capacity(walked.files.len());
    let mut changed = Vec::new();
    let mut removed = Vec::new();
    let mut to_hash = Vec::new();
    let mut modes = BTreeMap::new();
    let mut written = Vec::new();
    // The walk and the cache's entries under the prefix are both sorted: one pass pairs them,
    // and what the cache has beyond the walk is gone.
    let mut cached = cache
        .entries
        .range(prefix.to_vec()..)
        .take_while(|(path, _)| path.starts_with(prefix))
        .map(|(path, entry)| (&path[prefix.len()..], entry))
        .peekable();
    for found in &walked.files {
        let mut known = None;
        while let Some((path, entry)) = cached.peek() {
            match (*path).cmp(found.path.as_slice()) {
                std::cmp::Ordering::Less => removed.push(key(path)),
                std::cmp::Ordering::Equal => known = Some(*entry),
                std::cmp::Ordering::Greater => break,
            }
            cached.next();
            if known.is_some() {
                break;
            }
        }
        if found.kind == Kind::File && found.stat.size > limits.max_file_bytes {
            not_stored.push(found.path.clone());
            if known.is_some() {
                removed.push(key(&found.path));
            }
            continue;
        }
        if found.kind == Kind::File {
            let bits = found.stat.mode & 0o7777;
            if bits != 0o644 && bits != 0o755 {
                modes.insert(String::from_utf8_lossy(&found.path).into_owned(), bits);
            }
        }
        match known.and_then(|entry| cache.still(entry, &found.stat)) {
            Some(oid) => stored.push(Stored {
                path: &found.path,
                mode: mode_of(found),
                oid,
            }),
            None => to_hash.push(found),
        }
    }
    removed.extend(cached.map(|(path, _)| key(path)));
    for (found, hashed) in hash_all(cwd, &to_hash, limits.max_file_bytes) {
        match hashed {
            Hashed::Blob(oid, bytes) => {
                if !has(odb, oid) {
                    odb.write(ObjectType::Blob, &bytes)?;
                    written.push(oid);
                }
                stored.push(Stored {
                    path: &found.path,
                    mode: mode_of(found),
                    oid,
                });
                changed.push((
                    key(&found.path),
                    Cached {
                        stat: found.stat,
                        oid,
                    },
                ));
            }
            Hashed::TooLarge => {
                not_stored.push(found.path.clone());
                removed.push(key(&found.path));
            }
            // Gone since the walk: it is not in the snapshot.
            Hashed::Gone => removed.push(key(&found.path)),
        }
    }
    stored.sort_by(|a, b| a.path.cmp(b.path));
    let tree = write_tree(odb, trees, prefix, &stored, &mut written)?;
    let mut not_stored: Vec<String> = not_stored
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    not_stored.sort();
    not_stored.dedup();
    Ok(Taken {
        snapshot: Snapshot {
            tree,
            extras: Extras { modes, not_stored },
        },
        update: CacheUpdate { changed, removed },
        written,
    })
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

/// Writes the trees of `files` (sorted by path) and returns the top one. A directory whose
/// entries are those of the last snapshot keeps its tree without hashing it again.
fn write_tree(
    odb: &Odb,
    trees: &mut TreeCache,
    prefix: &[u8],
    files: &[Stored],
    written: &mut Vec<Oid>,
) -> Result<Oid, CheckpointError> {
    let entries: Vec<(&[u8], u32, Oid)> = files.iter().map(|f| (f.path, f.mode, f.oid)).collect();
    // Directories are known by their place in the work tree, which sessions share.
    write_level(odb, trees, prefix, &entries, written)
}

fn write_level(
    odb: &Odb,
    trees: &mut TreeCache,
    dir: &[u8],
    entries: &[(&[u8], u32, Oid)],
    written: &mut Vec<Oid>,
) -> Result<Oid, CheckpointError> {
    let mut children: Vec<(Vec<u8>, u32, Oid)> = Vec::new();
    let mut i = 0;
    while let Some(&(path, mode, oid)) = entries.get(i) {
        match path.iter().position(|b| *b == b'/') {
            None => {
                children.push((path.to_vec(), mode, oid));
                i += 1;
            }
            Some(slash) => {
                let name = &path[..slash + 1];
                let end = i + entries[i..]
                    .iter()
                    .take_while(|(p, ..)| p.starts_with(name))
                    .count();
                let below: Vec<(&[u8], u32, Oid)> = entries[i..end]
                    .iter()
                    .map(|(p, m, o)| (&p[slash + 1..], *m, *o))
                    .collect();
                let sub = [dir, name].concat();
                let oid = write_level(odb, trees, &sub, &below, written)?;
                children.push((path[..slash].to_vec(), TREE, oid));
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
    if let Some((cached, oid)) = trees.get(dir)
        && *cached == bytes
        && has(odb, *oid)
    {
        return Ok(*oid);
    }
    let oid = Oid::hash_object(ObjectType::Tree, &bytes)?;
    if !has(odb, oid) {
        odb.write(ObjectType::Tree, &bytes)?;
        written.push(oid);
    }
    trees.insert(dir.to_vec(), (bytes, oid));
    Ok(oid)
}
