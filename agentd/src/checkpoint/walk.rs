//! The files a snapshot looks at: a walk of the session directory that honours `.gitignore`
//! (in the directory and its parents up to the repository), `.git/info/exclude` and the user's
//! global excludes, as `git status` does; it never enters a `.git` and reports a directory that
//! holds a repository of its own instead of entering it. Each file comes with its stat data,
//! read relative to its directory (no path is looked up from the root), which is all a
//! snapshot needs to tell it unchanged.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::watch::{Changes, Watch, join};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// What kind of entry a snapshot stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A symbolic link (its target is stored).
    Link,
}

/// One file found, with the stat data that says whether it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// The path relative to the walked directory, as bytes.
    pub(crate) path: Vec<u8>,
    /// File or link.
    pub(crate) kind: Kind,
    /// Stat data.
    pub(crate) stat: Stat,
}

/// The stat data git compares to tell a file unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Stat {
    /// Modification time, seconds and nanoseconds.
    pub(crate) mtime: (i64, u32),
    /// Status change time, seconds and nanoseconds.
    pub(crate) ctime: (i64, u32),
    /// Size in bytes.
    pub(crate) size: u64,
    /// Inode number.
    pub(crate) ino: u64,
    /// Mode bits (type and permissions).
    pub(crate) mode: u32,
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
#[derive(Debug, Default, Clone)]
pub(crate) struct Walked {
    /// Files and links, sorted by path.
    pub(crate) files: Vec<Found>,
    /// Directories holding a repository of their own (not entered), relative paths.
    pub(crate) nested: Vec<Vec<u8>>,
    /// Every directory entered, relative paths (the walked one is empty).
    pub(crate) dirs: HashSet<Vec<u8>>,
}

/// The walk found more than `max_files` files.
#[derive(Debug)]
pub(crate) struct TooMany;

/// Walks `dir`; stops with [`TooMany`] past `max_files` files. With `watch`, every directory
/// entered is watched first, so that a later [`rewalk`] needs to look only where things
/// changed.
pub(crate) fn walk(
    dir: &Path,
    max_files: usize,
    watch: Option<&mut Watch>,
) -> Result<Walked, TooMany> {
    let mut walker = Walker {
        ignores: outer_ignores(dir),
        found: Walked::default(),
        max_files,
        known: HashSet::new(),
        watch,
    };
    walker.visit(dir, &[])?;
    Ok(walker.finish())
}

/// `previous` (a walk of `dir` made with a watch) brought up to date with what the watch saw:
/// only the directories that changed are read again, new ones whole.
pub(crate) fn rewalk(
    dir: &Path,
    previous: &Walked,
    changes: &Changes,
    max_files: usize,
    watch: &mut Watch,
) -> Result<Walked, TooMany> {
    if changes.everything {
        *watch = match Watch::new() {
            Some(fresh) => fresh,
            None => return walk(dir, max_files, None),
        };
        return walk(dir, max_files, Some(watch));
    }
    let parent_of = |path: &[u8]| -> Vec<u8> {
        path.iter()
            .rposition(|b| *b == b'/')
            .map_or(Vec::new(), |at| path[..at].to_vec())
    };
    let dirty: Vec<&Vec<u8>> = changes
        .dirty
        .iter()
        .filter(|d| previous.dirs.contains(*d))
        .collect();
    let mut walker = Walker {
        ignores: Vec::new(),
        found: Walked::default(),
        max_files,
        known: previous.dirs.clone(),
        watch: Some(watch),
    };
    for relative in &dirty {
        walker.ignores = ignores_at(dir, relative);
        walker.visit(&join(dir, relative), relative)?;
    }
    // What a changed directory no longer holds is gone, with all below it.
    let seen: HashSet<Vec<u8>> = walker
        .found
        .files
        .iter()
        .map(|f| f.path.clone())
        .chain(walker.found.dirs.iter().cloned())
        .chain(walker.found.nested.iter().cloned())
        .collect();
    let changed: HashSet<&Vec<u8>> = dirty.iter().copied().collect();
    let gone: Vec<&Vec<u8>> = previous
        .dirs
        .iter()
        .chain(&previous.nested)
        .filter(|d| !d.is_empty() && changed.contains(&parent_of(d)) && !seen.contains(*d))
        .collect();
    let under_gone = |path: &[u8]| {
        gone.iter()
            .any(|g| path.starts_with(g) && path.get(g.len()) == Some(&b'/'))
    };
    let kept = |path: &Vec<u8>| !changed.contains(&parent_of(path)) && !under_gone(path);
    let mut found = walker.finish();
    found
        .files
        .extend(previous.files.iter().filter(|f| kept(&f.path)).cloned());
    found
        .nested
        .extend(previous.nested.iter().filter(|n| kept(n)).cloned());
    found.dirs.extend(
        previous
            .dirs
            .iter()
            .filter(|d| d.is_empty() || (!gone.contains(d) && !under_gone(d)))
            .cloned(),
    );
    if found.files.len() > max_files {
        return Err(TooMany);
    }
    found.files.sort_by(|a, b| a.path.cmp(&b.path));
    found.nested.sort();
    found.nested.dedup();
    Ok(found)
}

