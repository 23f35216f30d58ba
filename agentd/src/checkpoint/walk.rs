//! The files a snapshot looks at: a parallel walk of the session directory that honours
//! `.gitignore` (in the directory and its parents up to the repository), `.git/info/exclude`
//! and the user's global excludes, as `git status` does; it never enters a `.git` and reports a
//! directory that holds a repository of its own instead of entering it. Each file comes with
//! its stat data, which is all a snapshot needs to tell it unchanged.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ignore::{WalkBuilder, WalkState};

/// What kind of entry a snapshot stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A symbolic link (its target is stored).
    Link,
}

/// One file found, with the stat data that says whether it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The path relative to the walked directory, as bytes.
    pub path: Vec<u8>,
    /// File or link.
    pub kind: Kind,
    /// Stat data.
    pub stat: Stat,
}

/// The stat data git compares to tell a file unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Modification time, seconds and nanoseconds.
    pub mtime: (i64, u32),
    /// Status change time, seconds and nanoseconds.
    pub ctime: (i64, u32),
    /// Size in bytes.
    pub size: u64,
    /// Inode number.
    pub ino: u64,
    /// Mode bits (type and permissions).
    pub mode: u32,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Stat {
        Stat {
            mtime: (meta.mtime(), meta.mtime_nsec() as u32),
            ctime: (meta.ctime(), meta.ctime_nsec() as u32),
            size: meta.size(),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    /// Files and links, sorted by path.
    pub files: Vec<Found>,
    /// Directories holding a repository of their own (not entered), relative paths.
    pub nested: Vec<Vec<u8>>,
}

/// The walk found more than `max_files` files.
#[derive(Debug)]
pub struct TooMany;

/// Walks `dir` with two threads; stops with [`TooMany`] past `max_files` files.
pub fn walk(dir: &Path, max_files: usize) -> Result<Walked, TooMany> {
    let found = Mutex::new(Walked::default());
    let count = AtomicUsize::new(0);
    let over = AtomicBool::new(false);
    let walker = WalkBuilder::new(dir)
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .threads(2)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build_parallel();
    walker.run(|| {
        Box::new(|entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            let Ok(relative) = entry.path().strip_prefix(dir) else {
                return WalkState::Continue;
            };
            if relative.as_os_str().is_empty() {
                return WalkState::Continue;
            }
            let Some(kind) = entry.file_type() else {
                return WalkState::Continue;
            };
            let path = relative.as_os_str().as_bytes().to_vec();
            if kind.is_dir() {
                // A repository of its own (a `.git`, or a `HEAD` git would read) is the user's:
                // listed, not stored, so that a rewind never writes into one.
                if [".git", "HEAD"]
                    .iter()
                    .any(|name| std::fs::symlink_metadata(entry.path().join(name)).is_ok())
                {
                    lock(&found).nested.push(path);
                    return WalkState::Skip;
                }
                return WalkState::Continue;
            }
            let kind = if kind.is_symlink() {
                Kind::Link
            } else if kind.is_file() {
                Kind::File
            } else {
                // FIFOs, sockets and devices hold no content to keep.
                return WalkState::Continue;
            };
            let Ok(meta) = entry.metadata() else {
                return WalkState::Continue;
            };
            if count.fetch_add(1, Ordering::Relaxed) >= max_files {
                over.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            lock(&found).files.push(Found {
                path,
                kind,
                stat: Stat::of(&meta),
            });
            WalkState::Continue
        })
    });
    if over.load(Ordering::Relaxed) {
        return Err(TooMany);
    }
    let mut walked = found.into_inner().unwrap_or_else(|e| e.into_inner());
    walked.files.sort_by(|a, b| a.path.cmp(&b.path));
    walked.nested.sort();
    Ok(walked)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_files_git_directories_and_nested_repositories_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for (path, text) in [
            (".gitignore", "*.log\nbuild/\n"),
            ("a.txt", "a"),
            ("b.log", "b"),
            ("build/out", "o"),
            ("src/main.rs", "m"),
            (".git/config", "c"),
            ("vendor/lib/.git/HEAD", "h"),
            ("vendor/lib/x.rs", "x"),
            ("bare/HEAD", "ref: refs/heads/main"),
            ("bare/config", "[core]"),
        ] {
            std::fs::create_dir_all(p.join(path).parent().unwrap()).unwrap();
            std::fs::write(p.join(path), text).unwrap();
        }
        std::os::unix::fs::symlink("a.txt", p.join("link")).unwrap();
        let walked = walk(p, 100).unwrap();
        let paths: Vec<String> = walked
            .files
            .iter()
            .map(|f| String::from_utf8_lossy(&f.path).into_owned())
            .collect();
        assert_eq!(paths, [".gitignore", "a.txt", "link", "src/main.rs"]);
        assert_eq!(walked.files[2].kind, Kind::Link);
        assert_eq!(walked.nested, [b"bare".to_vec(), b"vendor/lib".to_vec()]);
        assert!(walk(p, 3).is_err());
    }
}