struct Walker<'w> {
    /// The ignore files in force, outermost first.
    ignores: Vec<Gitignore>,
    found: Walked,
    max_files: usize,
    /// Directories already known (a rewalk): not entered again unless changed.
    known: HashSet<Vec<u8>>,
    watch: Option<&'w mut Watch>,
}

impl Walker<'_> {
    fn finish(self) -> Walked {
        let mut walked = self.found;
        walked.files.sort_by(|a, b| a.path.cmp(&b.path));
        walked.nested.sort();
        walked
    }

    fn visit(&mut self, dir: &Path, relative: &[u8]) -> Result<(), TooMany> {
        if let Some(watch) = self.watch.as_deref_mut() {
            watch.add(dir, relative);
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        self.found.dirs.insert(relative.to_vec());
        let own = dir.join(".gitignore");
        let pushed = own.is_file() && {
            self.ignores.push(Gitignore::new(&own).0);
            true
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if self.ignored(&path, kind.is_dir()) {
                continue;
            }
            let mut child = relative.to_vec();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(name.as_bytes());
            if kind.is_dir() {
                // A repository of its own (a `.git`, or a `HEAD` git would read) is the
                // user's: listed, not stored, so that a rewind never writes into one.
                if [".git", "HEAD"]
                    .iter()
                    .any(|n| std::fs::symlink_metadata(path.join(n)).is_ok())
                {
                    self.found.nested.push(child);
                } else if self.known.contains(&child) {
                    // Known and unchanged: its files are kept as they were.
                    self.found.dirs.insert(child);
                } else {
                    self.visit(&path, &child)?;
                }
                continue;
            }
            let kind = if kind.is_symlink() {
                Kind::Link
            } else if kind.is_file() {
                Kind::File
            } else {
                // FIFOs, sockets and devices hold no content to keep.
                continue;
            };
            // Read relative to the directory: the kernel looks up one name, not the path.
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if self.found.files.len() >= self.max_files {
                return Err(TooMany);
            }
            self.found.files.push(Found {
                path: child,
                kind,
                stat: Stat::of(&meta),
            });
        }
        if pushed {
            self.ignores.pop();
        }
        Ok(())
    }

    /// Whether the innermost ignore file with a say on `path` ignores it.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for ignore in self.ignores.iter().rev() {
            match ignore.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }
}

/// The ignore files in force in `relative` below `root` (its own `.gitignore` excepted: the
/// walk reads it when it enters).
fn ignores_at(root: &Path, relative: &[u8]) -> Vec<Gitignore> {
    let mut ignores = outer_ignores(root);
    let mut dir = root.to_path_buf();
    let parts: Vec<&[u8]> = if relative.is_empty() {
        Vec::new()
    } else {
        relative.split(|b| *b == b'/').collect()
    };
    for (i, part) in std::iter::once(&b""[..])
        .chain(parts.iter().copied())
        .enumerate()
    {
        if i > 0 {
            dir.push(std::ffi::OsStr::from_bytes(part));
        }
        // The last one is the directory itself.
        if i == parts.len() {
            break;
        }
        let file = dir.join(".gitignore");
        if file.is_file() {
            ignores.push(Gitignore::new(&file).0);
        }
    }
    ignores
}

/// The ignore files that apply to `dir` from outside it: the global excludes, the repository's
/// `info/exclude`, and the `.gitignore` of every directory from the repository's top down to
/// `dir`'s parent.
fn outer_ignores(dir: &Path) -> Vec<Gitignore> {
    let mut ignores = vec![Gitignore::global().0];
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let top = dir
        .ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok());
    if let Some(top) = top {
        let exclude = top.join(".git/info/exclude");
        if exclude.is_file() {
            let mut builder = GitignoreBuilder::new(top);
            builder.add(&exclude);
            if let Ok(ignore) = builder.build() {
                ignores.push(ignore);
            }
        }
        let mut parents: Vec<&Path> = dir
            .ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(top))
            .collect();
        parents.reverse();
        for parent in parents {
            let file = parent.join(".gitignore");
            if file.is_file() {
                ignores.push(Gitignore::new(&file).0);
            }
        }
    }
    ignores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewalk_looks_again_only_where_the_watch_saw_changes_and_misses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for path in ["a/x", "a/y", "b/z", "c/d/w", "gone/g"] {
            std::fs::create_dir_all(p.join(path).parent().unwrap()).unwrap();
            std::fs::write(p.join(path), "1").unwrap();
        }
        let mut watch = Watch::new().unwrap();
        let before = walk(p, 100, Some(&mut watch)).unwrap();
        // Changes: a new file, a removed one, a changed one, a new directory tree, a removed
        // directory, a renamed one.
        std::fs::write(p.join("a/new"), "2").unwrap();
        std::fs::remove_file(p.join("a/y")).unwrap();
        std::fs::write(p.join("b/z"), "changed").unwrap();
        std::fs::create_dir_all(p.join("fresh/deep")).unwrap();
        std::fs::write(p.join("fresh/deep/f"), "3").unwrap();
        std::fs::remove_dir_all(p.join("gone")).unwrap();
        std::fs::rename(p.join("c"), p.join("moved")).unwrap();
        let changes = watch.changes();
        assert!(!changes.everything);
        let after = rewalk(p, &before, &changes, 100, &mut watch).unwrap();
        let full = walk(p, 100, None).unwrap();
        let paths = |w: &Walked| -> Vec<String> {
            w.files
                .iter()
                .map(|f| String::from_utf8_lossy(&f.path).into_owned())
                .collect()
        };
        assert_eq!(paths(&after), paths(&full));
        assert_eq!(
            paths(&after),
            ["a/new", "a/x", "b/z", "fresh/deep/f", "moved/d/w"]
        );
        let z = |w: &Walked| w.files.iter().find(|f| f.path == b"b/z").unwrap().stat;
        assert_eq!(z(&after), z(&full));
        // The new and the renamed directories are watched too.
        std::fs::write(p.join("fresh/deep/g"), "4").unwrap();
        std::fs::write(p.join("moved/d/v"), "5").unwrap();
        let changes = watch.changes();
        let again = rewalk(p, &after, &changes, 100, &mut watch).unwrap();
        assert_eq!(paths(&again), paths(&walk(p, 100, None).unwrap()));
    }

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
        let walked = walk(p, 100, None).unwrap();
        let paths: Vec<String> = walked
            .files
            .iter()
            .map(|f| String::from_utf8_lossy(&f.path).into_owned())
            .collect();
        assert_eq!(paths, [".gitignore", "a.txt", "link", "src/main.rs"]);
        assert_eq!(walked.files[2].kind, Kind::Link);
        assert_eq!(walked.nested, [b"bare".to_vec(), b"vendor/lib".to_vec()]);
        assert!(walk(p, 3, None).is_err());
    }
}
